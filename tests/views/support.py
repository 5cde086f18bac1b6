"""Sessions for the view tests: every fixture, and one with hostile text planted in it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import trajconv
from tests.helpers import REPO, rebuilt
from trajconv.codecs import registry
from trajconv.parity import FixtureSession, fixture_sessions
from trajconv.snapshot.builder import SnapshotBuilder, evidence
from trajconv.snapshot.models import Session, Snapshot, Source

SCRIPT = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
ANSI = "\x1b[31mRED\x1b[0m\x1b]0;title\x07"
BIDI = "access = \u202e\u2066 admin\u2069\u2066 # check"


@cache
def fixtures() -> tuple[FixtureSession, ...]:
    return tuple(fx for c in registry.all_codecs() if c.can_read for fx in fixture_sessions(c))


@cache
def read_fixture(label: str) -> Snapshot:
    """The fixture's Snapshot; one whose cwd is where its file lies (Aider keeps none, its
    history is in the project folder) is given that folder under ``/checkout``, so that
    its views are those of any clone."""
    fx = next(f for f in fixtures() if f.label == label)
    snap = trajconv.read(fx.harness, fx.path, session=fx.session)
    cwd = Path(snap.session.cwd) if snap.session.cwd else None
    if cwd is not None and cwd.is_relative_to(REPO):
        portable = f"/checkout/{cwd.relative_to(REPO).as_posix()}"
        return rebuilt(snap, session=snap.session.model_copy(update={"cwd": portable}))
    return snap


def hostile() -> Snapshot:
    """A small session whose every text field carries HTML, ANSI escapes and bidi controls."""
    b = SnapshotBuilder(
        Source(harness="grok", harness_version=None, session_id="hostile", locator="x"), "test"
    )
    b.session = Session(id="hostile", title=f"title {SCRIPT}{ANSI}{BIDI}", cwd="/tmp")
    ev = evidence("updates.jsonl", native="test", line=1)
    b.add_text("user", "u1", f"run it {SCRIPT} {ANSI} {BIDI}", time=None, turn=0, evidence=ev)
    b.add_text("reasoning", "r1", f"think {ANSI}", time=None, turn=0, evidence=ev)
    b.add_call(
        "c1", "call-1", f"shell{ANSI}", {"cmd": f"cat {SCRIPT}"}, time=None, turn=0, evidence=ev
    )
    b.add_result(
        "o1",
        "call-1",
        False,
        f"{SCRIPT}\n{ANSI}\n{BIDI}\n</script><!--",
        time=None,
        turn=0,
        evidence=ev,
        exit_code=1,
    )
    b.add_text(
        "assistant", "a1", f"**done** {SCRIPT} {ANSI} {BIDI}", time=None, turn=0, evidence=ev
    )
    b.diagnostics.add("torn-line", f"updates.jsonl:2 {SCRIPT}")
    return b.build()
