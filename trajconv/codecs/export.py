"""The one export writer every codec uses (docs/design.md §6).

``emit`` writes ``OUT/trajconv-export.json``, the ``home/`` tree (or a codec's
readout) and ``prepare.py`` into a hidden staging folder beside OUT and renames
it into place (:func:`trajconv.staging.staged_folder`), so a failure at any step leaves no
OUT at all.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trajconv.codecs.base import Export, ExportFile, ExportPlan
from trajconv.errors import FormatError, writing
from trajconv.snapshot.models import CODEC_NAME_PATTERN, Diagnostic
from trajconv.staging import staged_folder
from trajconv.version import __version__

MANIFEST = "trajconv-export.json"
EXPORT_FORMAT = "trajconv.export/1"


class ExportManifest(BaseModel):
    """What reading an export back uses of its manifest, checked (issue 34: ``show --diff``
    on a manifest of ``{}``, ``[]`` or wrong types ended in a traceback)."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    format: Literal["trajconv.export/1"]
    target: Annotated[str, Field(pattern=CODEC_NAME_PATTERN)]
    session_id: str
    session_paths: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...] = ()


MAX_MANIFEST = 16 * 1024**2


def load_manifest(file: Path) -> ExportManifest:
    from trajconv.codecs.jsonl import read_bounded

    data = read_bounded(file, MAX_MANIFEST)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise FormatError(file, f"not JSON: {exc}") from None
    try:
        return ExportManifest.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise FormatError(file, f"not an export manifest: at {where}: {first['msg']}") from None


def installed_path(out: Path, rel: str, manifest: Path) -> Path:
    """``out/home/<rel>``, refused unless ``rel`` is a relative path that stays in
    ``home/`` and passes through no symbolic link."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel:
        raise FormatError(manifest, f"session path {rel!r} is not inside the export's home/")
    here = out / "home"
    for part in ("", *parts):
        here = here / part if part else here
        if here.is_symlink():
            raise FormatError(manifest, f"session path {rel!r} passes through a symlink")
    return here


def generic_prepare_script() -> str:
    return resources.files("trajconv.codecs").joinpath("prepare_template.py").read_text("utf-8")


SAFE_IMPORT = "from trajconv.codecs.prepare_safe import"
"""How a prepare script imports the shared safe writes, which its export gets inlined."""


def inline_safe(script: str) -> str:
    """``script`` with its import of :mod:`trajconv.codecs.prepare_safe` replaced by that
    module's body: an export's prepare.py needs nothing but the standard library."""
    lines = script.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith(SAFE_IMPORT)]
    if not at:
        return script
    safe = resources.files("trajconv.codecs").joinpath("prepare_safe.py").read_text("utf-8")
    body = safe.split("# -- prepare: body --\n", 1)[1]
    end = at[0]
    if "(" in lines[end]:
        while ")" not in lines[end]:
            end += 1  # the names of a wrapped import, to its closing parenthesis
    return "".join([*lines[: at[0]], body, *lines[end + 1 :]])


def _manifest(plan: ExportPlan, files: list[tuple[ExportFile, str, int]]) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT,
        "target": plan.target,
        "session_id": plan.session_id,
        "snapshot_id": plan.snapshot_id,
        "files": [
            {"path": f.path, "sha256": sha256, "size": size, "mode": f"{f.mode:04o}"}
            for f, sha256, size in files
        ],
        "dirs": [{"path": p, "mode": f"{m:04o}"} for p, m in sorted(plan.dir_modes.items())],
        "session_paths": plan.session_paths,
        "prepare": {"argv": ["python", "prepare.py"]} if plan.installable else None,
        "resume": {"argv": plan.resume_argv, "home": plan.try_home} if plan.installable else None,
        "notes": plan.notes,
        "diagnostics": [d.model_dump(mode="json") for d in plan.diagnostics],
        "producer": {"name": "trajconv", "version": __version__},
    }


def _write_file(staging: Path, f: ExportFile) -> tuple[ExportFile, str, int]:
    """Write one file piece by piece; its sha256 and size for the manifest."""
    target = staging / f.path
    target.parent.mkdir(parents=True, exist_ok=True)
    sha, size = hashlib.sha256(), 0
    with target.open("wb") as fh:
        for chunk in f.chunks():
            fh.write(chunk)
            sha.update(chunk)
            size += len(chunk)
    os.chmod(target, f.mode)
    return f, sha.hexdigest(), size


def emit(plan: ExportPlan, out_dir: Path) -> Export:
    """Write ``plan`` to ``out_dir`` atomically."""
    out_dir = Path(out_dir)
    script = inline_safe(plan.prepare_script or generic_prepare_script()).encode()
    prepare = [ExportFile("prepare.py", script, 0o755)] if plan.installable else []
    # a full disk names the output, and nothing stays half-written
    with staged_folder(out_dir) as staging, writing(out_dir):
        written = [_write_file(staging, f) for f in [*plan.files, *prepare]]
        manifest = _manifest(plan, written)
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
        (staging / MANIFEST).write_bytes(data)
    return Export(
        out_dir=out_dir,
        target=plan.target,
        session_id=plan.session_id,
        snapshot_id=plan.snapshot_id,
        manifest=manifest,
        diagnostics=plan.diagnostics,
    )


def check_files(out_dir: Path) -> dict[str, Any]:
    """The manifest of the export in ``out_dir`` once every file it lists (``prepare.py``
    among them) has its sha256 and size: ``trajconv prepare`` runs ``prepare.py``, which
    checks the other files itself but cannot check itself (issue 33: verify before act).
    A damaged export is a VerifyError naming the first file that differs."""
    from trajconv.errors import FormatError, VerifyError

    where = out_dir / MANIFEST
    try:
        manifest = orjson.loads(where.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise FormatError(where, f"not an export manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
        raise FormatError(where, f"not a {EXPORT_FORMAT} manifest")
    files = manifest.get("files")
    if not isinstance(files, list):
        raise FormatError(where, "names no files")
    for entry in files:
        rel = entry.get("path") if isinstance(entry, dict) else None
        inside = isinstance(rel, str) and rel and not Path(rel).is_absolute()
        if not inside or ".." in Path(str(rel)).parts:
            raise FormatError(where, f"names the file {rel!r}, which is not inside the export")
        sha, size = hashlib.sha256(), 0
        try:
            with (out_dir / str(rel)).open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    sha.update(chunk)
                    size += len(chunk)
        except OSError as exc:
            raise VerifyError(f"{out_dir}: {rel} cannot be read: {exc.strerror}") from None
        if size != entry.get("size") or sha.hexdigest() != entry.get("sha256"):
            raise VerifyError(
                f"{out_dir}: {rel} does not match the sha256/size its manifest names: the "
                "export was changed after it was written"
            )
    return manifest
