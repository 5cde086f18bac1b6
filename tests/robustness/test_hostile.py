"""Issue 25: hostile input that used to cost far more than its size or end in a
traceback. Each test failed on the code before its fix; see ``hostile.py``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.robustness.hostile import (
    CASES,
    amplified_cursor_store,
    empty_records_document,
    export_file,
)
from trajconv.codecs.base import Limits
from trajconv.errors import FormatError, LimitError

F = TypeVar("F", bound=Callable[..., None])


def hostile(what: str) -> Callable[[F], F]:
    """Register a test as a standing hostile case, with what it checks."""

    def mark(func: F) -> F:
        CASES[func.__name__] = what
        return func

    return mark


@hostile(
    "Cursor root referencing one 1 MB message blob 800 times (2 MB store): refused by "
    "max_expansion before it is spooled, instead of 800 MB in $TMPDIR plus an 800 MB Snapshot"
)
def test_cursor_repeated_blob_is_bounded(tmp_path: Path) -> None:
    import trajconv

    db = amplified_cursor_store(tmp_path / "agent", blob_bytes=1 << 20, references=800)
    assert db.stat().st_size < 3 << 20
    started = time.monotonic()
    with pytest.raises(LimitError) as caught:
        trajconv.read("cursor", db, limits=Limits(max_expansion=1))
    assert caught.value.limit == "max_expansion"
    assert "--max-expansion" in str(caught.value)
    assert time.monotonic() - started < 30


@hostile("Cursor blob referenced a few times (what Cursor does for equal messages): still read")
def test_cursor_repeated_blob_within_limit_reads(tmp_path: Path) -> None:
    import trajconv

    db = amplified_cursor_store(tmp_path / "agent", blob_bytes=1000, references=3)
    snap = trajconv.read("cursor", db)
    texts = [r.text for r in snap.records if r.kind in ("user", "observation")]
    assert texts.count("x" * 1000) == 3


@hostile(
    "Snapshot of 100,000 empty records (300 KB): rejected at records/0 in well under a "
    "second (was 49 s of jsonschema best_match over oneOf per record)"
)
def test_invalid_records_rejected_fast(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from trajconv.cli.main import cli
    from trajconv.snapshot import io

    doc = tmp_path / "empty.json"
    doc.write_bytes(empty_records_document())
    assert doc.stat().st_size < 400_000
    started = time.monotonic()
    with pytest.raises(FormatError, match=r"schema: at records/0: kind is None"):
        io.load(doc)
    result = CliRunner().invoke(cli, ["verify", str(doc)])
    assert result.exit_code == 1, result.output
    assert "records/0" in result.output
    assert time.monotonic() - started < 10


@hostile(
    "archive import of an 8 KB tar.gz holding a 100,000-empty-record Snapshot: refused in "
    "well under a second (was 394 s)"
)
def test_import_of_invalid_records_is_fast(tmp_path: Path) -> None:
    from trajconv.snapshot.archive import import_store

    doc = empty_records_document()
    name = f"snapshots/{'0' * 64}.json"
    export = export_file(tmp_path / "x.tar.gz", {name: doc}, tmp=tmp_path)
    assert export.stat().st_size < 16_000
    started = time.monotonic()
    with pytest.raises(FormatError, match=r"does not verify: .*records/0"):
        import_store(export, tmp_path / "restored")
    assert time.monotonic() - started < 10
    assert not (tmp_path / "restored").exists()


@hostile(
    "archive import of an export whose MANIFEST.json is 64 MB of whitespace (64 KB "
    "compressed): refused after reading its cap (a few KB), not read whole (1.5 GB of "
    "whitespace took 3 GB)"
)
def test_import_manifest_read_is_capped(tmp_path: Path) -> None:
    import tracemalloc

    from trajconv.snapshot.archive import import_store

    manifest = b" " * (64 << 20) + b"{}"
    export = export_file(tmp_path / "x.tar.gz", {}, manifest=manifest, tmp=tmp_path)
    del manifest
    assert export.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=r"MANIFEST.json is over \d+ bytes"):
            import_store(export, tmp_path / "restored")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
