"""Sessions as training data: ``trajconv dataset SOURCE... --format F -o DIR``.

Every session (and each of its sub-agents, as a row of its own linked to its parent) becomes
one line or row of ``DIR``:

* ``openai``: ``DIR/openai.jsonl``, ``{"messages": [...], "metadata": {...}}`` with roles
  system/user/assistant/tool; an assistant's tool calls as ``{id, type: "function",
  function: {name, arguments: <JSON text>}}``, each answered by exactly one later ``tool``
  message with its ``tool_call_id`` (:func:`validate_openai` checks a line);
* ``sharegpt``: ``DIR/sharegpt.jsonl``, ``{"conversations": [{"from": human | gpt | system |
  function_call | observation, "value"}], "metadata": {...}}``;
* ``parquet``: ``DIR/sessions.parquet``, one row per session with the ``messages`` above
  and outcome columns (harness, model, turns, tool calls, failed calls, truncated);
* any registered codec whose exports are documents (no home resumes them, such as ATIF):
  ``DIR/<format>/<n>.json``, one document per session, written by that codec's own writer.

``DIR/manifest.json`` says, per session, where its row came from (Snapshot id), what was
left out and why (counted by reason: reasoning where the format has no place for it, a call
never answered, a result without its call, records the format has no role for) and what
redaction replaced, by kind. A session that cannot be read (a damaged Snapshot in a store)
is named there and skipped; the rest is written.

Redaction is on unless ``redact=False`` (:mod:`trajconv.redact`): every text that goes out,
titles, prompts, answers, tool arguments and output, is scanned, and a field that cannot be
scanned within bounds is dropped and counted. Sessions are read one at a time (in this
process, in ``jobs`` worker processes, or on a Dask distributed cluster); each one's rows
are made where it is read and written in one sorted order, so the output is the same bytes
however the work was spread.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajconv.errors import TrajconvError, UsageError

MANIFEST_FORMAT = "trajconv.dataset/1"
TABLE_FORMATS = ("openai", "sharegpt", "parquet")
PARQUET_BATCH = 256
PARQUET_COLUMNS: tuple[tuple[str, str], ...] = (
    ("harness", "string"),
    ("session_id", "string"),
    ("snapshot_id", "string"),
    ("parent_session_id", "string"),
    ("parent_call_id", "string"),
    ("title", "string"),
    ("model", "string"),
    ("cwd", "string"),
    ("created_at", "string"),
    ("updated_at", "string"),
    ("turns", "int64"),
    ("tool_calls", "int64"),
    ("failed_calls", "int64"),
    ("truncated", "bool_"),
)
"""The ``parquet`` format's columns before ``messages`` (types as in
:data:`trajconv.parquet.Column`)."""


def document_formats() -> list[str]:
    """Registered codecs whose exports are documents (nothing to resume), usable here."""
    from trajconv.codecs import registry

    return [c.name for c in registry.all_codecs() if c.can_write and not c.capabilities.resumable]


def formats() -> list[str]:
    return [*TABLE_FORMATS, *document_formats()]


# -- what to export ----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Unit:
    """One session to export, as something a worker process can be handed."""

    harness: str
    session_id: str
    where: str
    """A native path, a store location or a Snapshot file."""
    how: str
    """``native`` (read by the harness's codec), ``store`` (``snapshot`` names the latest
    Snapshot) or ``file`` (a Snapshot file)."""
    snapshot: str | None = None

    def label(self) -> str:
        return f"{self.harness} {self.session_id}"

    def load(self, limits: Any = None) -> Any:
        if self.how == "native":
            from trajconv.codecs import registry

            return registry.get(self.harness).read(
                Path(self.where), session=self.session_id, limits=limits
            )
        if self.how == "store":
            from trajconv.store import open_store

            assert self.snapshot is not None
            with open_store(self.where) as store:
                return store.load(self.snapshot)
        from trajconv.store import load_input

        return load_input(Path(self.where))


def units_of(
    sources: Iterable[str],
    *,
    homes: Iterable[Path] = (),
    stores: Iterable[str] = (),
    harnesses: Iterable[str] | None = None,
) -> list[Unit]:
    """Every session named: paths or ids (as ``convert`` takes them), every session of the
    ``homes`` and of the ``stores``; sorted, each once."""
    from trajconv import find
    from trajconv.store import is_store, is_url

    harnesses = list(harnesses or []) or None
    found: set[Unit] = set()
    for home in homes:
        if not Path(home).is_dir():
            raise UsageError(f"--home {home}: no such folder")
        listing = find.list_sessions(harnesses, Path(home))
        found.update(Unit(r.harness, r.session_id, str(r.path), "native") for r in listing.sessions)
    for location in stores:
        found.update(_store_units(location))
    for source in sources:
        path = Path(source)
        if is_url(source) or (path.is_dir() and is_store(path)):
            found.update(_store_units(source))
        elif path.is_file() and find.sniff_snapshot(path):
            snap = Unit("", "", str(path), "file").load()
            found.add(Unit(snap.source.harness, snap.session.id, str(path), "file"))
        elif path.exists():
            harness = find.detect(path) if not harnesses else harnesses[0]
            from trajconv.codecs import registry

            codec = registry.get(harness)
            refs = codec.discover(path) if codec.can_discover else []
            if refs:
                found.update(Unit(harness, r.session_id, str(r.path), "native") for r in refs)
            else:
                snap = codec.read(path)
                found.add(Unit(harness, snap.session.id, str(path), "native"))
        elif "/" in source or source.startswith("."):
            raise UsageError(f"{source}: no such file or folder")
        else:
            ref = find.pick(source, harnesses=harnesses)
            found.add(Unit(ref.harness, ref.session_id, str(ref.path), "native"))
    return sorted(found)


def _store_units(location: str) -> Iterator[Unit]:
    from trajconv.store import open_store

    with open_store(location) as store:
        for entry in store.sessions():
            yield Unit(entry["harness"], entry["session_id"], location, "store", entry["latest_id"])


# -- one session as rows ---------------------------------------------------------------------


class _NoRedaction:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def text(self, value: str) -> str:
        return value

    def json(self, value: Any) -> Any:
        return value


@dataclass
class Conversation:
    """One session's records as OpenAI-style messages, and what they leave out."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    tool_calls: int = 0
    failed_calls: int = 0
    truncated: bool = False


def conversation(records: Iterable[dict[str, Any]], red: Any) -> Conversation:
    """Records (as the Snapshot holds them) as messages; ``red`` redacts every text."""
    conv = Conversation()
    msgs = conv.messages
    placed: dict[str, dict[str, Any]] = {}  # call id -> its assistant message
    answered: set[str] = set()
    for r in records:
        kind = r["kind"]
        if kind in ("user", "system", "assistant"):
            msgs.append({"role": kind, "content": red.text(r.get("text") or "")})
            conv.turns += kind == "user"
        elif kind == "tool-call":
            call = r["call"]
            cid = call["id"]
            if cid in placed:
                conv.left_out["duplicate-call"] += 1
                continue
            args = call.get("arguments")
            if isinstance(args, dict) and set(args) == {"_raw"} and isinstance(args["_raw"], str):
                text = red.text(args["_raw"])  # arguments the source held as unparsable text
            else:
                text = orjson.dumps(red.json(args)).decode()
            entry = {
                "id": cid,
                "type": "function",
                "function": {"name": red.text(call["name"]), "arguments": text},
            }
            last = msgs[-1] if msgs else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": None}
                msgs.append(last)
            last.setdefault("tool_calls", []).append(entry)
            placed[cid] = last
            conv.tool_calls += 1
        elif kind == "tool-result":
            result = r["result"]
            cid = result["call_id"]
            if cid not in placed:
                conv.left_out["orphan-result"] += 1
                continue
            if cid in answered:
                conv.left_out["repeated-result"] += 1
                continue
            answered.add(cid)
            msgs.append(
                {"role": "tool", "tool_call_id": cid, "content": red.text(result["output"])}
            )
            conv.failed_calls += result.get("ok") is False
            conv.truncated = conv.truncated or bool(result.get("truncated"))
        else:  # reasoning, observation: no role for them in these formats
            conv.left_out[kind] += 1
    for cid, msg in placed.items():
        if cid not in answered:  # a call no result answers cannot stand in the format
            msg["tool_calls"] = [c for c in msg["tool_calls"] if c["id"] != cid]
            conv.left_out["pending-call"] += 1
            conv.tool_calls -= 1
    for msg in msgs:
        if msg.get("tool_calls") == []:
            del msg["tool_calls"]
    conv.messages = [m for m in msgs if m["content"] is not None or m.get("tool_calls")]
    return conv


def sharegpt(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """OpenAI-style messages as ShareGPT turns."""
    out: list[dict[str, str]] = []
    names = {"user": "human", "assistant": "gpt", "system": "system", "tool": "observation"}
    for m in messages:
        if m["content"] is not None:
            out.append({"from": names[m["role"]], "value": m["content"]})
        for call in m.get("tool_calls", ()):
            fn = call["function"]
            try:
                arguments = json.loads(fn["arguments"])
            except ValueError:
                arguments = fn["arguments"]
            value = json.dumps({"name": fn["name"], "arguments": arguments}, ensure_ascii=False)
            out.append({"from": "function_call", "value": value})
    return out


@dataclass
class Done:
    """What one unit gave: its rows (ready to write) and its manifest entries."""

    rows: list[Any]
    entries: list[dict[str, Any]]


def export_unit(unit: Unit, fmt: str, redact: bool = True, limits: Any = None) -> Done:
    """Read one session and make its rows: the session's own, then each sub-agent's."""
    try:
        snap = unit.load(limits)
    except (TrajconvError, OSError, ValueError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Done([], [{"harness": unit.harness, "session_id": unit.session_id, "error": text}])
    from trajconv.snapshot.spool import record_dicts

    read_diags = {d.code: d.count for d in snap.diagnostics}
    parts: list[tuple[Any, Any, str | None]] = [(snap.session, snap.records, None)]
    parts += [(c.session, c.records, c.parent_call_id) for c in snap.children]
    rows: list[Any] = []
    entries: list[dict[str, Any]] = []
    for i, (session, records, parent_call) in enumerate(parts):
        red: Any = _redactor() if redact else _NoRedaction()
        row: Any
        child = i > 0
        meta = {
            "harness": snap.source.harness,
            "session_id": session.id,
            "snapshot_id": snap.id,
            "parent_session_id": session.parent_session_id,
            "parent_call_id": parent_call,
            "title": red.text(session.title) if session.title else session.title,
            "model": session.model,
            "cwd": session.cwd,
            "created_at": session.created_at,
            "updated_at": session.updated_at,
        }
        if fmt in document_formats():
            row, left_out = _document(snap, session, records, fmt, red)
            conv = Conversation(left_out=left_out)
        else:
            conv = conversation(record_dicts(records), red)
            counts = {
                "turns": conv.turns,
                "tool_calls": conv.tool_calls,
                "failed_calls": conv.failed_calls,
                "truncated": conv.truncated,
            }
            if fmt == "openai":
                row = {"messages": conv.messages, "metadata": {**meta, **counts}}
            elif fmt == "sharegpt":
                row = {"conversations": sharegpt(conv.messages), "metadata": {**meta, **counts}}
            else:  # parquet: the row's columns
                row = {**meta, **counts, "messages": _arrow_messages(conv.messages)}
        rows.append(row)
        entries.append(
            {
                "harness": snap.source.harness,
                "session_id": session.id,
                "snapshot_id": snap.id,
                "parent_session_id": session.parent_session_id,
                "messages": len(conv.messages),
                "left_out": dict(sorted(conv.left_out.items())),
                "redactions": dict(sorted(red.counts.items())),
                "read_diagnostics": read_diags if not child else {},
            }
        )
    return Done(rows, entries)


def _redactor() -> Any:
    from trajconv.redact import Redactor

    return Redactor()


def _arrow_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with every column present (Arrow wants one struct type)."""
    return [
        {
            "role": m["role"],
            "content": m["content"],
            "tool_call_id": m.get("tool_call_id"),
            "tool_calls": m.get("tool_calls", []),
        }
        for m in messages
    ]


def _document(
    snap: Any, session: Any, records: Any, fmt: str, red: Any
) -> tuple[bytes, Counter[str]]:
    """One session as the document codec ``fmt`` writes it, from a Snapshot of its records
    alone, redacted (a sub-agent is a document of its own, as it is a row of its own)."""
    from trajconv.codecs import registry
    from trajconv.redact import redacted

    one = redacted(snap, red, only=session)
    plan = registry.get(fmt).plan(one, allow_lossy=True)
    files = [f for f in plan.files if f.path.endswith(".json")]
    if len(files) != 1:
        raise TrajconvError(f"the {fmt} writer made {len(files)} documents for one session")
    left = Counter({d.code: d.count for d in plan.diagnostics})
    return files[0].read(), left


# -- running it -----------------------------------------------------------------------------


def _in_order(
    units: list[Unit], fmt: str, redact: bool, jobs: int, scheduler: str | None
) -> Iterator[tuple[Unit, Done]]:
    """Each unit's rows, in the order of ``units``, made here, in processes or on Dask."""
    if scheduler is not None:
        yield from _on_dask(units, fmt, redact, scheduler)
        return
    if jobs <= 1 or len(units) <= 1:
        for unit in units:
            yield unit, export_unit(unit, fmt, redact)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        window = 4 * jobs  # in flight at once: memory stays bounded
        futures: list[Any] = [pool.submit(export_unit, u, fmt, redact) for u in units[:window]]
        for i, unit in enumerate(units):
            if i + window < len(units):
                futures.append(pool.submit(export_unit, units[i + window], fmt, redact))
            yield unit, futures[i].result()
            futures[i] = None  # done: let it go


def _on_dask(
    units: list[Unit], fmt: str, redact: bool, address: str
) -> Iterator[tuple[Unit, Done]]:
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(
            "--scheduler needs Dask distributed: pip install 'trajconv[dask]'"
        ) from None
    try:
        client = Client(address, timeout=30)  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise UsageError(f"--scheduler {address}: cannot reach it ({exc})") from None
    try:
        window = 8 * max(1, len(client.scheduler_info().get("workers", {})))
        futures: list[Any] = [
            client.submit(export_unit, u, fmt, redact, pure=False) for u in units[:window]
        ]
        for i, unit in enumerate(units):
            if i + window < len(units):
                futures.append(
                    client.submit(export_unit, units[i + window], fmt, redact, pure=False)
                )
            yield unit, futures[i].result()
            futures[i] = None  # done: let it go
    finally:
        client.close()  # type: ignore[no-untyped-call]


@dataclass
class Summary:
    out: Path
    format: str
    sessions: int = 0
    rows: int = 0
    failed: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    left_out: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "out": str(self.out),
            "redactions": dict(sorted(self.redactions.items())),
            "left_out": dict(sorted(self.left_out.items())),
        }


def build(
    units: list[Unit],
    fmt: str,
    out: Path,
    *,
    redact: bool = True,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Write the dataset of ``units`` into the new folder ``out`` (whole or not at all)."""
    from trajconv.staging import staged_folder

    if fmt not in formats():
        raise UsageError(f"--format {fmt!r}: one of {', '.join(formats())}")
    summary = Summary(out=out, format=fmt)
    entries: list[dict[str, Any]] = []
    with staged_folder(out, "refusing to write a dataset into it") as stage:
        sink = _sink(fmt, stage)
        try:
            for n, (_unit, done) in enumerate(_in_order(units, fmt, redact, jobs, scheduler), 1):
                summary.sessions += 1
                for entry in done.entries:
                    if "error" in entry:
                        summary.failed += 1
                    else:
                        summary.redactions.update(entry["redactions"])
                        summary.left_out.update(entry["left_out"])
                    entries.append(entry)
                for row in done.rows:
                    sink(row)
                    summary.rows += 1
                if progress is not None:
                    progress(n, len(units))
        finally:
            sink(None)
        manifest = {
            "format": MANIFEST_FORMAT,
            "dataset_format": fmt,
            "redaction": redact,
            "sessions": entries,
            "totals": summary.to_json() | {"out": None},
        }
        (stage / "manifest.json").write_bytes(
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        )
    return summary


def _sink(fmt: str, stage: Path) -> Callable[[Any], None]:
    """A function taking each row in turn, then ``None`` to finish."""
    if fmt in ("openai", "sharegpt"):
        handle = (stage / f"{fmt}.jsonl").open("wb")

        def jsonl(row: Any) -> None:
            if row is None:
                handle.close()
            else:
                handle.write(orjson.dumps(row) + b"\n")

        return jsonl
    if fmt == "parquet":
        return _parquet_sink(stage / "sessions.parquet")
    folder = stage / fmt
    folder.mkdir()
    count = [0]

    def documents(row: Any) -> None:
        if row is not None:
            count[0] += 1
            (folder / f"{count[0]:06d}.json").write_bytes(row)

    return documents


def _parquet_sink(path: Path) -> Callable[[Any], None]:
    from trajconv.parquet import arrow, arrow_fields

    pa, pq = arrow("--format parquet")
    function = pa.struct(arrow_fields(pa, (("name", "string"), ("arguments", "string"))))
    call = pa.struct(
        arrow_fields(pa, (("id", "string"), ("type", "string"), ("function", function)))
    )
    message = pa.struct(
        arrow_fields(
            pa,
            (
                ("role", "string"),
                ("content", "string"),
                ("tool_call_id", "string"),
                ("tool_calls", pa.list_(call)),
            ),
        )
    )
    schema = pa.schema(arrow_fields(pa, (*PARQUET_COLUMNS, ("messages", pa.list_(message)))))
    writer = pq.ParquetWriter(path, schema)
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            batch.clear()

    def parquet(row: Any) -> None:
        if row is None:
            flush()
            writer.close()
            return
        batch.append(row)
        if len(batch) >= PARQUET_BATCH:
            flush()

    return parquet


# -- checking a line ------------------------------------------------------------------------


def validate_openai(line: dict[str, Any]) -> list[str]:
    """What is wrong with one ``openai`` line (empty when nothing): roles, tool calls, and
    every call answered by exactly one later tool message."""
    problems: list[str] = []
    msgs = line.get("messages")
    if not isinstance(msgs, list):
        return ["messages is not a list"]
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"message {i}: role {role!r}")
            continue
        if role == "assistant":
            for call in m.get("tool_calls", []):
                fn = call.get("function", {})
                if call.get("type") != "function" or not isinstance(fn.get("name"), str):
                    problems.append(f"message {i}: a tool call without a function name")
                try:
                    json.loads(fn.get("arguments"))
                except (TypeError, ValueError):
                    problems.append(f"message {i}: arguments are not JSON text")
                if call.get("id") in open_calls or call.get("id") in answered:
                    problems.append(f"message {i}: call id {call.get('id')!r} used twice")
                open_calls[call.get("id")] = i
            if m.get("content") is None and not m.get("tool_calls"):
                problems.append(f"message {i}: an assistant message with nothing in it")
        elif role == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_calls:
                problems.append(f"message {i}: tool message for {cid!r}, no earlier call open")
            else:
                del open_calls[cid]
                answered.add(cid)
        if role != "assistant" and not isinstance(m.get("content"), str):
            problems.append(f"message {i}: content is not text")
    problems += [f"call {cid!r} (message {i}) is never answered" for cid, i in open_calls.items()]
    return problems


def validate_sharegpt(line: dict[str, Any]) -> list[str]:
    turns = line.get("conversations")
    if not isinstance(turns, list):
        return ["conversations is not a list"]
    allowed = ("human", "gpt", "system", "function_call", "observation")
    problems = []
    for i, t in enumerate(turns):
        if t.get("from") not in allowed or not isinstance(t.get("value"), str):
            problems.append(f"turn {i}: {t.get('from')!r}")
        if t.get("from") == "function_call":
            try:
                call = json.loads(t["value"])
                assert isinstance(call["name"], str)
            except (ValueError, KeyError, AssertionError, TypeError):
                problems.append(f"turn {i}: a function_call that is not {{name, arguments}}")
    return problems
