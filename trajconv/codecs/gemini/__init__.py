"""Gemini CLI codec: ``~/.gemini/tmp/<project>/chats/session-*.jsonl``.

Format facts and sources: the codec's README.md beside this file (what it reads, what it
cannot carry, and where each fact comes from).
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    name="gemini",
    aliases=("gemini-cli",),
    description="Gemini CLI: chats/session-*.jsonl per project under ~/.gemini/tmp",
    package=__name__,
    homes=(HomeSpec(".gemini", "Gemini CLI"),),
    capabilities=Capabilities(reasoning=True, tool_status=True),
)
