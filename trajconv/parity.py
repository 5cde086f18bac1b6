"""The parity inventory and conversion matrix (``trajconv parity``).

``build()`` runs every from→to pair on every fixture session: read, write,
re-read the export with the target's reader, and compare with the source
Snapshot record kind by record kind: kept, named by a diagnostic, or lost
without one (which is a failure, never a table entry). Where a native loader
is installed, the written export is also loaded by the real harness. Every
entry carries fingerprints (sha256 of the codec sources, the core and the
fixtures it was computed from), so ``check()`` can tell stale evidence from a
regression without re-running the loaders.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import itertools
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from trajconv import api
from trajconv.checkout import source_checkout
from trajconv.codecs import registry
from trajconv.codecs.base import Codec
from trajconv.errors import RefusedError, TrajconvError, UsageError
from trajconv.snapshot.models import RECORD_KINDS, Snapshot

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
EVIDENCE = ROOT / "evidence"
PARITY_FORMAT = "trajconv.parity/1"

# Writer codes that account for records of a kind left out of the target.
DROP_CODES: dict[str, tuple[str, ...]] = {
    "reasoning": ("untranslated-reasoning",),
    "system": ("untranslated-system",),
    "observation": ("untranslated-observation",),
    "tool-call": ("untranslated-pending-call", "untranslated-tool-call"),
    "tool-result": ("untranslated-orphan-result", "untranslated-tool-result"),
    "user": (
        "untranslated-user",
        "untranslated-steering",
        "user-read-as-context",
        "user-read-as-command",
    ),
    "assistant": ("untranslated-assistant",),
}
# Writer codes for records the target keeps, but joined with their neighbours.
MERGE_CODES = ("untranslated-message-boundary",)
CORE_SOURCES = (
    "trajconv/snapshot",
    "trajconv/codecs/base.py",
    "trajconv/codecs/export.py",
    "trajconv/codecs/jsonl.py",
    "trajconv/codecs/prepare_template.py",
    "trajconv/parity.py",
    "proof/continuation.py",
)
# The project folder a session that kept no working directory (ATIF keeps none) is written
# for, as a user names one with ``convert --cwd DIR``: a fixed path, so that the evidence does
# not depend on where it was computed.
SCRATCH_CWD = "/work/project"


def write_options(snap: Snapshot) -> dict[str, Any]:
    """What a user adds to write ``snap`` to any target: ``--cwd`` when it kept none."""
    return {} if snap.session.cwd else {"cwd": SCRATCH_CWD}


# -- fingerprints --------------------------------------------------------------------------


def _tree_digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        if path.is_file() and "__pycache__" not in path.parts and "__snapshots__" not in path.parts:
            h.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _files(rel: str) -> list[Path]:
    base = ROOT / rel
    return [base] if base.is_file() else list(base.rglob("*"))


def fingerprints(codecs: list[str]) -> dict[str, str]:
    out = {"core": _tree_digest(p for rel in CORE_SOURCES for p in _files(rel))}
    for name in codecs:
        out[f"codec:{name}"] = _tree_digest(_files(f"trajconv/codecs/{name}"))
        out[f"fixtures:{name}"] = _tree_digest(_files(f"fixtures/{name}"))
    return out


# -- fixtures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixtureSession:
    harness: str
    case: str
    path: Path
    session: str | None
    """``--session`` to pass when ``path`` holds several sessions."""
    name: str | None = None
    """Which session of a case holding several, for the label."""

    @property
    def label(self) -> str:
        return f"{self.harness}/{self.case}" + (f"#{self.name}" if self.name else "")


def fixture_sessions(codec: Codec) -> list[FixtureSession]:
    """Every session of a codec's fixtures: each case folder is a native home."""
    root = FIXTURES / codec.name
    found: list[FixtureSession] = []
    if not root.is_dir():
        return found
    for case in sorted(p for p in root.iterdir() if p.is_dir()):
        refs = codec.discover(case) if codec.can_discover else []
        if len(refs) == 1:
            found.append(FixtureSession(codec.name, case.name, refs[0].path, None))
        elif refs:
            found.extend(
                FixtureSession(codec.name, case.name, ref.path, ref.session_id, ref.session_id)
                for ref in refs
            )
        else:
            found.append(FixtureSession(codec.name, case.name, case, None))
    return found


# -- comparing two Snapshots ---------------------------------------------------------------


def _kind_counts(snap: Snapshot) -> Counter[str]:
    return Counter(r.kind for r in snap.records)


def compare(source: Snapshot, written: Snapshot, writer_codes: dict[str, int]) -> dict[str, Any]:
    """Per record kind: records kept, named by writer diagnostics, lost without one."""
    src = _kind_counts(source)
    out = _kind_counts(written)
    merged = sum(writer_codes.get(c, 0) for c in MERGE_CODES)
    rows: dict[str, Any] = {}
    for kind in RECORD_KINDS:
        if not src[kind] and not out[kind]:
            continue
        named = sum(writer_codes.get(c, 0) for c in DROP_CODES[kind])
        kept = min(out[kind], src[kind])
        missing = src[kind] - kept - named
        if kind in ("assistant", "reasoning") and missing > 0:
            # joined with a neighbour of the same kind: kept as text, named by a code
            absorbed = min(missing, merged)
            merged -= absorbed
            named += absorbed
            missing -= absorbed
        rows[kind] = {
            "source": src[kind],
            "kept": kept,
            "named": named,
            "lost": max(missing, 0),
            "extra": max(out[kind] - src[kind], 0),
        }
    return rows


# -- running -------------------------------------------------------------------------------


@dataclass
class PairResult:
    source: str
    target: str
    fixture: str
    status: str  # converted | refused | failed
    strict: str  # converted | refused (without --allow-lossy)
    kinds: dict[str, Any] = field(default_factory=dict)
    reader_codes: dict[str, int] = field(default_factory=dict)
    writer_codes: dict[str, int] = field(default_factory=dict)
    reread_ok: bool = False
    loader: dict[str, Any] | None = None
    error: str | None = None

    @property
    def lost(self) -> int:
        return sum(int(v["lost"]) for v in self.kinds.values())

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


LoaderCheck = Callable[[str, Any, Snapshot], dict[str, Any] | None]


def _reread(target: Codec, out: Path, session_id: str) -> Snapshot:
    """An export read back with the target's own reader (:func:`trajconv.api.reread`)."""
    return api.reread(out, target.name, session_id)


def run_pair(
    fx: FixtureSession, target: Codec, snap: Snapshot, work: Path, loader_check: LoaderCheck | None
) -> PairResult:
    res = PairResult(fx.harness, target.name, fx.label, "failed", "refused")
    res.reader_codes = {d.code: d.count for d in snap.diagnostics}
    options = write_options(snap)
    try:
        api.write(snap, target.name, work / "strict", **options)
        res.strict = "converted"
    except RefusedError:
        res.strict = "refused"
    except TrajconvError as exc:
        res.error = f"strict write: {exc}"
    try:
        export = api.write(snap, target.name, work / "lossy", allow_lossy=True, **options)
    except RefusedError as exc:
        res.status, res.error = "refused", str(exc)
        return res
    except TrajconvError as exc:
        res.error = f"write: {exc}"
        return res
    res.status = "converted"
    res.writer_codes = {d.code: d.count for d in export.diagnostics}
    try:
        written = _reread(target, export.out_dir, export.session_id)
        res.reread_ok = True
    except TrajconvError as exc:
        res.error = f"re-read by the {target.name} reader: {exc}"
        return res
    res.kinds = compare(snap, written, res.writer_codes)
    if loader_check is not None:
        res.loader = loader_check(target.name, export, written)
    return res


def _score(snap: Snapshot) -> int:
    """How much of the Snapshot format a fixture exercises: kinds first, then size."""
    return len(set(r.kind for r in snap.records)) * 1000 + len(snap.records)


@functools.lru_cache(maxsize=2)
def _read_fixture(harness: str, path: Path, session: str | None) -> Snapshot:
    """A fixture session read once per worker process for all of its targets."""
    return api.read(harness, path, session=session)


def _pair_job(
    fx: FixtureSession, target: str, work: Path, loader_check: LoaderCheck | None
) -> PairResult:
    snap = _read_fixture(fx.harness, fx.path, fx.session)
    return run_pair(fx, registry.get(target), snap, work, loader_check)


def loader_sampled(fx: FixtureSession, richest: set[str]) -> bool:
    """Whether ``parity --write`` loads this pair's export with the target's real CLI: the
    richest fixture of every harness, into every target. Loading every pair would start a
    real CLI some 500 times; each codec's own loader tests load all of its fixtures."""
    return fx.label in richest


def continued_pairs(
    names: list[str], progress: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Continue every pair among the harnesses whose CLI is installed here and that have a
    stored baseline (``proof.continuation``), into those whose codec writes; one entry per
    pair, ``ok`` False when a difference is not named or the run failed."""
    from concurrent.futures import ThreadPoolExecutor

    cont = rig("--write", "continuation")

    usable = [n for n in cont.sources(names) if cont.find_cli(n) is not None]
    # a codec that only reads is a source here, never a target
    pairs = [(s, t) for s in usable for t in usable if registry.get(t).can_write]

    def run(pair: tuple[str, str]) -> dict[str, Any]:
        if progress:
            progress(f"continuing {pair[0]} -> {pair[1]}")
        try:
            entry: dict[str, Any] = cont.check_pair(*pair)[0].to_json()
        except Exception as exc:  # a failed run is a failed entry, recorded as such
            return {"source": pair[0], "target": pair[1], "ok": False, "error": str(exc)}
        return entry

    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(run, pairs))


def build(
    loader_check: LoaderCheck | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    continuation: bool = False,
) -> dict[str, Any]:
    """Run every pair on every fixture, ``jobs`` pairs at a time in worker processes; the
    native loader (when given) runs on the pairs :func:`loader_sampled` picks."""
    codecs = registry.all_codecs()
    readers = [c for c in codecs if c.can_read]
    writers = [c for c in codecs if c.can_write]
    read_errors: list[dict[str, str]] = []
    richest: dict[str, tuple[int, FixtureSession, Snapshot]] = {}
    fixtures: list[FixtureSession] = []
    for src in readers:
        for fx in fixture_sessions(src):
            try:
                snap = api.read(src.name, fx.path, session=fx.session)
            except TrajconvError as exc:
                read_errors.append({"fixture": fx.label, "error": str(exc)})
                continue
            fixtures.append(fx)
            score = _score(snap)
            if src.name not in richest or score > richest[src.name][0]:
                richest[src.name] = (score, fx, snap)
    sampled = {fx.label for _score_, fx, _snap in richest.values()}
    with tempfile.TemporaryDirectory(prefix="trajconv-parity-") as tmp:
        work = [
            (fx, tgt.name, Path(tmp) / f"{i}-{tgt.name}",
             loader_check if loader_sampled(fx, sampled) else None)
            for i, fx in enumerate(fixtures)
            for tgt in writers
        ]  # fmt: skip
        pairs: list[PairResult] = []
        if jobs <= 1:
            for fx, target, where, check_ in work:
                if progress:
                    progress(f"{fx.label} -> {target}")
                pairs.append(_pair_job(fx, target, where, check_))
        else:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(_pair_job, *job) for job in work]
                for (fx, target, _w, _c), future in zip(work, futures, strict=True):
                    pairs.append(future.result())
                    if progress:
                        progress(f"{fx.label} -> {target} ({len(pairs)}/{len(work)})")
        hops = multi_hop([c.name for c in writers if c.can_read], richest, Path(tmp))
    names = [c.name for c in codecs]
    return {
        "format": PARITY_FORMAT,
        "fingerprints": fingerprints(names),
        "harnesses": [inventory_row(c, pairs) for c in codecs],
        "pairs": [p.to_json() for p in pairs],
        "read_errors": read_errors,
        "multi_hop": hops,
        "continued": continued_pairs(names, progress) if continuation else [],
    }


def inventory_row(codec: Codec, pairs: list[PairResult]) -> dict[str, Any]:
    loads = [p.loader for p in pairs if p.target == codec.name and p.loader]
    loader: dict[str, Any]
    if not loads:
        loader = {"status": "none"}
    else:
        ok = all(bool(x.get("ok")) for x in loads)
        loader = {
            "status": "passed" if ok else "failed",
            "checked": len(loads),
            "failed": sum(not x.get("ok") for x in loads),
            "version": loads[0].get("version"),
        }
    return {
        "name": codec.name,
        "read": codec.can_read,
        "write": codec.can_write,
        "discover": codec.can_discover,
        "fixtures": len(fixture_sessions(codec)),
        "native_loader": loader,
    }


def multi_hop(
    names: list[str], richest: dict[str, tuple[int, FixtureSession, Snapshot]], tmp: Path
) -> list[dict[str, Any]]:
    """Every A→B→C→A chain of distinct harnesses on A's richest fixture."""
    out: list[dict[str, Any]] = []
    for a, b, c in itertools.permutations(names, 3):
        if a not in richest:
            continue
        _score, fx, snap = richest[a]
        chain = [a, b, c, a]
        current = snap
        status = "ok"
        for step, (frm, to) in enumerate(itertools.pairwise(chain)):
            work = tmp / f"hop-{a}-{b}-{c}-{step}"
            try:
                export = api.write(current, to, work, allow_lossy=True, **write_options(current))
                current = _reread(registry.get(to), export.out_dir, export.session_id)
            except TrajconvError as exc:
                status = f"stopped at {frm}->{to}: {type(exc).__name__}"
                break
        start, end = _kind_counts(snap), _kind_counts(current)
        out.append(
            {
                "chain": "→".join(chain),
                "fixture": fx.label,
                "status": status,
                "survived": {k: f"{end[k]}/{start[k]}" for k in RECORD_KINDS if start[k]},
            }
        )
    return out


# -- checking ------------------------------------------------------------------------------


def load_evidence(evidence: Path = EVIDENCE) -> dict[str, Any]:
    """The committed evidence; an installed package carries a copy of it (package data)."""
    path = evidence / "parity.json"
    if evidence == EVIDENCE and source_checkout() is None:
        from importlib import resources

        packaged = resources.files("trajconv").joinpath("evidence", "parity.json")
        if not packaged.is_file():
            raise UsageError(
                "this trajconv install carries no parity evidence; it is evidence/parity.json "
                "and evidence/matrix.md in trajconv's source repository"
            )
        text = packaged.read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def needs_checkout(what: str) -> None:
    """``parity --write``/``--check`` run the fixtures and fingerprint the proof rig, which
    only a source checkout has."""
    if source_checkout() is None:
        raise UsageError(
            f"trajconv parity {what} runs the repository's fixtures: run it in a clone of "
            "trajconv's source repository (pip install -e .)"
        )
    rig(what)


def rig(what: str, module: str = "") -> ModuleType:
    """The proof rig (``proof/`` of the source repository, never in the wheel), or a module
    of it, imported only when ``parity`` runs it; a clear error when it is not importable."""
    name = f"proof.{module}" if module else "proof"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in ("proof", name):
            raise
        raise UsageError(
            f"trajconv parity {what} needs a source checkout with the proof rig (the "
            f"repository's proof/ folder, importable from its root): {name} is not importable; "
            "run it in a clone of trajconv's source repository (pip install -e .)"
        ) from exc


def check(evidence: Path = EVIDENCE) -> list[str]:
    """Problems with the committed evidence: stale fingerprints, losses, regressions."""
    try:
        old = load_evidence(evidence)
    except (OSError, ValueError) as exc:
        return [f"{evidence / 'parity.json'}: cannot read ({exc}); run trajconv parity --write"]
    problems: list[str] = []
    names = [c.name for c in registry.all_codecs()]
    now = fingerprints(names)
    for key, value in now.items():
        if old["fingerprints"].get(key) != value:
            problems.append(f"stale: {key} changed since the evidence was written")
    for key in old["fingerprints"]:
        if key not in now:
            problems.append(f"stale: {key} is in the evidence but no longer registered")
    for pair in old["pairs"]:
        lost = sum(int(v["lost"]) for v in pair["kinds"].values())
        if lost:
            problems.append(
                f"{pair['source']}->{pair['target']} {pair['fixture']}: "
                f"{lost} records lost without a diagnostic"
            )
        if pair.get("loader") and not pair["loader"].get("ok"):
            problems.append(
                f"{pair['source']}->{pair['target']} {pair['fixture']}: "
                f"native loader failed: {pair['loader'].get('detail')}"
            )
    for c in old.get("continued", []):
        if not c.get("ok"):
            why = (
                c.get("error")
                or f"{len(c.get('unexplained', []))} differences that no diagnostic names"
            )
            problems.append(f"continued {c['source']}->{c['target']}: {why}")
    if not problems:
        fresh = build(loader_check=None)
        old_pairs = {(p["source"], p["target"], p["fixture"]): p for p in old["pairs"]}
        for p in fresh["pairs"]:
            before = old_pairs.get((p["source"], p["target"], p["fixture"]))
            if before is None or (before["kinds"], before["status"]) != (p["kinds"], p["status"]):
                problems.append(
                    f"regressed: {p['source']}->{p['target']} {p['fixture']} "
                    "differs from the evidence"
                )
    return problems


# -- rendering -----------------------------------------------------------------------------


def render_markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Conversion matrix",
        "",
        "Generated by `trajconv parity --write`; do not edit. Every from→to pair ran on "
        "every fixture session: read, write (with `--allow-lossy`), re-read with the "
        "target's reader, compare record kinds. *strict* says whether the write succeeds "
        "without `--allow-lossy`. *lost* must be 0. The target's real CLI (*native "
        "loader*) loaded the export of each harness's richest fixture (the one with the "
        "most record kinds); each codec's own loader tests load all of its fixtures. "
        "*continued*: where both harnesses' CLIs run here, how much of the source's "
        "conversation the target's model saw when the pair was continued (section below).",
        "",
        "## Harnesses",
        "",
        "| harness | read | write | discover | fixtures | native loader |",
        "|---|---|---|---|---|---|",
    ]
    for h in data["harnesses"]:
        nl = h["native_loader"]
        loader = nl["status"] + (
            f" ({nl['checked']} exports, {nl.get('version')})" if nl["status"] != "none" else ""
        )
        lines.append(
            f"| {h['name']} | {_yes(h['read'])} | {_yes(h['write'])} | "
            f"{_yes(h['discover'])} | {h['fixtures']} | {loader} |"
        )
    lines += [
        "",
        "## Pairs",
        "",
        "| from → to | fixtures | converted | strict ok | kept / source | named | lost "
        "| native loader | continued | writer diagnostics |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    # the continuation check of the pair (section below), where both harnesses' CLIs run here
    continued = {
        (c["source"], c["target"]): (
            "failed" if "error" in c else f"model saw {c['saw']}/{c['of']}"
        )
        for c in data.get("continued", [])
    }
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in data["pairs"]:
        grouped.setdefault((p["source"], p["target"]), []).append(p)
    for (s, t), ps in sorted(grouped.items()):
        kept = sum(v["kept"] for p in ps for v in p["kinds"].values())
        total = sum(v["source"] for p in ps for v in p["kinds"].values())
        named = sum(v["named"] for p in ps for v in p["kinds"].values())
        lost = sum(v["lost"] for p in ps for v in p["kinds"].values())
        loads = [p["loader"] for p in ps if p.get("loader")]
        loader = f"{sum(bool(x.get('ok')) for x in loads)}/{len(loads)} loaded" if loads else "-"
        codes = sorted({c for p in ps for c in p["writer_codes"]})
        lines.append(
            f"| {s} → {t} | {len(ps)} | {sum(p['status'] == 'converted' for p in ps)} | "
            f"{sum(p['strict'] == 'converted' for p in ps)} | {kept}/{total} | {named} | {lost} "
            f"| {loader} | {continued.get((s, t), '-')} | {', '.join(codes) or '-'} |"
        )
    if data.get("continued"):
        lines += [
            "",
            "## Continued in the real CLI",
            "",
            "Each source's continuation fixture, converted and continued for one turn in the "
            "target's CLI against the loopback model: how many items of the conversation the "
            "source's own continued request shows (its stored baseline) the target's model saw "
            "as they were, and the diagnostics naming the rest. *unexplained* must be 0.",
            "",
            "| from → to | continued | named by | unexplained |",
            "|---|---|---|---|",
        ]
        for c in sorted(data["continued"], key=lambda c: (c["source"], c["target"])):
            if "error" in c:
                lines.append(f"| {c['source']} → {c['target']} | failed: {c['error']} | - | - |")
                continue
            named = ", ".join(f"{k} x{v}" for k, v in sorted(c["named"].items())) or "-"
            lines.append(
                f"| {c['source']} → {c['target']} | model saw {c['saw']}/{c['of']} | {named} "
                f"| {len(c['unexplained'])} |"
            )
    if data["read_errors"]:
        lines += ["", "## Fixtures refused by their reader", ""]
        lines += [f"- {e['fixture']}: {e['error']}" for e in data["read_errors"]]
    lines += [
        "",
        "## Multi-hop (A → B → C → A on A's richest fixture)",
        "",
        "| chain | status | survived (end/start per kind) |",
        "|---|---|---|",
    ]
    for h in data["multi_hop"]:
        surv = ", ".join(f"{k} {v}" for k, v in h["survived"].items())
        lines.append(f"| {h['chain']} | {h['status']} | {surv} |")
    lines += ["", "## Fingerprints", ""]
    lines += [f"- `{k}`: `{v[:16]}…`" for k, v in sorted(data["fingerprints"].items())]
    return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def write(data: dict[str, Any], evidence: Path = EVIDENCE) -> None:
    evidence.mkdir(parents=True, exist_ok=True)
    (evidence / "parity.json").write_text(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (evidence / "matrix.md").write_text(render_markdown(data), encoding="utf-8")
