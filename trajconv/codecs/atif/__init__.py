"""ATIF (Agent Trajectory Interchange Format) codec: one ``trajectory.json`` document.

ATIF is the exchange format of agent evaluation frameworks (Harbor writes one for every
run), not a harness's live store: nothing resumes from it, so its exports have no
``prepare.py`` and it has no home to discover. The codec's README.md beside this file
states what it reads and writes, what it cannot carry, and the sources of its format facts.
"""

from trajconv.codecs.base import Capabilities, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("harbor",),
    description="ATIF trajectory (Harbor and other evaluation frameworks): trajectory.json",
    package=__name__,
    write_options=(WriteOption("version", "the ATIF version written, 1.0 to 1.8 (default 1.7)"),),
    capabilities=Capabilities(
        subagents=True, reasoning=True, exit_code=True, images=True, resumable=False
    ),
    can_discover=False,
)
