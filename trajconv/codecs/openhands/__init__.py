"""OpenHands CLI codec: ``~/.openhands/conversations/<hex id>/events/event-*.json``.

Format facts and sources: the codec's README.md beside this file.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    name="openhands",
    aliases=("openhands-cli",),
    description=(
        "OpenHands CLI: conversations/<id>/events/event-*.json (one SDK event a file) "
        "under ~/.openhands"
    ),
    package=__name__,
    homes=(HomeSpec(".openhands", "OpenHands"),),
    capabilities=Capabilities(subagents=True, reasoning=True, tool_status=True, exit_code=True),
)
