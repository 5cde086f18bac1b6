"""Claude Code (Anthropic ``claude`` CLI) codec: ``~/.claude/projects/<key>/<id>.jsonl``.

Format facts and sources: ``codecs/claude/README.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from trajconv.codecs.base import Capabilities, LazyCodec

CODEC = LazyCodec(
    name="claude",
    aliases=("claude-code",),
    description="Claude Code (Anthropic claude CLI): one JSONL transcript per session",
    package=__name__,
    capabilities=Capabilities(subagents=True),
)
