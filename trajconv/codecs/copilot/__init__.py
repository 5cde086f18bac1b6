"""GitHub Copilot CLI codec: ``$COPILOT_HOME/session-state/<id>/events.jsonl`` and
``workspace.yaml``.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("copilot-cli", "github-copilot"),
    description="GitHub Copilot CLI: session-state/<id>/events.jsonl + workspace.yaml",
    package=__name__,
    homes=(HomeSpec(".copilot", "GitHub Copilot CLI", env=("COPILOT_HOME",)),),
    capabilities=Capabilities(reasoning=True, tool_status=True, exit_code=True),
    resume=("copilot", "--resume={session}"),
)
