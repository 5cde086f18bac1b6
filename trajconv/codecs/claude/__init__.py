"""Claude Code (Anthropic ``claude`` CLI) codec: ``~/.claude/projects/<key>/<id>.jsonl``.

Format facts and sources: ``codecs/claude/README.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    name="claude",
    aliases=("claude-code",),
    description="Claude Code (Anthropic claude CLI): one JSONL transcript per session",
    package=__name__,
    homes=(HomeSpec(".claude", "Claude Code", env=("CLAUDE_CONFIG_DIR",)),),
    capabilities=Capabilities(subagents=True, tool_status=True),
)
