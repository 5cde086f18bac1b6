"""Claude Code (Anthropic ``claude`` CLI) codec: ``~/.claude/projects/<key>/<id>.jsonl``."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("claude-code",),
    description="Claude Code (Anthropic claude CLI): one JSONL transcript per session",
    package=__name__,
    homes=(HomeSpec(".claude", "Claude Code", env=("CLAUDE_CONFIG_DIR",)),),
    capabilities=Capabilities(subagents=True, tool_status=True),
    resume=("claude", "--resume", "{session}"),
)
