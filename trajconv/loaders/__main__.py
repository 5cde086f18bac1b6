"""Install or locate the pinned native loaders.

usage: python -m trajconv.loaders install [HARNESS ...]   (default: every loader)
       python -m trajconv.loaders status [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from trajconv.loaders import BROWSERS, LOADERS, tools_dir

INSTALLABLE = (*LOADERS, *BROWSERS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trajconv.loaders", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="install pinned loaders into the tools folder")
    inst.add_argument("harness", nargs="*", help=f"any of: {', '.join(INSTALLABLE)}")
    stat = sub.add_parser("status", help="which loaders are installed")
    stat.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tools = tools_dir()
    if args.cmd == "install":
        unknown = [h for h in args.harness if h not in INSTALLABLE]
        if unknown:
            parser.error(f"no loader for {', '.join(unknown)}; loaders: {', '.join(INSTALLABLE)}")
        failed = 0
        for name in args.harness or list(INSTALLABLE):
            mod = importlib.import_module(f"trajconv.loaders.{name}")
            print(f"installing {name} ({mod.PACKAGE}@{mod.VERSION}) into {tools} ...", flush=True)
            try:
                path = mod.install(tools)
            except Exception as exc:  # report every loader, then fail
                print(f"  {name}: FAILED: {exc}", file=sys.stderr)
                failed += 1
                continue
            print(f"  {name}: {path}")
        return 1 if failed else 0
    rows = {}
    for name in INSTALLABLE:
        mod = importlib.import_module(f"trajconv.loaders.{name}")
        found = mod.find(tools)
        rows[name] = {
            "package": mod.PACKAGE,
            "version": mod.VERSION,
            "installed": str(found) if found else None,
        }
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for name, row in rows.items():
            print(f"{name:<11} {row['package']}@{row['version']}: {row['installed'] or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
