"""OpenCode (``opencode`` CLI, npm ``opencode-ai``) codec: ``<data>/opencode.db`` and the
legacy ``<data>/storage/`` JSON files, written as an ``opencode export`` document.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("opencode-ai", "sst-opencode"),
    description="OpenCode: opencode.db (session/message/part rows), legacy storage/ JSON",
    package=__name__,
    homes=(HomeSpec(".local/share/opencode", "OpenCode"),),
    capabilities=Capabilities(subagents=True, reasoning=True),
    resume=("opencode", "--session", "{session}"),
)
