"""Kilo Code CLI (``kilo``, npm ``@kilocode/cli``) codec: ``$XDG_DATA_HOME/kilo/kilo.db``, an
OpenCode fork's database, written as a ``kilo export`` document installed with ``kilo import``.

What it shares with OpenCode is read and written by ``trajconv.codecs.opencode_lineage``.
"""

from trajconv.codecs.base import Capabilities, HomeSpec, LazyCodec, WriteOption

CODEC = LazyCodec(
    aliases=("kilocode", "kilo-code", "kilocode-cli"),
    description="Kilo Code CLI: kilo.db (OpenCode's session/message/part rows), kilo export JSON",
    package=__name__,
    homes=(HomeSpec(".local/share/kilo", "Kilo Code CLI"),),
    capabilities=Capabilities(subagents=True, reasoning=True, exit_code=True),
    write_options=(
        WriteOption("agent", "the Kilo agent (and mode) the written messages name", default="code"),
    ),
    resume=("kilo", "--session", "{session}"),
)
