#!/usr/bin/env python3
"""Install a trajconv Cursor export as a Cursor CLI chat store (stdlib only).

usage: python prepare.py [--home DIR] [--cwd DIR] [--dry-run]

Reads trajconv-export.json and the ``cursor-agent-sqlite-readout-v1`` readout
beside this file, checks every file's sha256 and every blob's sha256 against
its id (one blob at a time: the readout is never held whole), then creates
``<home>/.cursor/chats/<md5(resolved cwd)>/<agentId>/store.db``
with the pragmas and tables Cursor uses (WAL, ``user_version = 1``,
``blobs(id, data)``, ``meta(key, value)``). It never replaces an existing store
(exit 3); ``--dry-run`` prints the plan and writes nothing. The store is built
in a private temporary folder, checkpointed, then written into the home a folder at a
time without following a symlink (a home's folder swapped for one meanwhile is refused);
a run that cannot finish (a full disk) removes what it made and exits 1.
Resume with ``cursor-agent --resume <agentId>`` run in that cwd.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from trajconv.codecs.prepare_safe import (  # prepare: inline
    Undo,
    clear_stale,
    digest,
    exists_in,
    fail,
    file_chunks,
    open_folder,
    write_file,
)

HERE = Path(__file__).resolve().parent
READOUT_FORMAT = "cursor-agent-sqlite-readout-v1"
CHUNK = 1 << 20
Spans = dict[str, tuple[int, int]]
"""Blob id -> file offset and length of its base64 JSON string, quotes included."""


class ReadoutError(ValueError):
    """A readout that cannot be read: the reason, and the blob it concerns if one does."""

    def __init__(self, reason: str, blob: str | None = None) -> None:
        super().__init__(reason)
        self.blob = blob


# The readout is read in one pass that keeps only where each blob's base64 is, here and
# in trajconv's reader (trajconv/codecs/cursor/native.py imports this module), so a
# large chat is never held whole.


class Scanner:
    """A JSON document read front to back in chunks: small values are parsed, a long
    string can be passed over keeping only its place, so the file is never held whole."""

    _SPACE = re.compile(rb"[ \t\n\r]*")
    _SCALAR = re.compile(rb"[^ \t\n\r,:\]}]*")
    # A string's body up to its closing quote, and everything up to the next bracket that
    # is not in a string: runs are taken whole, so Python steps only from bracket to bracket.
    _STRING = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
    _FILLER = re.compile(rb'(?:[^"\[\]{}]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.DOTALL)

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.buf = b""
        self.at = 0
        self.base = 0  # file offset of buf[0]
        self.mark: int | None = None  # start of the value being parsed, kept across reads

    def _more(self) -> bool:
        chunk = self.fh.read(CHUNK)
        if not chunk:
            return False
        cut = self.at if self.mark is None else self.mark
        self.buf = self.buf[cut:] + chunk
        self.base += cut
        self.at -= cut
        if self.mark is not None:
            self.mark = 0
        return True

    def _past(self, pattern: re.Pattern[bytes]) -> None:
        match = pattern.match(self.buf, self.at)
        assert match is not None  # each pattern matches the empty string
        self.at = match.end()

    def error(self, what: str) -> ReadoutError:
        return ReadoutError(f"readout is not JSON ({what} at byte {self.base + self.at})")

    def peek(self) -> int:
        """The next byte that is not white space (not taken); -1 at the end."""
        while True:
            self._past(self._SPACE)
            if self.at < len(self.buf):
                return self.buf[self.at]
            if not self._more():
                return -1

    def take(self, char: bytes) -> None:
        if self.peek() != char[0]:
            raise self.error(f"expected {char.decode()}")
        self.at += 1

    def items(self, close: bytes, *, started: bool = False) -> Iterator[None]:
        """Once per member of the object, or element of the array, just opened (``started``
        when its first member was taken already)."""
        if not started:
            if self.peek() == close[0]:
                self.at += 1
                return
            yield
        while self.peek() != close[0]:
            self.take(b",")
            yield
        self.at += 1

    def head(self, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
        """Take what ``pattern`` (a short, common shape) matches here, if it does."""
        self.peek()
        if len(self.buf) - self.at < 1024:
            self._more()
        match = pattern.match(self.buf, self.at)
        if match is not None:
            self.at = match.end()
        return match

    def string(self) -> tuple[int, int]:
        """Pass over a string: its file offset and length, quotes included."""
        self.take(b'"')
        start = self.base + self.at - 1
        while True:
            self._past(self._STRING)
            if self.at < len(self.buf) and self.buf[self.at] == ord('"'):
                self.at += 1
                return start, self.base + self.at - start
            if not self._more():  # else the chunk ended in the string (or in an escape)
                raise self.error("unterminated string")

    def text(self) -> str:
        """Parse one string (a member name, an id)."""
        if self.peek() != ord('"'):
            raise self.error("expected a string")
        self.mark = self.at
        self.string()
        raw = self.buf[self.mark : self.at]
        self.mark = None
        try:
            if b"\\" in raw:  # escapes need the JSON decoder; most strings have none
                value: str = json.loads(raw)
                return value
            return raw[1:-1].decode("utf-8")
        except ValueError as exc:  # a UnicodeDecodeError too
            raise self.error(str(exc)) from None

    def skip(self) -> None:
        """Pass over one value."""
        first = self.peek()
        if first == ord('"'):
            self.string()
        elif first in (ord("["), ord("{")):
            depth = 0
            while True:
                self._past(self._FILLER)
                if self.at == len(self.buf):
                    if not self._more():
                        raise self.error("unterminated value")
                    continue
                mark = self.buf[self.at]
                if mark == ord('"'):  # a string the chunk ends in
                    self.string()
                    continue
                self.at += 1
                depth += 1 if mark in b"[{" else -1
                if depth == 0:
                    return
        else:
            self._past(self._SCALAR)
            while self.at == len(self.buf) and self._more():
                self._past(self._SCALAR)

    def value(self) -> Any:
        """Parse one value (a small one: it is held while it is read)."""
        self.peek()
        self.mark = self.at
        self.skip()
        text = self.buf[self.mark : self.at]
        self.mark = None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise self.error(str(exc)) from None


# How the writer starts every blob entry, up to the data string: taken in one step, where
# any other shape is read member by member.
_BLOB_HEAD = re.compile(
    rb'\{[ \t\n\r]*"id"[ \t\n\r]*:[ \t\n\r]*"([0-9a-f]{64})"[ \t\n\r]*,'
    rb'[ \t\n\r]*"size"[ \t\n\r]*:[ \t\n\r]*[0-9]+[ \t\n\r]*,'
    rb'[ \t\n\r]*"data"[ \t\n\r]*:[ \t\n\r]*(?=")'
)


def _scan_blob(sc: Scanner, i: int, max_blob: int) -> tuple[str, tuple[int, int]]:
    """One ``blobs`` entry: its id, and where its base64 is."""
    entry: dict[str, Any] = {}
    span: tuple[int, int] | None = None
    quick = sc.head(_BLOB_HEAD)
    if quick is not None:
        entry["id"] = quick.group(1).decode("ascii")
        span = sc.string()
    if quick is not None or sc.peek() == ord("{"):
        if quick is None:
            sc.take(b"{")
        for _ in sc.items(b"}", started=quick is not None):
            key = sc.text()
            sc.take(b":")
            if key == "data" and sc.peek() == ord('"'):
                span = sc.string()
            else:
                entry[key] = sc.value()
    else:
        sc.skip()
    bid = entry.get("id")
    if not isinstance(bid, str) or span is None:
        raise ReadoutError(f"blobs[{i}] is not {{id, data}}")
    # Even if every character were an escape pair, this much base64 decodes to more.
    if (span[1] - 2) // 8 * 3 > max_blob:
        raise ReadoutError(f"blobs[{i}] is over the max_line_bytes limit", bid)
    return bid, span


def scan_readout(fh: BinaryIO, max_blob: int) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """The readout members a store is rebuilt from, and where each blob's base64 is.

    The rest is passed over unparsed: ``provenance`` (the source records) and
    ``meta_decoded``, so no credential a third-party readout left there is even decoded.
    """
    sc = Scanner(fh)
    if sc.peek() != ord("{"):
        raise ReadoutError(f"not a {READOUT_FORMAT} document")
    sc.take(b"{")
    doc: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    for _ in sc.items(b"}"):
        key = sc.text()
        sc.take(b":")
        if key == "blobs" and sc.peek() == ord("["):
            sc.take(b"[")
            for i, _ in enumerate(sc.items(b"]")):
                bid, span = _scan_blob(sc, i, max_blob)
                spans[bid] = span
        elif key in ("format", "agent_id", "cwd", "user_version", "meta"):
            doc[key] = sc.value()
        else:
            sc.skip()
    if sc.peek() != -1:
        raise sc.error("data after the document")
    if doc.get("format") != READOUT_FORMAT:
        raise ReadoutError(f"not a {READOUT_FORMAT} document")
    return doc, spans


def read_blob(fh: BinaryIO, bid: str, span: tuple[int, int]) -> bytes:
    """A blob's bytes, decoded from its place in the readout."""
    fh.seek(span[0])
    try:
        data: bytes = base64.b64decode(json.loads(fh.read(span[1])), validate=True)
    except ValueError:
        raise ReadoutError("blob data is not base64", bid) from None
    return data


def find_readout() -> Path:
    """The readout, after every file the manifest lists matches its sha256."""
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    readout_path: Path | None = None
    for entry in manifest["files"]:
        rel = entry["path"]
        if rel == "prepare.py":
            continue
        path = HERE / rel
        if not path.is_file() or digest(path)[0] != entry["sha256"]:
            fail(1, f"{rel}: missing or sha256 mismatch")
        if rel.endswith(".readout.json"):
            readout_path = path
    if readout_path is None:
        fail(1, "the manifest lists no readout")
    return readout_path


def blobs(fh: BinaryIO, spans: Spans) -> Iterator[tuple[str, bytes]]:
    """Each blob, read from the readout and checked against its id, one at a time."""
    for i, (bid, span) in enumerate(spans.items()):
        data = read_blob(fh, bid, span)
        if hashlib.sha256(data).hexdigest() != bid:
            fail(1, f"blob {i} ({bid}): sha256 does not match its id")
        yield bid, data


def _build_db(db: Path, fh: BinaryIO, spans: Spans, meta_rows: list[dict[str, str]]) -> None:
    con = sqlite3.connect(db)
    try:
        # Cursor's own schema and pragmas (codecs/cursor/README.md section 2).
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
        con.execute("PRAGMA user_version = 1")
        con.execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, data BLOB)")
        con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        con.executemany("INSERT OR REPLACE INTO blobs (id, data) VALUES (?, ?)", blobs(fh, spans))
        for row in meta_rows:
            con.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (row["key"], row["value"])
            )
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def build(
    fh: BinaryIO, spans: Spans, meta_rows: list[dict[str, str]], target: Path, home: Path
) -> None:
    """Create the store in a private temporary folder, then put it at ``target`` (under
    ``home``) without following a symlink; on failure nothing of it stays in the home."""
    with tempfile.TemporaryDirectory(prefix="trajconv-cursor-") as tmp:
        try:
            _build_db(Path(tmp) / "store.db", fh, spans, meta_rows)
        except sqlite3.Error as exc:  # a full $TMPDIR: the home is not touched yet
            fail(1, f"cannot build the store in {tmp}: {exc}; nothing was installed")
        parts = target.relative_to(home).parts
        undo = Undo(home)
        undo.where = target
        with undo.guard():
            parent = open_folder(home, parts[:-1], 0o700, undo)
            try:
                if exists_in(parent, parts[-1]):
                    fail(3, f"{target} appeared while preparing; refusing to replace it")
                os.mkdir(parts[-1], 0o700, dir_fd=parent)
                undo.dirs.append(parts)
            finally:
                os.close(parent)
            fd = open_folder(home, parts, create=False)
            try:
                for f in sorted(Path(tmp).iterdir()):
                    mode = f.stat().st_mode & 0o777
                    write_file(fd, f.name, file_chunks(f), mode, undo, (*parts, f.name))
            finally:
                os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--cwd", help="workspace the chat belongs to (default: the session's)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)

    readout_path = find_readout()
    with readout_path.open("rb") as fh:
        try:
            doc, spans = scan_readout(fh, sys.maxsize)
            agent = doc.get("agent_id")
            if not isinstance(agent, str) or not agent or "/" in agent or agent in (".", ".."):
                fail(1, f"{readout_path.name}: bad agent_id {agent!r}")
            cwd = args.cwd or doc.get("cwd")
            if not isinstance(cwd, str) or not cwd:
                fail(2, "the session has no cwd; pass --cwd DIR")
            for _ in blobs(fh, spans):  # every blob checked before anything is written
                pass
            rows = {row["key"]: row["value"] for row in doc["meta"]}
            meta = json.loads(bytes.fromhex(rows["0"]).decode("utf-8"))
            if meta.get("latestRootBlobId") not in spans:
                fail(1, "latestRootBlobId names no blob of the readout")
            resolved = str(Path(cwd).expanduser().resolve())
            group = hashlib.md5(resolved.encode("utf-8"), usedforsecurity=False).hexdigest()
            home = args.home.expanduser().resolve()
            target = home / ".cursor" / "chats" / group / agent
            print(f"store: {target / 'store.db'} ({len(spans)} blobs, cwd {resolved})")
            if not clear_stale(target):  # a killed run's temporary files do not count
                fail(3, f"{target} exists; refusing to replace an existing Cursor chat")
            if args.dry_run:
                print("dry run: nothing written")
                return 0
            try:
                home.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                fail(1, f"cannot make {home}: {exc.strerror or exc}")
            build(fh, spans, doc["meta"], target, home)
        except ReadoutError as exc:
            blob = f" (blob {exc.blob})" if exc.blob else ""
            fail(1, f"{readout_path.name}: {exc}{blob}")
    print(f"resume: cd {resolved} && cursor-agent --resume {agent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
