"""Where OpenCode keeps sessions and how a path names one.

Facts (``codecs/opencode/README.md``, observed with 1.18.33): the data folder is
``$XDG_DATA_HOME/opencode`` (default ``~/.local/share/opencode``); the database is
``opencode.db`` there (WAL mode); before 1.2.0 sessions were flat JSON files under
``storage/`` (``session/<project>/<id>.json``, ``message/<session>/<id>.json``,
``part/<message>/<id>.json``); ``opencode export`` prints one ``{"info", "messages"}``
document.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from trajconv.codecs.base import Claim
from trajconv.codecs.opencode_lineage import Flavour
from trajconv.codecs.opencode_lineage import layout as lineage
from trajconv.codecs.opencode_lineage.store import STORAGE, is_sqlite

#: the names OpenCode gives the lineage's shared format (``trajconv.codecs.opencode_lineage``)
FLAVOUR = Flavour(
    harness="opencode",
    label="OpenCode",
    format_version="1.18.33",
    agent="build",
    package="opencode-ai",
    legacy_storage=True,
)
DB = FLAVOUR.db
DATA_REL = lineage.data_rel(FLAVOUR)
DOCUMENT = FLAVOUR.document
#: beside the document: one ``opencode export`` document per child session (sub-agent)
CHILDREN = FLAVOUR.children


#: where OpenCode keeps its data, a data folder or home it is handed, the session a path names:
#: the lineage's, with OpenCode's names
default_home = partial(lineage.default_home, FLAVOUR)
data_folder = partial(lineage.data_folder, flavour=FLAVOUR)
resolve = partial(lineage.resolve, flavour=FLAVOUR)


def claims(path: Path) -> Claim | None:
    """``opencode.db`` (or another database beside a ``storage/`` folder), an export document
    (``opencode-export.json``) or the folder holding one, a data folder (``opencode.db``,
    ``storage/session/``) or a user home holding ``.local/share/opencode``."""
    return lineage.claims(path, FLAVOUR, _likely_store)


def _likely_store(path: Path) -> bool:
    """Another database beside a ``storage/`` folder."""
    return is_sqlite(path) and (path.parent / STORAGE / "session").is_dir()
