"""OpenHands CLI codec: ``~/.openhands/conversations/<hex id>/events/event-*.json``."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("openhands-cli",),
    description=(
        "OpenHands CLI: conversations/<id>/events/event-*.json (one SDK event a file) "
        "under ~/.openhands"
    ),
    package=__name__,
    homes=(HomeSpec(".openhands", "OpenHands"),),
    capabilities=Capabilities(subagents=True, reasoning=True, tool_status=True, exit_code=True),
    resume=("openhands", "--resume", "{session}"),
)
