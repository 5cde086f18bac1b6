"""Full-text search over every record of every session, in one SQLite FTS5 index.

The index lives in the user's cache (``$XDG_CACHE_HOME/trajconv/search.sqlite``, or
``TRAJCONV_SEARCH_INDEX``) and is brought up to date on every search: each session of the
homes and stores searched has a cheap fingerprint (for a native session the ``stat`` of its
files, as ``trajconv archive`` takes it; for a stored one its latest Snapshot id), and only a
session whose fingerprint changed is read again. A session that cannot be read (damaged,
locked) is skipped and named; an index file that SQLite cannot open is rebuilt.

The engine is FTS5 with its ``trigram`` tokenizer, chosen over a word tokenizer because
what people search sessions for is often part of a word: ``upload`` must find
``test_upload.py``, and ``cx1-t2`` or ``ENOENT`` must match as typed
(``evidence/search-benchmark.md`` has its size and speed). A query is text, never syntax:
each whitespace-separated term must occur (as a substring, case-insensitively) in the
record; quotes, ``*``, ``AND``, ``NEAR(`` and ``col:x`` are searched literally. ``syntax=True``
hands the query to FTS5 as written.

This module names no harness: sessions come from :mod:`trajconv.find` (every registered
codec's ``discover``) and from archive stores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajconv.errors import TrajconvError, UsageError
from trajconv.find import same_dir

INDEX_FORMAT = "trajconv.search/2"
KINDS = ("user", "assistant", "reasoning", "tool-call", "tool-result", "system", "observation")
#: a record's text beyond this many characters is not indexed (a tool output of megabytes
#: is found by its first 256 Ki characters)
MAX_TEXT = 256 * 1024
#: sessions written per transaction: one commit per session (a WAL sync each) was most of
#: a cold build's time; a batch still bounds what an interrupted build reads again
COMMIT_EVERY = 200
_MIN_TRIGRAM = 3
_SNIPPET_BEFORE = 60
_SNIPPET_AFTER = 140

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id          INTEGER PRIMARY KEY,
    key         TEXT UNIQUE NOT NULL,
    harness     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    title       TEXT,
    cwd         TEXT,
    updated_at  TEXT,
    path        TEXT NOT NULL,
    store       TEXT,
    fingerprint TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS recs (
    id      INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    child   TEXT,
    seq     INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    time    TEXT
);
CREATE INDEX IF NOT EXISTS recs_session ON recs (session);
CREATE VIRTUAL TABLE IF NOT EXISTS body USING fts5 (text, tokenize = 'trigram');
"""


def default_index_path(redact: bool = False) -> Path:
    """``TRAJCONV_SEARCH_INDEX``, else the user's cache folder; an index of redacted text
    (``redact``) is a file of its own."""
    env = os.environ.get("TRAJCONV_SEARCH_INDEX")
    if env:
        path = Path(env)
        return path.with_name(f"{path.stem}-redacted{path.suffix}") if redact else path
    from platformdirs import user_cache_dir

    name = "search-redacted.sqlite" if redact else "search.sqlite"
    return Path(user_cache_dir("trajconv")) / name


@dataclass(frozen=True)
class Hit:
    """One record that matches, with where to open it."""

    harness: str
    session_id: str
    title: str | None
    time: str | None
    """The record's time, else the session's last update."""
    kind: str
    seq: int
    snippet: str
    marks: tuple[tuple[int, int], ...]
    """``(start, end)`` of each match inside ``snippet``."""
    path: str
    store: str | None
    child: str | None = None
    """The session id of the sub-agent whose record it is (``seq`` counts in its records);
    ``None`` for a record of the session itself."""

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "marks": [list(m) for m in self.marks]}


@dataclass(frozen=True)
class Doc:
    """One session as the index sees it: a key, a fingerprint, its facts and how to read it."""

    key: str
    fingerprint: str
    harness: str
    session_id: str
    title: str | None
    cwd: str | None
    updated_at: str | None
    path: str
    store: str | None
    load: Callable[[], Any]
    """Returns the session's Snapshot (raises on a damaged or locked session)."""


@dataclass
class Refresh:
    """What bringing the index up to date did."""

    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    records: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(harness session, reason)`` of each session that could not be read."""
    rebuilt: bool = False

    def to_json(self) -> dict[str, Any]:
        skipped = [{"session": s, "reason": r} for s, r in self.skipped]
        return {**dataclasses.asdict(self), "skipped": skipped}


def record_text(record: dict[str, Any]) -> str:
    """What of a record is searched: its text, a call's name and arguments, a result's output."""
    kind = record["kind"]
    if kind == "tool-call":
        call = record["call"]
        args = orjson.dumps(call.get("arguments")).decode()
        text = f"{call.get('name', '')} {args}"
    elif kind == "tool-result":
        text = record["result"].get("output") or ""
    else:
        text = record.get("text") or ""
    return text[:MAX_TEXT]


class Index:
    """The search index file: open it with :meth:`open` (rebuilt when damaged)."""

    def __init__(
        self, path: Path, conn: sqlite3.Connection, rebuilt: bool, redact: bool = False
    ) -> None:
        self.path = path
        self.conn = conn
        self.rebuilt = rebuilt
        self.redact = redact
        """Every text is indexed with its secrets replaced (:mod:`trajconv.redact`)."""

    @classmethod
    def open(cls, path: Path | None = None, *, redact: bool = False) -> Index:
        """The index at ``path`` (default: :func:`default_index_path`); a file that is not
        an index of this format, redacted as asked, is rebuilt."""
        path = path if path is not None else default_index_path(redact)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot make the search index folder {path.parent}: {exc}") from None
        try:
            return cls(path, _connect(path, redact), rebuilt=False, redact=redact)
        except sqlite3.DatabaseError:
            remove_index(path)
            return cls(path, _connect(path, redact), rebuilt=True, redact=redact)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keeping it current ----------------------------------------------------------------
    def refresh(self, docs: Iterable[Doc], places: Iterable[str]) -> tuple[Refresh, list[int]]:
        """Index every changed session of ``docs``, and forget the indexed sessions of
        ``places`` (the homes and stores looked at, as :func:`place` names them) that are
        no longer there. Returns what happened and the index ids of ``docs`` (the scope of
        a query)."""
        done = Refresh(rebuilt=self.rebuilt)
        known = {
            key: (sid, fp)
            for sid, key, fp in self.conn.execute("SELECT id, key, fingerprint FROM sessions")
        }
        scope: list[int] = []
        seen: set[str] = set()
        places = set(places)
        pending = 0  # sessions written since the last commit
        try:
            for doc in docs:
                seen.add(doc.key)
                have = known.get(doc.key)
                if have is not None and have[1] == doc.fingerprint:
                    done.unchanged += 1
                    scope.append(have[0])
                    continue
                try:
                    snap = doc.load()
                    rows = _rows(snap, self.redact)
                except (TrajconvError, OSError, sqlite3.Error, ValueError) as exc:
                    done.skipped.append((f"{doc.harness} {doc.session_id}", _reason(exc)))
                    if have is not None:
                        scope.append(have[0])  # what it held when it last read: still findable
                    continue
                if have is not None:
                    self._forget(have[0])
                sid = self._add(doc, snap)
                for child, seq, kind, time, text in rows:
                    cur = self.conn.execute(
                        "INSERT INTO recs (session, child, seq, kind, time) VALUES (?, ?, ?, ?, ?)",
                        (sid, child, seq, kind, time),
                    )
                    self.conn.execute(
                        "INSERT INTO body (rowid, text) VALUES (?, ?)", (cur.lastrowid, text)
                    )
                    done.records += 1
                done.indexed += 1
                scope.append(sid)
                pending += 1
                if pending >= COMMIT_EVERY:
                    self.conn.commit()
                    pending = 0
            gone = [
                sid
                for key, (sid, _fp) in known.items()
                if key not in seen and _place(key) in places
            ]
            for sid in gone:
                self._forget(sid)
            done.removed = len(gone)
            self.conn.commit()
        except BaseException:
            self.conn.rollback()  # what the last commit held stays; the rest is read again
            raise
        return done, scope

    def _add(self, doc: Doc, snap: Any) -> int:
        session = snap.session
        cur = self.conn.execute(
            "INSERT INTO sessions (key, harness, session_id, title, cwd, updated_at, path, "
            "store, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc.key,
                doc.harness,
                doc.session_id,
                session.title if session.title is not None else doc.title,
                session.cwd if session.cwd is not None else doc.cwd,
                session.updated_at if session.updated_at is not None else doc.updated_at,
                doc.path,
                doc.store,
                doc.fingerprint,
            ),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _forget(self, sid: int) -> None:
        self.conn.execute(
            "DELETE FROM body WHERE rowid IN (SELECT id FROM recs WHERE session = ?)", (sid,)
        )
        self.conn.execute("DELETE FROM recs WHERE session = ?", (sid,))
        self.conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))

    # -- asking it -------------------------------------------------------------------------
    def query(
        self,
        text: str,
        scope: Iterable[int],
        *,
        kinds: Iterable[str] = (),
        since: str | None = None,
        cwd: str | None = None,
        limit: int | None = 20,
        syntax: bool = False,
        snippets: bool = True,
    ) -> list[Hit]:
        """The best-ranked records of the sessions ``scope`` that hold every term of ``text``
        (without ``snippets``, each hit's snippet is left empty: cheaper for a caller that
        wants the sessions alone)."""
        terms = text.split() if not syntax else []
        if not syntax and not terms:
            raise UsageError("give some text to search for")
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS scope (id INTEGER PRIMARY KEY)")
        self.conn.execute("DELETE FROM scope")
        self.conn.executemany("INSERT OR IGNORE INTO scope VALUES (?)", ((i,) for i in scope))
        where = ["s.id IN (SELECT id FROM scope)"]
        args: list[Any] = []
        kinds = list(kinds)
        if kinds:
            where.append(f"r.kind IN ({', '.join('?' * len(kinds))})")
            args.extend(kinds)
        if since is not None:
            where.append("s.updated_at >= ?")
            args.append(since)
        long_terms = [t for t in terms if len(t) >= _MIN_TRIGRAM]
        short = [t.casefold() for t in terms if len(t) < _MIN_TRIGRAM]
        if syntax or long_terms:
            match = text if syntax else " AND ".join(_quoted(t) for t in long_terms)
            sql = (
                "SELECT s.harness, s.session_id, s.title, s.updated_at, s.path, s.store, s.cwd, "
                "r.child, r.seq, r.kind, r.time, body.text FROM body "
                "JOIN recs r ON r.id = body.rowid JOIN sessions s ON s.id = r.session "
                f"WHERE body MATCH ? AND {' AND '.join(where)} "
                "ORDER BY bm25(body), s.updated_at DESC, r.seq"
            )
            args.insert(0, match)
        else:  # every term is shorter than a trigram: a scan of the sessions searched
            sql = (
                "SELECT s.harness, s.session_id, s.title, s.updated_at, s.path, s.store, s.cwd, "
                "r.child, r.seq, r.kind, r.time, body.text FROM recs r "
                "JOIN body ON body.rowid = r.id JOIN sessions s ON s.id = r.session "
                f"WHERE {' AND '.join(where)} ORDER BY s.updated_at DESC, r.seq"
            )
        try:
            rows = self.conn.execute(sql, args)
        except sqlite3.OperationalError as exc:
            if syntax:
                raise UsageError(f"--syntax: the search engine refuses {text!r}: {exc}") from None
            raise
        hits: list[Hit] = []
        wanted = [t.casefold() for t in terms] if terms else _syntax_words(text)
        for harness, sid, title, updated, path, store, scwd, child, seq, kind, time, body in rows:
            if short and not all(t in body.casefold() for t in short):
                continue
            if cwd is not None and (scwd is None or not same_dir(scwd, cwd)):
                continue
            snippet, marks = make_snippet(body, wanted) if snippets else ("", ())
            hits.append(
                Hit(
                    harness,
                    sid,
                    title,
                    time or updated,
                    kind,
                    seq,
                    snippet,
                    marks,
                    path,
                    store,
                    child,
                )
            )
            if limit is not None and len(hits) >= limit:
                break
        return hits


def remove_index(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()


def _connect(path: Path, redact: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    kind = f"{INDEX_FORMAT}{'+redacted' if redact else ''}"
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(_SCHEMA)
        found = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if found is None:
            conn.execute("INSERT INTO meta VALUES ('format', ?)", (kind,))
        elif found[0] != kind:
            raise sqlite3.DatabaseError(f"index format {found[0]!r}, not {kind!r}")
    except sqlite3.DatabaseError:
        conn.close()
        raise
    # a cache, rebuilt when lost: WAL's NORMAL sync keeps it consistent on a crash and
    # does not wait for the disk at every commit
    conn.execute("PRAGMA synchronous = NORMAL")
    # the rows of a batch of sessions go in in one transaction (``Index.refresh``)
    conn.isolation_level = "DEFERRED"
    return conn


def _rows(snap: Any, redact: bool) -> list[tuple[str | None, int, str, str | None, str]]:
    """``(child session id or None, seq, kind, time, text)`` of every record with text, the
    session's own and then its sub-agents' (their secrets replaced when ``redact``)."""
    from trajconv.snapshot.spool import record_dicts

    red = None
    if redact:
        from trajconv.redact import Redactor

        red = Redactor()
    out = []
    parts = [(None, snap.records)] + [(c.session.id, c.records) for c in snap.children]
    for child, records in parts:
        for r in record_dicts(records):
            text = record_text(r)
            if red is not None:
                text = red.text(text)
            if text.strip():
                out.append((child, r["seq"], r["kind"], r.get("time"), text))
    return out


def place(kind: str, where: str) -> str:
    """The name of a place sessions are searched in, a codec's home (``kind`` ``home``,
    ``where`` ``<harness>:<home>``) or a store (``store``): the sessions gone from a place
    searched are forgotten, other places' sessions are left alone."""
    return f"{kind}:{where}"


def _place(key: str) -> str:
    return key.split("\0", 1)[0]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _quoted(term: str) -> str:
    """``term`` as an FTS5 string: searched literally, whatever characters it holds."""
    return '"' + term.replace('"', '""') + '"'


def _syntax_words(query: str) -> list[str]:
    words = [w.strip('"*()').casefold() for w in query.split()]
    return [w for w in words if w and w not in ("and", "or", "not", "near")]


def make_snippet(text: str, terms: Iterable[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A window of ``text`` around the first match of any of ``terms`` (casefolded), on one
    line, with the place of every match inside it."""
    folded = text.casefold()
    same_length = len(folded) == len(text)  # casefold can lengthen (ß -> ss)
    terms = [t for t in terms if t]
    first = min(
        (i for t in terms if (i := folded.find(t)) >= 0),
        default=0,
    )
    if not same_length:
        first = 0
    start = max(0, first - _SNIPPET_BEFORE)
    end = min(len(text), first + _SNIPPET_AFTER)
    window = text[start:end]
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    flat = window.replace("\r", " ").replace("\n", " ").replace("\t", " ")
    marks: list[tuple[int, int]] = []
    if same_length:
        low = flat.casefold()
        for t in terms:
            at = low.find(t)
            while at >= 0:
                marks.append((len(lead) + at, len(lead) + at + len(t)))
                at = low.find(t, at + len(t))
    return lead + flat + tail, tuple(_merged(marks))


def _merged(marks: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    current: tuple[int, int] | None = None
    for s, e in sorted(marks):
        if current is not None and s <= current[1]:
            current = (current[0], max(current[1], e))
            continue
        if current is not None:
            yield current
        current = (s, e)
    if current is not None:
        yield current


# -- the places searched ---------------------------------------------------------------------


def home_docs(
    harnesses: Iterable[str] | None, home: Path | None, limits: Any = None
) -> tuple[list[Doc], list[str], list[dict[str, Any]]]:
    """Every session of the chosen codecs' homes (default ones, or ``home``) as docs, the
    places they were looked for in, and the coverage of each home (as ``discover`` says)."""
    from trajconv import find

    listing = find.list_sessions(harnesses, home)
    docs, places = listing_docs(listing, limits)
    return docs, places, listing.coverage


def listing_docs(listing: Any, limits: Any = None) -> tuple[list[Doc], list[str]]:
    """The sessions of a :class:`trajconv.find.Listing` as docs, and the places listed."""
    from trajconv.codecs import registry
    from trajconv.harvest import fingerprint

    homes = {c["harness"]: c["home"] for c in listing.coverage if "sessions" in c}
    docs: list[Doc] = []
    for ref in listing.sessions:
        try:
            fp = fingerprint(ref.path)
        except OSError:
            continue  # gone since it was listed
        codec = registry.get(ref.harness)
        root = homes.get(ref.harness, str(ref.path))

        def load(codec: Any = codec, ref: Any = ref) -> Any:
            return codec.read(ref.path, session=ref.session_id, limits=limits)

        docs.append(
            Doc(
                key=f"{place('home', f'{ref.harness}:{root}')}\0{ref.path}\0{ref.session_id}",
                fingerprint=fp,
                harness=ref.harness,
                session_id=ref.session_id,
                title=ref.title,
                cwd=ref.cwd,
                updated_at=ref.updated_at or ref.created_at,
                path=str(ref.path),
                store=None,
                load=load,
            )
        )
    return docs, [place("home", f"{h}:{root}") for h, root in homes.items()]


def sessions_holding(
    listing: Any, text: str, index: Path | None = None
) -> tuple[set[Any], Refresh]:
    """``(harness, session_id, path)`` of the listed sessions one of whose records holds
    every word of ``text`` (``discover --grep``, ``show --grep``), and what the index did."""
    docs, places = listing_docs(listing)
    with Index.open(index) as idx:
        done, scope = idx.refresh(docs, places)
        hits = idx.query(text, scope, limit=None, snippets=False)
    return {(h.harness, h.session_id, h.path) for h in hits}, done


def grep_refs(
    listing: Any, refs: Iterable[Any], text: str, index: Path | None = None
) -> tuple[list[Any], Refresh]:
    """The sessions of ``refs`` (of ``listing``), in their order, whose title holds ``text``
    or one of whose records holds every word of it: what ``discover --grep`` lists and
    ``show --grep`` picks from. Also what the index did (sessions it could not read)."""
    if not text.split():
        raise UsageError("--grep: give some text to look for")
    holding, done = sessions_holding(listing, text, index)
    low = text.casefold()
    return [
        r
        for r in refs
        if low in (r.title or "").casefold() or (r.harness, r.session_id, str(r.path)) in holding
    ], done


def records_holding(snapshot: Any, text: str) -> list[dict[str, Any]]:
    """The records of ``snapshot`` itself (not its sub-agents') that hold every word of
    ``text``, as :meth:`Index.query` matches them (each a substring, case aside)."""
    from trajconv.snapshot.spool import record_dicts

    terms = [t.casefold() for t in text.split()]
    out = []
    for r in record_dicts(snapshot.records):
        folded = record_text(r).casefold()
        if all(t in folded for t in terms):
            out.append(r)
    return out


def store_docs(location: str) -> tuple[list[Doc], str, Any]:
    """The latest Snapshot of every session archived in a store (folder or URL) as docs,
    the store's place, and the open store (close it when done)."""
    from trajconv.store import is_url, open_store

    where = location if is_url(location) else str(Path(location).resolve())
    store = open_store(location)
    docs = []
    for entry in store.sessions():
        sid = entry["latest_id"]

        def load(sid: str = sid) -> Any:
            return store.load(sid)

        docs.append(
            Doc(
                key=f"{place('store', where)}\0{entry['harness']}\0{entry['session_id']}",
                fingerprint=sid,
                harness=entry["harness"],
                session_id=entry["session_id"],
                title=None,
                cwd=None,
                updated_at=None,
                path=location,
                store=location,
                load=load,
            )
        )
    return docs, place("store", where), store
