"""Install or locate the pinned native loaders (every module of ``proof/loaders/``).

usage: python -m proof install [NAME ...]   (default: every loader from a registry)
       python -m proof status [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from proof import all_loaders, installs_by_default, tools_dir


def main(argv: list[str] | None = None) -> int:
    found = all_loaders()
    parser = argparse.ArgumentParser(prog="python -m proof", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    inst = sub.add_parser("install", help="install pinned loaders into the tools folder")
    inst.add_argument("harness", nargs="*", help=f"any of: {', '.join(found)}")
    stat = sub.add_parser("status", help="which loaders are installed")
    stat.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tools = tools_dir()
    if args.cmd == "install":
        unknown = [h for h in args.harness if h not in found]
        if unknown:
            parser.error(f"no loader for {', '.join(unknown)}; loaders: {', '.join(found)}")
        failed = 0
        names = args.harness or [n for n, m in found.items() if installs_by_default(m)]
        for name in names:
            mod = found[name]
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
