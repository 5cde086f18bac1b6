"""Gemini CLI codec: ``~/.gemini/tmp/<project>/chats/session-*.jsonl``."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("gemini-cli",),
    description="Gemini CLI: chats/session-*.jsonl per project under ~/.gemini/tmp",
    package=__name__,
    homes=(HomeSpec(".gemini", "Gemini CLI"),),
    capabilities=Capabilities(reasoning=True, tool_status=True),
    resume=("gemini", "--resume", "{session}"),
)
