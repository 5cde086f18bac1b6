#!/usr/bin/env python3
"""Install a trajconv export with the real CLI's own ``import`` (OpenCode, or its fork Kilo).

usage: python prepare.py [--home DIR] [--cwd DIR] [--<cli> PATH] [--dry-run]

Reads ``trajconv-export.json`` and the export document (``<cli>-export.json``) beside this
file, checks their sha256, validates the document, refuses a session id that is already in the
database (exit 3), then runs ``<cli> import <document>`` in the session's directory (the CLI
files an imported session under the project of the directory it runs in) and checks with
``<cli> export`` that every message and part arrived as written. The import writes row by
row; if it fails or the check does not match, the session is removed again with ``<cli>
session delete`` (messages and parts go with it), so the database is never left with half a
session. ``--home DIR`` installs into another home (HOME and the XDG folders inside it).
``--dry-run`` prints the plan and writes nothing. Standard library only. ``FLAVOUR`` (filled
in by trajconv's writer) names the CLI, its data folder, database and documents.

Sub-agents are documents of their own under ``<cli>-export-children/`` (``info.parentID``
names the session that spawned each), imported after the parent in the manifest's order and
checked the same way; a failure removes every session this run imported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from trajconv.codecs.prepare_safe import UnsafeHome, open_folder  # prepare: inline

HERE = Path(__file__).resolve().parent
FLAVOUR: dict[str, str] = {}  # filled by the writer
CLI = FLAVOUR.get("cli", "opencode")
LABEL = FLAVOUR.get("label", "OpenCode")
DOCUMENT = FLAVOUR.get("document", "opencode-export.json")
CHILDREN = FLAVOUR.get("children", "opencode-export-children")
TIMEOUT = 600
#: the session's model is the source's own (a session of the CLI's lineage: kept when the home
#: configures no model), or another harness's (then a model must be configured, or given
#: with --model)
ROUND_TRIP = False


def fail(code: int, message: str) -> NoReturn:
    print(f"prepare: {message}", file=sys.stderr)
    raise SystemExit(code)


def check_files() -> list[tuple[str, dict[str, Any]]]:
    """Every file checked against the manifest; the documents to import, in order (the
    session, then its children's)."""
    manifest = json.loads((HERE / "trajconv-export.json").read_text("utf-8"))
    for entry in manifest["files"]:
        if entry["path"] == "prepare.py":
            continue
        path = HERE / entry["path"]
        if not path.is_file():
            fail(1, f"missing file {entry['path']}")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"] or len(data) != entry["size"]:
            fail(1, f"{entry['path']}: sha256/size do not match the manifest")
    names = [DOCUMENT] + [
        e["path"] for e in manifest["files"] if e["path"].startswith(CHILDREN + "/")
    ]
    docs = []
    for name in names:
        doc = json.loads((HERE / name).read_text("utf-8"))
        problems = validate(doc)
        if problems:
            fail(1, f"{name}: " + "; ".join(problems[:5]))
        docs.append((name, dict(doc)))
    return docs


def validate(doc: Any) -> list[str]:
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict):
        return [f"not a {CLI} export document (no info)"]
    info = doc["info"]
    problems = []
    if not isinstance(info.get("id"), str) or not info["id"].startswith("ses_"):
        problems.append("info.id must be a ses_ id")
    if not isinstance(info.get("directory"), str) or not info["directory"]:
        problems.append("info.directory must be a non-empty string")
    messages = doc.get("messages")
    if not isinstance(messages, list):
        return [*problems, "messages must be a list"]
    for i, msg in enumerate(messages):
        minfo = msg.get("info") if isinstance(msg, dict) else None
        if not isinstance(minfo, dict) or not str(minfo.get("id", "")).startswith("msg_"):
            problems.append(f"messages[{i}].info.id must be a msg_ id")
            continue
        for j, part in enumerate(msg.get("parts") or []):
            if not isinstance(part, dict) or not str(part.get("id", "")).startswith("prt_"):
                problems.append(f"messages[{i}].parts[{j}].id must be a prt_ id")
    return problems


def environment(home: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if home is not None:
        env |= {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
    return env


def database(env: dict[str, str]) -> Path:
    """Where the CLI keeps its database for this environment (OpenCode 1.18.x, Kilo 7.7.x):
    ``$OPENCODE_DB`` / ``$KILO_DB`` (absolute, or relative to the data folder), else
    ``opencode.db`` / ``kilo.db`` in ``$XDG_DATA_HOME/opencode`` / ``kilo``."""
    share = Path(env.get("XDG_DATA_HOME") or Path(env["HOME"]) / ".local" / "share")
    data = share / FLAVOUR.get("data", "opencode")
    override = env.get(FLAVOUR.get("db_env", "OPENCODE_DB"))
    if override:
        return Path(override) if os.path.isabs(override) else data / override
    return data / FLAVOUR.get("db", "opencode.db")


def session_exists(db: Path, sid: str) -> bool:
    if not db.is_file():
        return False
    uri = f"file:{quote(str(db))}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            row = con.execute("select 1 from session where id = ?", (sid,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        # import would merge into an existing session silently: never guess
        fail(1, f"cannot check {db} for session {sid}: {exc}")
    return row is not None


def cli(exe: str, args: list[str], cwd: Path, env: dict[str, str]) -> str:
    # Its output goes to a file, not a pipe: the CLI (a Bun binary) can exit before a pipe
    # has taken all of a long output (seen here: `opencode export` cut at 64 KiB).
    with tempfile.TemporaryFile() as out:
        proc = subprocess.run(
            [exe, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.PIPE, text=True, timeout=TIMEOUT, check=False,
        )  # fmt: skip
        out.seek(0)
        stdout = out.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(
            f"{CLI} {args[0]} exited {proc.returncode}: {(proc.stderr or stdout)[-800:]}"
        )
    return stdout


def _without_comments(text: str) -> str:
    """JSONC as JSON: ``//`` and ``/* */`` comments outside strings removed, and commas
    before a closing bracket."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    import re

    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def configured_model(env: dict[str, str], cwd: Path) -> tuple[str, str] | None:
    """The ``provider/model`` the CLI runs a session with when ``-m`` is not given, as this
    home configures it, and where (OpenCode 1.18; Kilo 7.7 names them after itself):
    ``OPENCODE_CONFIG_CONTENT``, the project's ``opencode.json[c]``, ``OPENCODE_CONFIG``, then
    the global ``opencode.jsonc``, ``opencode.json``, ``config.json`` in
    ``$XDG_CONFIG_HOME/opencode`` (the files its log says it loads; a later one overrides an
    earlier)."""
    data = FLAVOUR.get("data", "opencode")
    config_dir = Path(env.get("XDG_CONFIG_HOME") or Path(env["HOME"]) / ".config") / data
    var = CLI.upper()
    places: list[tuple[str, str | None]] = [
        (f"{var}_CONFIG_CONTENT", env.get(f"{var}_CONFIG_CONTENT"))
    ]
    files = [cwd / f"{CLI}.jsonc", cwd / f"{CLI}.json"]
    if env.get(f"{var}_CONFIG"):
        files.append(Path(env[f"{var}_CONFIG"]))
    files += [config_dir / n for n in (f"{CLI}.jsonc", f"{CLI}.json", "config.json")]
    for file in files:
        try:
            places.append((str(file), file.read_text("utf-8")))
        except OSError:
            continue
    for where, text in places:
        if not text:
            continue
        try:
            data = json.loads(_without_comments(text))
        except ValueError as exc:
            fail(1, f"cannot read the {LABEL} config {where}: {exc}")
        model = data.get("model") if isinstance(data, dict) else None
        if isinstance(model, str) and "/" in model:
            return model, where
    return None


def bind_model(doc: dict[str, Any], env: dict[str, str], cwd: Path, given: str | None) -> bool:
    """Set the session's ``info.model`` (what ``<cli> run --session`` answers with when
    ``-m`` is not given: a model the home does not have is "Unexpected server error") to
    the model the home configures, or ``given``; keep the source's on a round trip when
    the home configures none; refuse by name otherwise. True when it changed."""
    current = doc["info"].get("model") or {}
    named = f"{current.get('providerID')}/{current.get('id')}" if current else None
    found = (given, "--model") if given else configured_model(env, cwd)
    if found is None:
        if ROUND_TRIP and named:
            print(f"model {named} kept (the source session's; the home configures no model)")
            return False
        fail(
            3,
            f"refusing to install: the session names the model {named} of another "
            f"harness and the home configures no {LABEL} model, so `{CLI} run --session` "
            f'could not continue it; set "model" in ~/.config/{FLAVOUR.get("data", "opencode")}/'
            f"{CLI}.json or pass --model PROVIDER/MODEL",
        )
    model, where = found
    provider, name = model.split("/", 1)
    if model == named:
        print(f"model {model} kept ({where})")
        return False
    doc["info"]["model"] = {"id": name, "providerID": provider}
    print(f"binds model {model} ({where}); the session named {named}")
    return True


def comparable(doc: dict[str, Any]) -> list[Any]:
    """The messages and parts as the CLI keeps them (import copies both as they are)."""
    return [[m["info"], m.get("parts") or []] for m in doc.get("messages") or []]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=None, help="home to install into")
    parser.add_argument("--cwd", type=Path, default=None, help="directory to file it under")
    parser.add_argument(f"--{CLI}", dest="exe", default=None, help=f"the {CLI} CLI (default: PATH)")
    parser.add_argument(
        "--model", default=None, help="PROVIDER/MODEL to continue with (default: the home's)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    args = parser.parse_args(argv)
    if args.model is not None and "/" not in args.model:
        fail(2, f"--model {args.model}: give it as PROVIDER/MODEL")
    docs = check_files()
    doc = docs[0][1]
    sid = doc["info"]["id"]
    cwd = (args.cwd or Path(doc["info"]["directory"])).expanduser()
    home = args.home.expanduser().resolve() if args.home else None
    env = environment(home)
    db = database(env)
    for _name, each in docs:
        if session_exists(db, each["info"]["id"]):
            fail(3, f"refusing to replace existing session {each['info']['id']} in {db}")
    exe = args.exe or shutil.which(CLI, path=env.get("PATH"))
    if not exe:
        package = FLAVOUR.get("package", "opencode-ai")
        fail(1, f"the {CLI} CLI is not on PATH; install {package} or pass --{CLI} PATH")
    if not cwd.is_dir():
        fail(1, f"{cwd} does not exist here; pass --cwd DIR (the session's project folder)")
    bound = bind_model(doc, env, cwd, args.model)
    messages = len(doc.get("messages") or [])
    kids = f" and {len(docs) - 1} sub-agent sessions" if len(docs) > 1 else ""
    print(
        f"{'would import' if args.dry_run else 'import'} session {sid} "
        f"({messages} messages){kids} into {db} from {cwd}"
    )
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    if home is not None:
        # the home's folders the CLI writes to are made here, none through a symlink (the
        # CLI's own writes follow what it finds; a symlink in the home is refused first)
        data = FLAVOUR.get("data", "opencode")
        for rel in (f".local/share/{data}", f".local/state/{data}", f".config/{data}"):
            try:
                home.mkdir(parents=True, exist_ok=True)
                os.close(open_folder(home, tuple(rel.split("/"))))
            except UnsafeHome as exc:
                fail(1, f"refusing to write under {home}: {exc}")
            except OSError as exc:
                fail(1, f"cannot write {home / rel}: {exc.strerror or exc}")
    scratch = Path(tempfile.mkdtemp(prefix=f"trajconv-{CLI}-"))
    imported: list[str] = []
    try:
        for name, each in docs:
            each_id = each["info"]["id"]
            document = HERE / name
            if bound:  # the documents as bound (sub-agents too); the export is left as written
                each["info"]["model"] = doc["info"]["model"]
                document = scratch / f"{len(imported)}.json"
                document.write_text(json.dumps(each, ensure_ascii=False), "utf-8")
            imported.append(each_id)  # removed again on a failure, even a partial import
            out = cli(exe, ["import", str(document)], cwd, env)
            if f"Imported session: {each_id}" not in out:
                raise RuntimeError(f"{CLI} import said: {out.strip()[-300:]}")
            back = json.loads(cli(exe, ["export", each_id], cwd, env))
            if comparable(back) != comparable(each):
                raise RuntimeError(
                    f"{CLI} export {each_id} does not give back the messages written"
                )
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        for each_id in reversed(imported):
            if session_exists(db, each_id):
                try:
                    cli(exe, ["session", "delete", each_id], cwd, env)
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as undo:
                    fail(1, f"{exc}; removing the partial session {each_id} failed too: {undo}")
        fail(1, f"{exc}; nothing was kept")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    resume = [CLI, "--session", sid]
    print(f"installed; resume in {cwd} with: " + " ".join(shlex.quote(a) for a in resume))
    return 0


if __name__ == "__main__":
    sys.exit(main())
