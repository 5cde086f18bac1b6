#!/usr/bin/env python3
"""Install a trajconv Deep Agents export as a thread of ~/.deepagents/.state/sessions.db.

usage: python prepare.py [--home DIR] [--dry-run]

It uses the real ``langgraph`` and ``deepagents`` packages to write the thread the way a
real run does: run with a python that lacks them, it finds the python of the installed
``dcode`` (its script's ``#!`` line; ``dcode`` on PATH) and runs itself with that one,
and says so; with neither it fails, ``--dry-run`` too, naming what to run. Reads
``trajconv-export.json`` and ``checkpoint.json`` beside this file, checks their sha256,
validates the seed, refuses a thread id that already exists (exit 3), then runs a one-
node graph whose state is deepagents' own ``DeepAgentState`` messages channel (a
``DeltaChannel``) with the messages as input, so they land as a ``messages`` write on an
input checkpoint, as in a real run. ``dcode threads list`` then counts them and a
continued conversation keeps them all (``proof/``, seeding
experiment D/E). The checkpoint metadata carries ``agent_name``, ``cwd``,
``updated_at``, ``git_branch`` and the ACP markers (``acp_session: true``), so ACP
``session/load`` accepts the thread. No model is called. ``--dry-run`` prints the plan
and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from trajconv.codecs.prepare_safe import (  # prepare: inline
    Undo,
    UnsafeHome,
    check_file,
    fail,
    open_folder,
)

HERE = Path(__file__).resolve().parent
SEED = "checkpoint.json"
SEED_FORMAT = "trajconv.deepagents-seed/1"
DB_REL = Path(".deepagents") / ".state" / "sessions.db"
NODE = "trajconv_import"
TYPES = ("human", "ai", "tool", "system")
PACKAGES = ("deepagents", "langgraph", "langgraph.checkpoint.sqlite", "langchain_core")
HINT = (
    "this prepare needs the deepagents-code packages (langgraph, deepagents, "
    "langgraph-checkpoint-sqlite) and found no dcode on PATH whose python has them; "
    "install dcode (pip install deepagents-code) or run it with that python: "
    "/path/to/dcode-venv/bin/python prepare.py"
)
_PROBE = "import " + ", ".join(PACKAGES)


def has_packages() -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in PACKAGES)
    except ModuleNotFoundError:  # a parent package is missing
        return False


def dcode_python() -> str | None:
    """The python of the ``dcode`` on PATH, when it has the packages (a venv's script
    names its python on its ``#!`` line)."""
    dcode = shutil.which("dcode")
    if dcode is None:
        return None
    try:
        with open(dcode, "rb") as fh:
            first = fh.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    python = first[2:].strip().split(" ")[0]
    if not python or not os.access(python, os.X_OK):
        return None
    probe = subprocess.run([python, "-c", _PROBE], capture_output=True, check=False)
    return python if probe.returncode == 0 else None


def check_files() -> dict[str, Any]:
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    for entry in manifest["files"]:
        if entry["path"] == "prepare.py":
            continue
        check_file(HERE, entry)
    seed = json.loads((HERE / SEED).read_text("utf-8"))
    problems = validate(seed)
    if problems:
        fail(1, f"{SEED}: " + "; ".join(problems))
    return dict(seed)


def validate(seed: Any) -> list[str]:
    if not isinstance(seed, dict) or seed.get("format") != SEED_FORMAT:
        return [f"not a {SEED_FORMAT} document"]
    problems = []
    if not isinstance(seed.get("thread_id"), str) or not seed["thread_id"]:
        problems.append("thread_id must be a non-empty string")
    if seed.get("checkpoint_ns") != "":
        problems.append("only the root namespace ('') can be installed")
    if not isinstance(seed.get("cwd"), str) or not seed["cwd"]:
        problems.append("cwd must be a non-empty string")
    msgs = seed.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return [*problems, "messages must be a non-empty list"]
    ids = [m.get("id") if isinstance(m, dict) else None for m in msgs]
    if any(not isinstance(i, str) or not i for i in ids):
        problems.append("every message needs an id")
    elif len(set(ids)) != len(ids):
        problems.append("message ids repeat")
    if any(not isinstance(m, dict) or m.get("type") not in TYPES for m in msgs):
        problems.append(f"message types must be one of {TYPES}")
    return problems


def thread_exists(db: Path, thread_id: str) -> bool:
    if not db.exists():
        return False
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute(
            "select 1 from checkpoints where thread_id = ? limit 1", (thread_id,)
        ).fetchone()
    except sqlite3.OperationalError:
        row = None  # no checkpoints table yet
    finally:
        conn.close()
    return row is not None


def metadata(seed: dict[str, Any]) -> dict[str, Any]:
    # Config metadata is copied into every checkpoint's metadata.
    meta: dict[str, Any] = {
        "agent_name": seed.get("agent_name") or "agent",
        "cwd": seed["cwd"],
        "acp_session": True,
    }
    for key in ("updated_at", "git_branch"):
        if isinstance(seed.get(key), str) and seed[key]:
            meta[key] = seed[key]
    return meta


def pinned(home: Path, undo: Undo) -> tuple[int, str]:
    """The database's folder, opened (made) from ``home`` without following a symlink,
    and the path to open the database by: through that open folder (``/proc/self/fd``)
    where the system has it, so a folder swapped for a symlink later is not followed."""
    parts = DB_REL.parts
    fd = open_folder(home, parts[:-1], None, undo)
    try:
        if stat.S_ISLNK(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            raise UnsafeHome(f"{home / DB_REL}: a symlink")
    except FileNotFoundError:
        pass
    except BaseException:
        os.close(fd)
        raise
    through = f"/proc/self/fd/{fd}"
    name = os.path.join(through, parts[-1]) if os.path.isdir(through) else str(home / DB_REL)
    return fd, name


def install(db: Path, seed: dict[str, Any], home: Path | None = None) -> None:
    if home is not None:
        undo = Undo(home)
        try:
            fd, name = pinned(home, undo)
        except UnsafeHome as exc:
            fail(1, f"refusing to write under {home}: {exc}; nothing was installed")
        except OSError as exc:
            undo.rollback()
            fail(1, f"cannot write {db}: {exc.strerror or exc}; nothing was installed")
        existed = os.path.exists(name)
        try:
            install(Path(name), seed)
        except (OSError, sqlite3.Error) as exc:
            if not existed:  # the database is ours: it goes, as the folders made for it
                for suffix in ("", "-wal", "-shm", "-journal"):
                    with contextlib.suppress(OSError):
                        os.unlink(DB_REL.name + suffix, dir_fd=fd)
            undo.rollback()
            fail(1, f"cannot write {db}: {getattr(exc, 'strerror', None) or exc}; nothing "
                 "was installed")  # fmt: skip
        except BaseException:
            undo.rollback()
            raise
        finally:
            os.close(fd)
        return
    try:
        import typing

        from deepagents.graph import DeepAgentState  # type: ignore[import-not-found,unused-ignore]
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
        from langgraph.checkpoint.sqlite import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            SqliteSaver,
        )
        from langgraph.graph import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            END,
            START,
            StateGraph,
        )
        from typing_extensions import TypedDict
    except ImportError as exc:
        fail(1, f"{HINT} ({exc})")
    classes: dict[str, Any] = {
        "human": HumanMessage,
        "ai": AIMessage,
        "tool": ToolMessage,
        "system": SystemMessage,
    }
    msgs = [
        classes[m["type"]](**{k: v for k, v in m.items() if k != "type"}) for m in seed["messages"]
    ]
    # deepagents' own declaration of the channel: DeltaChannel(..., snapshot_frequency=50).
    channel = typing.get_type_hints(DeepAgentState, include_extras=True)["messages"]
    state = typing.cast(Any, TypedDict)("State", {"messages": channel})
    conn = sqlite3.connect(str(db), check_same_thread=False, timeout=30)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        graph = StateGraph(state)
        graph.add_node(NODE, lambda _state: {})
        graph.add_edge(START, NODE)
        graph.add_edge(NODE, END)
        config = {"configurable": {"thread_id": seed["thread_id"]}, "metadata": metadata(seed)}
        try:
            graph.compile(checkpointer=saver).invoke({"messages": msgs}, config)
        except BaseException:
            # The thread did not exist before; leave no partial thread behind.
            conn.execute("delete from writes where thread_id = ?", (seed["thread_id"],))
            conn.execute("delete from checkpoints where thread_id = ?", (seed["thread_id"],))
            conn.commit()
            raise
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path.home(), help="home to install into")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)
    own = has_packages()
    python = None if own else dcode_python()
    if not own and python is None:
        fail(1, HINT)
    seed = check_files()
    db = args.home.expanduser().resolve() / DB_REL
    tid = seed["thread_id"]
    if thread_exists(db, tid):
        fail(3, f"refusing to replace existing thread {tid} in {db}")
    n = len(seed["messages"])
    if python is not None:
        print(f"using the python of dcode, which has the deepagents packages: {python}")
    if args.dry_run:
        print(f"would write thread {tid} ({n} messages, cwd {seed['cwd']}) into {db}")
        print(f"dry run: nothing written; resume with: dcode -r {tid}")
        return 0
    if python is not None:
        sys.stdout.flush()
        again = [python, str(Path(__file__).resolve()), "--home", str(args.home)]
        return subprocess.call(again)
    home = args.home.expanduser().resolve()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(1, f"cannot make {home}: {exc.strerror or exc}")
    install(db, seed, home)
    if not thread_exists(db, tid):
        fail(1, f"thread {tid} is not in {db} after writing")
    print(f"wrote thread {tid} ({n} messages, cwd {seed['cwd']}) into {db}")
    print(f"installed; resume with: dcode -r {tid}  (ACP: session/load with cwd {seed['cwd']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
