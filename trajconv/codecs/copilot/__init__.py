"""GitHub Copilot CLI codec: ``$COPILOT_HOME/session-state/<id>/events.jsonl`` + ``workspace.yaml``.

Format facts and sources: ``codecs/copilot/README.md``; the codec's own
README.md beside this file states its input contract and what it cannot carry.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    name="copilot",
    aliases=("copilot-cli", "github-copilot"),
    description="GitHub Copilot CLI: session-state/<id>/events.jsonl + workspace.yaml",
    package=__name__,
    homes=(HomeSpec(".copilot", "GitHub Copilot CLI", env=("COPILOT_HOME",)),),
    capabilities=Capabilities(reasoning=True, tool_status=True, exit_code=True),
)
