"""Cursor CLI (``cursor-agent`` / ``agent``) codec: AgentKv ``store.db`` chat stores."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("cursor-agent", "cursor-cli"),
    description="Cursor CLI (cursor-agent): AgentKv store.db under ~/.cursor/chats",
    package=__name__,
    homes=(HomeSpec(".cursor", "Cursor CLI", env=("CURSOR_CONFIG_DIR",)),),
    capabilities=Capabilities(reasoning=True, tool_status=True),
    resume=("cursor-agent", "--resume", "{session}"),
)
