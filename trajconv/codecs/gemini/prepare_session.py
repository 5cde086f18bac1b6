#!/usr/bin/env python3
"""Install a trajconv Gemini CLI export into a home folder (stdlib only).

usage: python prepare.py [--home DIR] [--dry-run] [--touch]

Reads trajconv-export.json beside this file and checks every file's sha256 and size. The
export holds ``home/.gemini/tmp/<slug>/.project_root`` (the session's cwd) and
``…/chats/session-*.jsonl``. Gemini CLI names a project folder after the cwd (``projects.json``,
or a ``tmp/*/.project_root`` marker holding the cwd), so the session goes under the folder
the home already uses for that cwd, else under the first free ``<slug>``, ``<slug>-1``, … (as
the CLI claims one). It refuses (exit 3) when a session file with the same first 8 id
characters exists in that project (the CLI would confuse them, and its cleanup deletes both),
never replaces a file, and never edits ``projects.json`` (the CLI adds the mapping itself on
its next start). ``--dry-run`` prints the plan and writes nothing.

Gemini CLI's session cleanup (``general.sessionRetention``, on by default) deletes at its next
start every session whose ``lastUpdated`` is older than ``maxAge`` (30 days by default). When
it is on and the session is that old, prepare refuses (exit 3) unless ``--touch``, which
appends ``{"$set": {"lastUpdated": <install time>}}`` to the installed file (the line the CLI
itself appends whenever it updates a session), or the retention is switched off first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from trajconv.codecs.prepare_safe import (  # prepare: inline
    Undo,
    check_file,
    exists_in,
    fail,
    file_chunks,
    open_folder,
    write_file,
)

HERE = Path(__file__).resolve().parent


def owner(folder: Path) -> str | None:
    try:
        return (folder / ".project_root").read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None


def project_folder(gemini: Path, cwd: str, slug: str) -> str:
    """The ``tmp/<name>`` the CLI uses (or will claim) for ``cwd``."""
    try:
        projects = json.loads((gemini / "projects.json").read_text("utf-8")).get("projects", {})
    except (OSError, ValueError, AttributeError):
        projects = {}
    if not isinstance(projects, dict):
        projects = {}
    named = projects.get(cwd)
    if isinstance(named, str) and not plain_name(named):
        # the home's own file is not trusted to say where to write (issue 34: an absolute
        # path or ../../.. sent the install outside --home)
        fail(1, f"refusing: {gemini / 'projects.json'} maps {cwd} to {named!r}, not a folder name")
    if isinstance(named, str) and owner(gemini / "tmp" / named) in (None, cwd):
        return named
    tmp = gemini / "tmp"
    if tmp.is_dir():
        for folder in sorted(tmp.iterdir()):
            if folder.is_dir() and not folder.is_symlink() and owner(folder) == cwd:
                return folder.name
    taken = {v for v in projects.values() if isinstance(v, str)}
    counter = 0
    while True:
        candidate = slug if counter == 0 else f"{slug}-{counter}"
        counter += 1
        found = owner(tmp / candidate)
        if candidate not in taken and found in (None, cwd):
            return candidate


def plain_name(name: str) -> bool:
    """One folder name: no separator, not ``.`` or ``..``, no NUL."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


#: the CLI's retention units (``parseRetentionPeriod``)
UNITS_MS = {"h": 3_600_000, "d": 86_400_000, "w": 604_800_000, "m": 2_592_000_000}


def retention(gemini: Path) -> int | None:
    """The cleanup's ``maxAge`` in ms when cleanup is on in this home, else None.

    On unless ``settings.json`` says ``enabled: false``; ``maxAge`` defaults to 30 days.
    """
    general: object = {}
    with contextlib.suppress(OSError, ValueError, AttributeError):
        general = json.loads((gemini / "settings.json").read_text("utf-8")).get("general", {})
    conf = general.get("sessionRetention", {}) if isinstance(general, dict) else {}
    conf = conf if isinstance(conf, dict) else {}
    if conf.get("enabled", True) is False:
        return None
    match = re.fullmatch(r"(\d+)([hdwm])", str(conf.get("maxAge", "30d")))
    return int(match.group(1)) * UNITS_MS[match.group(2)] if match else 30 * UNITS_MS["d"]


def last_updated_ms(session: Path) -> int | None:
    """``lastUpdated`` of the session file's metadata line, in ms."""
    try:
        with session.open("rb") as fh:
            meta = json.loads(fh.readline())
        stamp = datetime.fromisoformat(str(meta["lastUpdated"]).replace("Z", "+00:00"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return int(stamp.timestamp() * 1000)


WARNING = (
    "warning: Gemini CLI's session cleanup is on in this home (general.sessionRetention). "
    "It deletes sessions whose lastUpdated is older than its maxAge (30 days by default) "
    "and, after a --resume, may delete the resumed session on a later start. To keep this "
    'session, set "general": {"sessionRetention": {"enabled": false}} in '
    "SETTINGS before starting the CLI."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    parser.add_argument(
        "--touch",
        action="store_true",
        help="append the install time as lastUpdated, so the CLI's cleanup keeps an old session",
    )
    args = parser.parse_args(argv)
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    home = args.home.expanduser().resolve()
    gemini = home / ".gemini"
    for part in (home, gemini, gemini / "tmp"):
        if part.is_symlink():
            fail(1, f"refusing: {part} is a symlink")

    files = [f for f in manifest["files"] if f["path"].startswith("home/")]
    marker = session = None
    for entry in files:
        check_file(HERE, entry)
        parts = Path(entry["path"]).parts
        if parts[:3] != ("home", ".gemini", "tmp") or ".." in parts:
            fail(1, f"unexpected path {entry['path']!r} in a Gemini CLI export")
        if parts[-1] == ".project_root" and len(parts) == 5:
            marker = entry
        elif len(parts) == 6 and parts[4] == "chats" and parts[5].startswith("session-"):
            session = entry
    if marker is None or session is None:
        fail(1, "the manifest names no .project_root and session file")
    assert marker is not None and session is not None
    cwd = (HERE / marker["path"]).read_text("utf-8")
    slug = Path(marker["path"]).parts[3]
    folder = project_folder(gemini, cwd, slug)
    if not plain_name(folder):
        fail(1, f"refusing: project folder {folder!r} is not a folder name")
    name = Path(session["path"]).name
    chats = gemini / "tmp" / folder / "chats"
    for path in (gemini / "tmp" / folder, chats):
        if path.is_symlink():
            fail(1, f"refusing: {path} is a symlink")
    target = chats / name
    id8 = name.rsplit("-", 1)[-1].split(".")[0]
    clash = sorted(chats.glob(f"session-*-{id8}.json*")) if chats.is_dir() else []
    if target.exists() or clash:
        fail(3, f"refusing to replace existing session at {(clash or [target])[0]}")
    max_age = retention(gemini)
    now = datetime.now(UTC)
    updated = last_updated_ms(HERE / session["path"])
    touch = b""
    if args.touch:
        stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
        touch = json.dumps({"$set": {"lastUpdated": stamp}}).encode() + b"\n"
    elif max_age is not None and updated is not None and updated < now.timestamp() * 1000 - max_age:
        fail(
            3,
            "refusing: Gemini CLI's session cleanup is on in this home and would delete this "
            "session at its next start (its lastUpdated is older than the retention maxAge). "
            'Set "general": {"sessionRetention": {"enabled": false}} in '
            f"{gemini / 'settings.json'}, or run again with --touch to record the install time "
            "as lastUpdated.",
        )
    plan = [(HERE / session["path"], target, int(session["mode"], 8))]
    if owner(gemini / "tmp" / folder) is None:
        plan.insert(0, (HERE / marker["path"], gemini / "tmp" / folder / ".project_root", 0o644))

    for _src, dst, mode in plan:
        print(f"{'would install' if args.dry_run else 'install'} {dst} ({oct(mode)})")
    if not args.dry_run:
        undo = Undo(home)
        with undo.guard(refuse_existing=True):
            home.mkdir(parents=True, exist_ok=True)
            for src, dst, mode in plan:
                undo.where = dst
                parts = dst.relative_to(home).parts
                fd = open_folder(home, parts[:-1], None, undo)
                try:
                    if exists_in(fd, parts[-1]):
                        raise FileExistsError(parts[-1])
                    tail = touch if dst == target else b""
                    write_file(fd, parts[-1], file_chunks(src, tail=tail), mode, undo, parts,
                               replace=False)  # fmt: skip
                finally:
                    os.close(fd)
    if max_age is not None:
        print(WARNING.replace("SETTINGS", str(gemini / "settings.json")), file=sys.stderr)
    resume = manifest["resume"]["argv"]
    print(
        ("dry run: nothing written; " if args.dry_run else "installed; ")
        + f"resume in {cwd} with: "
        + " ".join(shlex.quote(a) for a in resume)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
