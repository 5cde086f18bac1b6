"""What the codecs of OpenCode's lineage share: OpenCode (``codecs/opencode``) and its fork
Kilo Code CLI (``codecs/kilo``) keep sessions in the same SQLite tables (``session`` /
``message`` / ``part``), print the same ``export`` document and ``import`` it again.

Not a codec (no entry point): ``store`` reads the stores, ``project`` lifts one session into a
Snapshot, ``lower`` writes the export document, ``prepare_import.py`` is the prepare script
that installs it with the CLI's own ``import``. Each codec passes its :class:`Flavour`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the codecs of the lineage: their messages name ``provider/model`` as the CLIs do, their tool
#: results carry no error flag the model sees and their exit codes sit in ``metadata.exit``
HARNESSES = ("opencode", "kilo")


@dataclass(frozen=True)
class Flavour:
    """The names one harness of the lineage gives the shared format. The file and folder
    names follow from the harness's name, as both CLIs name them (``kilo``: ``kilo.db``,
    ``$KILO_DB``, ``kilo-export.json``)."""

    harness: str
    """The codec name: ``Source.harness`` and the prefix of record ids (``opencode:<part>``)."""
    label: str
    """The harness's own name, for messages (``OpenCode``)."""
    format_version: str
    """The CLI version whose document shape the writer follows."""
    agent: str
    """The agent (and mode) a written message names: the CLI's default agent."""
    package: str
    """The npm package, for the prepare script's hint."""
    user_context: str | None = None
    """What the CLI adds to every user message it sends (named ``context-not-projected``
    for each), or None (OpenCode adds nothing)."""
    legacy_storage: bool = False
    """Whether the CLI once kept sessions as JSON files under ``<data>/storage/`` (OpenCode
    before 1.2.0), which the reader still reads."""

    cli: str = field(init=False)
    """The command (``opencode``), for the resume command and the prepare script."""
    data: str = field(init=False)
    """The data folder's name under ``$XDG_DATA_HOME`` (``opencode``)."""
    db: str = field(init=False)
    """The database file in the data folder (``opencode.db``)."""
    db_env: str = field(init=False)
    """The variable that names another database file (``OPENCODE_DB``)."""
    document: str = field(init=False)
    """The export document the writer writes (``opencode-export.json``)."""
    children: str = field(init=False)
    """The folder beside it holding one export document per child session (sub-agent)."""
    reader: str = field(init=False)
    """The reader's version tag in the Snapshot (``opencode/1``)."""

    def __post_init__(self) -> None:
        h = self.harness
        names = {
            "cli": h,
            "data": h,
            "db": f"{h}.db",
            "db_env": f"{h.upper()}_DB",
            "document": f"{h}-export.json",
            "children": f"{h}-export-children",
            "reader": f"{h}/1",
        }
        for name, value in names.items():
            object.__setattr__(self, name, value)
