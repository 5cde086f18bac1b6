"""Install or locate the pinned native loaders (every module of ``proof/loaders/``).

usage: python -m proof install [-j N] [NAME ...]   (default: every loader from a registry,
                                                  four at once)
       python -m proof status [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from proof import all_loaders, installs_by_default, tools_dir


def _timed(install: Callable[[Path], Path], tools: Path) -> tuple[Path, float]:
    start = time.monotonic()
    return install(tools), time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    found = all_loaders()
    parser = argparse.ArgumentParser(prog="python -m proof", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="install pinned loaders into the tools folder")
    inst.add_argument("harness", nargs="*", help=f"any of: {', '.join(found)}")
    inst.add_argument(
        "-j", "--jobs", type=int, default=4, help="loaders installed at once (default 4)"
    )
    stat = sub.add_parser("status", help="which loaders are installed")
    stat.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tools = tools_dir()
    if args.cmd == "install":
        unknown = [h for h in args.harness if h not in found]
        if unknown:
            parser.error(f"no loader for {', '.join(unknown)}; loaders: {', '.join(found)}")
        names = args.harness or [n for n, m in found.items() if installs_by_default(m)]
        print(f"installing {len(names)} loaders into {tools} ({args.jobs} at once) ...", flush=True)
        failed = 0
        # Each loader installs into its own subfolder with its own scratch HOME, and mostly
        # waits on the registry, so several run at once (CI's install step is most of it).
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            running = {pool.submit(_timed, found[n].install, tools): n for n in names}
            for done in as_completed(running):
                name = running[done]
                mod = found[name]
                try:
                    path, seconds = done.result()
                except Exception as exc:  # report every loader, then fail
                    print(f"  {name} ({mod.PACKAGE}@{mod.VERSION}): FAILED: {exc}", file=sys.stderr)
                    failed += 1
                    continue
                took = f"{seconds:.0f} s"
                print(f"  {name} ({mod.PACKAGE}@{mod.VERSION}, {took}): {path}", flush=True)
        return 1 if failed else 0
    rows = {}
    for name, mod in found.items():
        where = mod.find(tools)
        rows[name] = {
            "package": mod.PACKAGE,
            "version": mod.VERSION,
            "installed": str(where) if where else None,
        }
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for name, row in rows.items():
            print(f"{name:<11} {row['package']}@{row['version']}: {row['installed'] or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
