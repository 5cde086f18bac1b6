#!/usr/bin/env python3
"""Install a trajconv export into a home folder (stdlib only; copied into every export).

usage: python prepare.py [--home DIR] [--dry-run]

Reads trajconv-export.json beside this file, checks every file's sha256 and
size, refuses to replace an existing session (exit 3) or to write outside the
home (through ``..`` or a symlink; exit 1), then installs each file with the
mode the harness uses, writing to a temporary name and renaming, in the order
the manifest lists (a harness's commit marker last). ``--dry-run`` prints the
plan and writes nothing.

Writes walk from the home one folder at a time, each opened relative to the
one before without following a symlink (``dir_fd``, ``O_NOFOLLOW``), so a folder
replaced by a symlink after the checks cannot send a file outside the home.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

HERE = Path(__file__).resolve().parent


def fail(code: int, message: str) -> NoReturn:
    print(f"prepare: {message}", file=sys.stderr)
    raise SystemExit(code)


def inside(home: Path, rel: str) -> Path:
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts:
        fail(1, f"refusing path {rel!r}: it leaves the home folder")
    target = home.joinpath(*parts)
    probe = home
    for part in parts[:-1]:
        probe = probe / part
        if probe.is_symlink():
            fail(1, f"refusing {rel!r}: {probe} is a symlink")
    if target.is_symlink():
        fail(1, f"refusing {rel!r}: {target} is a symlink")
    return target


NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


def folder(home: Path, parts: tuple[str, ...], mode: int | None = None) -> int:
    """An fd of ``home/parts``, each folder opened (or made) relative to the one before
    and never through a symlink: one put there after the checks fails here. ``mode``:
    that of the last folder when it is made."""
    fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    where = home
    for i, part in enumerate(parts):
        where = where / part
        try:
            try:
                next_fd = os.open(part, NOFOLLOW_DIR, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, dir_fd=fd)
                next_fd = os.open(part, NOFOLLOW_DIR, dir_fd=fd)
                if mode is not None and i == len(parts) - 1:
                    os.fchmod(next_fd, mode)
        except OSError as exc:
            os.close(fd)
            fail(1, f"refusing to write under {where}: {exc.strerror} (a symlink or not a folder)")
        os.close(fd)
        fd = next_fd
    return fd


def install(fd: int, src: Path, name: str, mode: int, dst: Path) -> None:
    """Copy ``src`` to ``name`` in the folder ``fd`` via a temporary name, no symlink
    followed."""
    tmp = f".{name}.prepare-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        out = os.open(tmp, flags, 0o600, dir_fd=fd)
    except OSError as exc:
        fail(1, f"refusing to write {dst}: {exc.strerror}")
    with src.open("rb") as fin, os.fdopen(out, "wb") as fout:
        for chunk in iter(lambda: fin.read(1 << 20), b""):
            fout.write(chunk)
        os.fchmod(fout.fileno(), mode)
    os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)


def digest(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    home = args.home.expanduser().resolve()

    files = [f for f in manifest["files"] if f["path"].startswith("home/")]
    for entry in files:
        src = HERE / entry["path"]
        if not src.is_file():
            fail(1, f"missing file {entry['path']}")
        sha, size = digest(src)
        if sha != entry["sha256"] or size != entry["size"]:
            fail(1, f"{entry['path']}: sha256/size do not match the manifest")
    for rel in manifest["session_paths"]:
        target = inside(home, rel)
        if target.exists():
            fail(3, f"refusing to replace existing session at {target}")
    plan = [
        (HERE / e["path"], inside(home, e["path"][len("home/") :]), int(e["mode"], 8))
        for e in files
    ]
    dirs = [(inside(home, d["path"]), int(d["mode"], 8)) for d in manifest["dirs"]]

    for _src, dst, mode in plan:
        print(f"{'would install' if args.dry_run else 'install'} {dst} ({oct(mode)})")
    if not args.dry_run:
        home.mkdir(parents=True, exist_ok=True)  # a fresh --home, as before: made, not opened
        for path, mode in dirs:
            os.close(folder(home, path.relative_to(home).parts, mode))
        for src, dst, mode in plan:
            parts = dst.relative_to(home).parts
            fd = folder(home, parts[:-1])
            try:
                install(fd, src, parts[-1], mode, dst)
            finally:
                os.close(fd)
    resume = manifest["resume"]["argv"]
    print(
        ("dry run: nothing written; " if args.dry_run else "installed; ")
        + "resume with: "
        + " ".join(shlex.quote(a) for a in resume)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
