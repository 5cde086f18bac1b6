"""Mistral Vibe (``vibe`` CLI, PyPI ``mistral-vibe`` 3.x) codec: the unified session store
``~/.vibe/logs/session/unified/<uuid>/`` (``CURRENT``, ``meta.json``, ``generations/<g>/``,
a hash-chained ``journal/`` and content-addressed ``chunks/``).
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec

CODEC = LazyCodec(
    aliases=("mistral-vibe",),
    description="Mistral Vibe: logs/session/unified/<uuid>/ (a unified session store)",
    package=__name__,
    homes=(HomeSpec(".vibe", "Mistral Vibe", env=("VIBE_HOME",)),),
    capabilities=Capabilities(
        subagents=False, reasoning=False, tool_status=True, exit_code=True, images=False
    ),
    resume=("vibe", "--resume", "{session}"),
)
