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
replaced by a symlink after the checks cannot send a file outside the home. A run that
cannot finish (a full disk, a symlink found on the way) removes what it wrote and
exits 1 naming the path; a temporary file a killed run left never blocks a rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from trajconv.codecs.prepare_safe import (  # prepare: inline
    Undo,
    check_file,
    clear_stale,
    fail,
    file_chunks,
    open_folder,
    write_file,
)

HERE = Path(__file__).resolve().parent


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    home = args.home.expanduser().resolve()

    files = [f for f in manifest["files"] if f["path"].startswith("home/")]
    for entry in files:
        check_file(HERE, entry)
    for rel in manifest["session_paths"]:
        target = inside(home, rel)
        if not clear_stale(target):  # a killed run's temporary files do not count
            fail(3, f"refusing to replace existing session at {target}")
    plan = [
        (HERE / e["path"], inside(home, e["path"][len("home/") :]), int(e["mode"], 8))
        for e in files
    ]
    dirs = [(inside(home, d["path"]), int(d["mode"], 8)) for d in manifest["dirs"]]

    for _src, dst, mode in plan:
        print(f"{'would install' if args.dry_run else 'install'} {dst} ({oct(mode)})")
    if not args.dry_run:
        undo = Undo(home)
        with undo.guard():
            home.mkdir(parents=True, exist_ok=True)  # a fresh --home, as before: made, not opened
            for path, mode in dirs:
                undo.where = path
                os.close(open_folder(home, path.relative_to(home).parts, mode, undo))
            for src, dst, mode in plan:
                undo.where = dst
                parts = dst.relative_to(home).parts
                fd = open_folder(home, parts[:-1], None, undo)
                try:
                    write_file(fd, parts[-1], file_chunks(src), mode, undo, parts)
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
