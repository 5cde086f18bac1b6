"""Entry points and versions read without ``importlib.metadata`` (issue 38, start-up):
the same answers as ``importlib.metadata``, and a third-party codec registered by an
entry point in its own distribution is still found."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from trajconv import distinfo

CODEC_MODULE = """
from trajconv.codecs.base import LazyCodec
CODEC = LazyCodec("demo3p", ("demo-third-party",), "a third-party demo codec", __name__)
"""


def _third_party(root: Path) -> None:
    """A distribution ``demo3p`` under ``root`` registering one codec by entry point."""
    (root / "demo3p_codec").mkdir()
    (root / "demo3p_codec" / "__init__.py").write_text(CODEC_MODULE)
    info = root / "demo3p-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo3p\nVersion: 1.2\n\n")
    (info / "entry_points.txt").write_text(
        "[console_scripts]\ndemo3p = demo3p_codec:main\n\n"
        "# a comment\n[trajconv.codecs]\ndemo3p = demo3p_codec:CODEC\n"
    )


@pytest.mark.parametrize("group", ["trajconv.codecs", "console_scripts", "pytest11"])
def test_entry_points_are_those_importlib_metadata_finds(group: str) -> None:
    want = [(e.name, e.value) for e in metadata.entry_points(group=group)]
    assert [(e.name, e.value) for e in distinfo.entry_points(group)] == want
    if group == "trajconv.codecs":
        assert ("grok", "trajconv.codecs.grok:CODEC") in want


def test_versions_are_those_importlib_metadata_finds() -> None:
    names = {d.metadata["Name"] for d in metadata.distributions()}
    assert "trajconv" in names
    assert {n: distinfo.version(n) for n in names} == {n: metadata.version(n) for n in names}
    assert distinfo.version("no-such-distribution-here") is None


def test_a_third_party_codec_registered_by_entry_point_is_listed_and_loads(
    tmp_path: Path,
) -> None:
    _third_party(tmp_path)
    program = (
        "import sys\n"
        "from trajconv.codecs import registry\n"
        "print(registry.get('demo-third-party').name, 'grok' in registry.names(),\n"
        "      'importlib.metadata' in sys.modules)\n"
    )
    env = {"PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["demo3p", "True", "False"]
    listed = subprocess.run(
        [sys.executable, "-m", "trajconv.cli.main", "codecs"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert listed.returncode == 0, listed.stderr
    assert "demo3p" in listed.stdout and "grok" in listed.stdout


def test_a_zip_on_sys_path_falls_back_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distributions inside a zip on ``sys.path`` are found too (``importlib.metadata``)."""
    (tmp_path / "src").mkdir()
    _third_party(tmp_path / "src")
    archive = tmp_path / "demo.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in (tmp_path / "src").rglob("*"):
            if f.is_file():
                zf.write(f, f.relative_to(tmp_path / "src").as_posix())
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    distinfo._scan_all.cache_clear()
    try:
        assert distinfo._scan() is None
        names = [e.name for e in distinfo.entry_points("trajconv.codecs")]
        assert "demo3p" in names and "grok" in names
        assert distinfo.version("demo3p") == "1.2"
    finally:
        distinfo._scan_all.cache_clear()


PLUGIN_MODULE = """
import os

class Plugin:
    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):
        with open(os.environ["DEMO_PLUGIN_LOG"], "a") as log:
            log.write(path.name + "\\n")
        return None, None, None

plugin = Plugin()
"""

BUILD_A_MODEL = """
import sys
from trajconv.snapshot.models import Source
Source(harness="grok", harness_version=None, session_id="s", locator="x")
print("importlib.metadata" in sys.modules)
"""


def _pydantic_plugin(root: Path, *, registered: bool) -> None:
    """A distribution ``demoplug`` under ``root``; with ``registered``, its entry point
    in the ``pydantic`` group names a plugin that logs each schema it is shown."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "demoplug.py").write_text(PLUGIN_MODULE)
    info = root / "demoplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demoplug\nVersion: 1.0\n\n")
    group = "pydantic" if registered else "demoplug.other"
    (info / "entry_points.txt").write_text(f"[{group}]\ndemoplug = demoplug:plugin\n")


def _build_a_model(tmp_path: Path, *paths: Path) -> tuple[bool, list[str]]:
    """Whether building a Snapshot model imported ``importlib.metadata``, and the schemas
    the plugin logged, in a fresh interpreter with ``paths`` on ``PYTHONPATH``."""
    log = tmp_path / "plugin.log"
    env = {"PYTHONPATH": os.pathsep.join(map(str, paths)), "DEMO_PLUGIN_LOG": str(log)}
    run = subprocess.run(
        [sys.executable, "-c", BUILD_A_MODEL], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split() == ["True"], log.read_text().split() if log.exists() else []


def test_no_pydantic_plugin_registered_spares_pydantic_its_scan(tmp_path: Path) -> None:
    """Start-up (issue 38): pydantic's own plugin lookup imports ``importlib.metadata`` and
    reads every distribution; with no plugin registered trajconv tells it so."""
    _pydantic_plugin(tmp_path / "site", registered=False)
    assert _build_a_model(tmp_path, tmp_path / "site") == (False, [])
    registered = any(
        ep.group == "pydantic" for d in metadata.distributions() for ep in d.entry_points
    )
    assert distinfo._pydantic_plugins_registered() is registered


@pytest.mark.parametrize("shadowed", [False, True])
def test_a_registered_pydantic_plugin_is_still_loaded(tmp_path: Path, shadowed: bool) -> None:
    """A pydantic plugin installed beside trajconv sees trajconv's schemas, as it would
    without trajconv; registered in a distribution shadowed by one of the same name
    earlier on ``sys.path`` too (pydantic reads every distribution, shadowed or not)."""
    paths = [tmp_path / "plugin"]
    if shadowed:
        _pydantic_plugin(tmp_path / "first", registered=False)
        paths.insert(0, tmp_path / "first")
    _pydantic_plugin(tmp_path / "plugin", registered=True)
    imported, logged = _build_a_model(tmp_path, *paths)
    assert imported  # pydantic did its own loading
    assert "Source" in logged
