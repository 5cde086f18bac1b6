"""Grok Build (xAI ``grok`` CLI) codec: ``$GROK_HOME/sessions/<encoded cwd>/<id>/``.

Format facts and sources: ``codecs/grok/README.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    name="grok",
    aliases=("grok-build", "xai"),
    description="Grok Build (xAI grok CLI): updates.jsonl + summary.json per session",
    package=__name__,
    homes=(HomeSpec(".grok", "Grok Build", env=("GROK_HOME",)),),
    capabilities=Capabilities(subagents=True, reasoning=True, tool_status=True, exit_code=True),
)
