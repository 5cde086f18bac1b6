"""Grok Build (xAI ``grok`` CLI) codec: ``$GROK_HOME/sessions/<encoded cwd>/<id>/``."""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("grok-build", "xai"),
    description="Grok Build (xAI grok CLI): updates.jsonl + summary.json per session",
    package=__name__,
    homes=(HomeSpec(".grok", "Grok Build", env=("GROK_HOME",)),),
    capabilities=Capabilities(subagents=True, reasoning=True, tool_status=True, exit_code=True),
    resume=("grok", "--resume", "{session}"),
)
