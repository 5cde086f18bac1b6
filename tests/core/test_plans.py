"""What the centre fills in a writer's ExportPlan, and the folders a plan declares
(``trajconv.codecs.base``: ``LazyCodec.plan``, ``home_folders``, ``folder_plan``)."""

from __future__ import annotations

import pytest

from tests.helpers import tiny_session
from trajconv.codecs import registry
from trajconv.codecs.base import ExportFile, folder_plan, home_folders
from trajconv.snapshot.diagnostics import Diagnostics

WRITERS = [c.name for c in registry.all_codecs() if c.can_write]


@pytest.mark.parametrize("target", WRITERS)
def test_the_centre_names_the_target_and_the_snapshot_of_every_plan(target: str) -> None:
    snap = tiny_session(("user", "hi"), ("assistant", "hello"))
    plan = registry.get(target).plan(snap, allow_lossy=True)
    assert (plan.target, plan.snapshot_id) == (target, snap.id)


def test_home_folders_are_private_below_what_the_harness_shares() -> None:
    assert home_folders(".a/s/1") == {".a": 0o700, ".a/s": 0o700, ".a/s/1": 0o700}
    assert home_folders(".a/s/1/x", ".a/s/1/y/z", shared=".a/s") == {
        ".a": 0o755,
        ".a/s": 0o755,
        ".a/s/1": 0o700,
        ".a/s/1/x": 0o700,
        ".a/s/1/y": 0o700,
        ".a/s/1/y/z": 0o700,
    }
    assert home_folders(shared=".p/q") == {".p": 0o755, ".p/q": 0o755}


def test_a_folder_plan_is_the_session_named_by_its_folder() -> None:
    diags = Diagnostics()
    diags.add("ids-derived", "x")
    files = [ExportFile("home/.h/sessions/abc/log.jsonl", b"{}\n")]
    plan = folder_plan(".h/sessions/abc", files, diags=diags, notes=["n"], shared=".h")
    assert (plan.session_id, plan.session_paths, plan.resume_argv) == (
        "abc",
        [".h/sessions/abc"],
        [],
    )
    assert plan.dir_modes == {".h": 0o755, ".h/sessions": 0o700, ".h/sessions/abc": 0o700}
    assert [d.code for d in plan.diagnostics] == ["ids-derived"]
    assert plan.target == ""  # the centre's to fill, as the resume command


@pytest.mark.parametrize("target", WRITERS)
def test_the_centre_resumes_the_session_the_plan_writes(target: str) -> None:
    snap = tiny_session(("user", "hi"), ("assistant", "hello"))
    codec = registry.get(target)
    plan = codec.plan(snap, allow_lossy=True)
    resume = getattr(codec, "resume", ())
    assert plan.resume_argv == [a.replace("{session}", plan.session_id) for a in resume]
    assert bool(plan.resume_argv) == plan.installable
