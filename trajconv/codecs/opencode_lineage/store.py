"""The stores of OpenCode and its forks (Kilo Code CLI) as one read-only view: a session's
info, its messages in order, each message's parts in order.

Kilo 7.7.7 keeps OpenCode's ``session`` / ``message`` / ``part`` tables column for column (in
``kilo.db``, beside tables of its own) and prints the same export document
(``codecs/kilo/README.md``); what follows is said of OpenCode and holds for both.

* SQLite (1.2.0 … 1.18.x, ``codecs/opencode/README.md``): tables ``session``,
  ``message`` (``data`` = the message without ``id``/``sessionID``) and ``part`` (``data`` =
  the part without ``id``/``sessionID``/``messageID``); messages are read ordered by
  ``time_created`` then ``id``, parts by ``id`` within a message (the CLI's own indexes).
  Opened ``mode=ro``; when a ``-wal`` file is present the database and its WAL are copied
  first (a read-only connection cannot fold a WAL in without writing the ``-shm``).
* Legacy JSON storage (before 1.2.0): ``session/<project>/<id>.json``,
  ``message/<session>/<id>.json``, ``part/<message>/<id>.json``, each a whole object with
  its ids; same orders.
* An ``opencode export`` document: ``{"info", "messages": [{"info", "parts"}]}``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trajconv.codecs.base import SessionRef
from trajconv.codecs.common import json_object
from trajconv.codecs.sqlite import ReadOnly
from trajconv.errors import FormatError
from trajconv.snapshot.builder import time_from_ms

JsonObj = dict[str, Any]

#: part types that only mark the agent loop (one LLM call, a retry, file snapshots)
LIFECYCLE_PARTS = ("step-start", "step-finish", "retry", "snapshot", "patch")
#: part types that carry something the model saw but no record kind holds
NON_TEXT_PARTS = ("file", "agent", "subtask")

SESSION_COLUMNS = (
    "id",
    "project_id",
    "workspace_id",
    "parent_id",
    "slug",
    "directory",
    "path",
    "title",
    "version",
    "agent",
    "model",
    "time_created",
    "time_updated",
    "time_compacting",
    "time_archived",
)


SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` starts with SQLite's header (reads 16 bytes)."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


#: the legacy JSON storage folder of a data folder (OpenCode before 1.2.0)
STORAGE = "storage"


def json_session_file(storage: Path, session: str) -> Path | None:
    """The legacy ``storage/session/<project>/<session>.json`` file, or None."""
    for found in sorted((storage / "session").glob(f"*/{session}.json")):
        if found.is_file():
            return found
    return None


class Unit(NamedTuple):
    """One native row or file: a message or a part (a tuple: a long session makes one per
    row, and a frozen dataclass took four times as long to make)."""

    id: str
    data: JsonObj | None
    """the parsed object, or None when it is not a JSON object"""
    raw: bytes
    place: str
    """``message:<id>`` / ``part:<id>`` (database), a file (storage), a JSON path (export)"""
    time_created: int | float | str | None = None
    """the cell as SQLite holds it (a blob as text): checked where it is used"""


def article(name: str) -> str:
    """``an`` before ``OpenCode`` / ``opencode``, ``a`` before ``Kilo``."""
    return "an" if name[:1].lower() in "aeiou" else "a"


def _parse(raw: bytes) -> JsonObj | None:
    return json_object(raw)


def time_of(value: Any) -> str | None:
    """An epoch-milliseconds cell or field as a Snapshot time (``None`` unless positive)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return time_from_ms(value)
    return None


def nonblank(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _bytes(value: Any) -> bytes:
    """A ``data`` cell as bytes, whatever SQLite holds there (text, blob, a number, null)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    return b"" if value is None else str(value).encode()


def text(value: Any) -> str:
    """An id or other text cell as a string."""
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _cell(value: Any) -> Any:
    """A session cell as a JSON value (a blob where text belongs becomes text)."""
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return value


@contextlib.contextmanager
def connect(path: Path, label: str = "OpenCode") -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path`` (the shared opener: a private copy when a WAL is
    beside it), whose text cells come as bytes: a damaged one must not stop the read;
    decoded below. ``label`` names the harness in the error when it is not such a database."""
    with ReadOnly(path) as con:
        con.text_factory = bytes
        try:
            con.execute("select 1 from session limit 1").fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise FormatError(path, f"not {article(label)} {label} database: {exc}") from None
        yield con


def db_has_session(path: Path, session: str, label: str = "OpenCode") -> bool:
    with connect(path, label) as con:
        return con.execute("select 1 from session where id = ?", (session,)).fetchone() is not None


class DbStore:
    """One session of an ``opencode.db``."""

    def __init__(self, con: sqlite3.Connection, path: Path, session: str) -> None:
        self.con = con
        self.path = path
        self.session = session
        cols = {text(r[1]) for r in con.execute("pragma table_info(session)")}
        wanted = [c for c in SESSION_COLUMNS if c in cols]
        row = con.execute(
            f"select {', '.join(wanted)} from session where id = ?", (session,)
        ).fetchone()
        if row is None:
            raise FormatError(path, f"no session {session!r} in the session table")
        self.row: JsonObj = {k: _cell(v) for k, v in zip(wanted, row, strict=True)}

    def info(self) -> JsonObj:
        """The session row in the shape of ``opencode export``'s ``info``."""
        r = self.row
        model = _parse(r["model"].encode()) if isinstance(r.get("model"), str) else None
        info: JsonObj = {
            "id": r["id"],
            "slug": r.get("slug"),
            "projectID": r.get("project_id"),
            "directory": r.get("directory"),
            "parentID": r.get("parent_id"),
            "title": r.get("title"),
            "version": r.get("version"),
            "agent": r.get("agent"),
            "model": model,
            "time": {"created": r.get("time_created"), "updated": r.get("time_updated")},
        }
        return {k: v for k, v in info.items() if v is not None}

    def messages(self) -> Iterator[tuple[Unit, list[Unit]]]:
        """Each message with its parts, in one query (OpenCode's two orders joined)."""
        cur = self.con.execute(
            "select m.id, m.time_created, m.data, p.id, p.data from message m "
            "left join part p on p.message_id = m.id where m.session_id = ? "
            "order by m.time_created, m.id, p.id",
            (self.session,),
        )
        msg: Unit | None = None
        parts: list[Unit] = []
        for mid, created, mdata, pid, pdata in cur:
            mid = text(mid)
            if msg is None or msg.id != mid:
                if msg is not None:
                    yield msg, parts
                raw = _bytes(mdata)
                created = _cell(created)
                msg, parts = Unit(mid, _parse(raw), raw, f"message:{mid}", created), []
            if pid is not None:
                pid, raw = text(pid), _bytes(pdata)
                parts.append(Unit(pid, _parse(raw), raw, f"part:{pid}"))
        if msg is not None:
            yield msg, parts

    def orphans(self) -> Iterator[Unit]:
        """Parts of the session whose message is not there (OpenCode never shows them)."""
        cur = self.con.execute(
            "select p.id, p.data from part p where p.session_id = ? and not exists "
            "(select 1 from message m where m.id = p.message_id and m.session_id = ?) "
            "order by p.id",
            (self.session, self.session),
        )
        for pid, data in cur:
            pid = text(pid)
            raw = _bytes(data)
            yield Unit(pid, _parse(raw), raw, f"part:{pid}")

    def children(self) -> list[str]:
        return [
            text(r[0])
            for r in self.con.execute(
                "select id from session where parent_id = ? order by time_created, id",
                (self.session,),
            )
        ]


def _read_json_file(path: Path, limit: int) -> bytes:
    from trajconv.codecs.jsonl import read_bounded

    return read_bounded(path, limit)


class JsonStore:
    """One session of the legacy ``storage/`` folder."""

    def __init__(self, storage: Path, session_file: Path, limit: int) -> None:
        self.storage = storage
        self.limit = limit
        self.session_file = session_file
        raw = _read_json_file(session_file, limit)
        info = _parse(raw)
        if info is None:
            raise FormatError(session_file, "session file is not a JSON object")
        self.raw_info = raw
        self._info = info
        self.session = str(info.get("id") or session_file.stem)
        self.links: list[str] = []
        """Files of the session that are symbolic links, left out (paths in storage/)."""

    def _files(self, folder: Path) -> list[Path]:
        """The ``*.json`` files of ``folder``; a symbolic link (file or folder) is not
        followed but noted in :attr:`links` (issue 34)."""
        if folder.is_symlink():
            self.links.append(self.rel(folder))
            return []
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if path.is_symlink():
                self.links.append(self.rel(path))
            else:
                found.append(path)
        return found

    def info(self) -> JsonObj:
        return self._info

    def rel(self, path: Path) -> str:
        return path.relative_to(self.storage).as_posix()

    def messages(self) -> Iterator[tuple[Unit, list[Unit]]]:
        folder = self.storage / "message" / self.session
        units = []
        for path in self._files(folder):
            raw = _read_json_file(path, self.limit)
            data = _parse(raw)
            created = None
            if data is not None:
                t = data.get("time")
                c = t.get("created") if isinstance(t, dict) else None
                created = c if isinstance(c, int) and not isinstance(c, bool) else None
            units.append(Unit(path.stem, data, raw, self.rel(path), created))
        # as the database orders them: time created, then id (None first, as SQLite does)
        units.sort(key=lambda u: (u.time_created is not None, u.time_created or 0, u.id))
        for unit in units:
            yield unit, list(self.parts(unit.id))

    def parts(self, message_id: str) -> Iterator[Unit]:
        folder = self.storage / "part" / message_id
        for path in self._files(folder):
            raw = _read_json_file(path, self.limit)
            yield Unit(path.stem, _parse(raw), raw, self.rel(path))

    def children(self) -> list[str]:
        project = self.session_file.parent
        found = []
        for path in self._files(project):
            data = _parse(_read_json_file(path, self.limit))
            if data is not None and data.get("parentID") == self.session:
                found.append(str(data.get("id") or path.stem))
        return found


class ExportStore:
    """An ``opencode export`` document (parsed whole; documents are one session)."""

    def __init__(
        self,
        path: Path,
        doc: JsonObj,
        cli: str = "opencode",
        children: str = "opencode-export-children",
    ) -> None:
        self.path = path
        self.children_folder = children
        info = doc.get("info")
        messages = doc.get("messages")
        if not isinstance(info, dict) or not isinstance(messages, list):
            raise FormatError(
                path, f"not {article(cli)} {cli} export document (no info / messages)"
            )
        self._info: JsonObj = info
        self._messages = messages
        self.session = str(info.get("id") or "")

    def info(self) -> JsonObj:
        return self._info

    def messages(self) -> Iterator[tuple[Unit, list[Unit]]]:
        for i, entry in enumerate(self._messages):
            place = f"messages[{i}]"
            minfo = entry.get("info") if isinstance(entry, dict) else None
            if not isinstance(minfo, dict):
                yield Unit(f"#{i}", None, orjson.dumps(entry), place), []
                continue
            mid = str(minfo.get("id") or f"#{i}")
            parts = entry.get("parts")
            units = []
            for j, part in enumerate(parts if isinstance(parts, list) else []):
                data = part if isinstance(part, dict) else None
                pid = str(data.get("id")) if data is not None and data.get("id") else f"#{i}.{j}"
                raw = b"" if data else orjson.dumps(part)
                units.append(Unit(pid, data, raw, f"messages[{i}].parts[{j}]"))
            yield Unit(mid, minfo, b"", place), units

    def children(self) -> list[str]:
        """Child sessions written beside a trajconv export's document (in the ``children``
        folder), in name order: those whose ``info.parentID`` is this session."""
        return [sid for sid, _path in self.child_documents()]

    def child_documents(self) -> list[tuple[str, Path]]:
        folder = self.path.parent / self.children_folder
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                doc = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            info = doc.get("info") if isinstance(doc, dict) else None
            if isinstance(info, dict) and info.get("parentID") == self.session:
                found.append((str(info.get("id") or path.stem), path))
        return found


Store = DbStore | JsonStore | ExportStore


def session_refs(db: Path, harness: str) -> list[SessionRef]:
    """The sessions of a database, newest first, as a listing shows them (children too)."""
    refs = []
    try:
        with connect(db) as con:
            rows = con.execute(
                "select s.id, s.title, s.directory, s.time_created, s.time_updated, "
                "(select coalesce(sum(length(p.data)), 0) from part p where p.session_id = s.id)"
                " from session s order by s.time_updated desc, s.id"
            ).fetchall()
    except (FormatError, sqlite3.Error):
        return []  # not a database OpenCode could open either
    for sid, title, directory, created, updated, size in rows:
        refs.append(
            SessionRef(
                harness=harness,
                session_id=text(sid),
                path=db,
                title=nonblank(text(title)) if title is not None else None,
                cwd=nonblank(text(directory)) if directory is not None else None,
                created_at=time_of(created),
                updated_at=time_of(updated),
                size=int(size) if isinstance(size, int) else None,
            )
        )
    return refs
