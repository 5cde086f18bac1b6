"""ATIF (Agent Trajectory Interchange Format) codec: one ``trajectory.json`` document.

ATIF is the exchange format of agent evaluation frameworks (Harbor writes one for every
run), not a harness's live store: nothing resumes from it, so its exports have no
``prepare.py`` and it has no home to discover. The codec's README.md beside this file
states what it reads and writes, what it cannot carry, and the sources of its format facts.
"""

from trajconv.codecs.base import Capabilities, LazyCodec

CODEC = LazyCodec(
    name="atif",
    aliases=("harbor",),
    description="ATIF trajectory (Harbor and other evaluation frameworks): trajectory.json",
    package=__name__,
    can_discover=False,
    capabilities=Capabilities(resumable=False),
)
