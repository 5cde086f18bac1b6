"""Dataset benchmark: ``trajconv dataset`` over generated Grok homes, locally and on Dask.

    python benchmarks/dataset_bench.py [--sessions 1000] [--format openai] [--out FILE.md]

A temporary GROK_HOME holds that many small sessions (the archive benchmark's generator).
Each run writes the dataset of every session through the library: one process with and
without redaction (redaction's cost is the difference), two worker processes, and a
2-worker Dask distributed cluster on 127.0.0.1 (``LocalCluster``, processes). Reported:
wall time, sessions/s, native MB/s and the peak RSS of each process that did the work.
The outputs of all runs with redaction must be the same bytes; the script exits 1 otherwise.
Not a test: timings depend on the machine, so nothing asserts them in CI.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from archive_bench import generate, machine  # noqa: E402

from trajconv import dataset as ds  # noqa: E402


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run(units: list[Any], fmt: str, out: Path, **kw: Any) -> float:
    t0 = time.perf_counter()
    ds.build(units, fmt, out, **kw)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--format", default="openai")
    parser.add_argument("--out", type=Path, default=REPO / "evidence" / "dataset-benchmark.md")
    args = parser.parse_args()
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="trajconv-dataset-bench-") as scratch:
        home = Path(scratch) / ".grok"
        native = generate(home, args.sessions)
        units = ds.units_of([], homes=[home], harnesses=["grok"])
        assert len(units) == args.sessions
        base = Path(scratch)
        fmt = args.format
        t = run(units, fmt, base / "plain", redact=False)
        rows.append(("1 process, no redaction", t, _rss_mib()))
        t = run(units, fmt, base / "one", redact=True)
        rows.append(("1 process, redaction", t, _rss_mib()))
        t = run(units, fmt, base / "two", redact=True, jobs=2)
        rows.append(("2 processes, redaction", t, _children_rss_mib()))
        from distributed import Client, LocalCluster

        with LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster:
            t = run(units, fmt, base / "dask", redact=True, scheduler=cluster.scheduler_address)
            with Client(cluster.scheduler_address) as client:  # type: ignore[no-untyped-call]
                peaks = client.run(_rss_mib)
            rows.append(("Dask, 2 workers, redaction", t, max(peaks.values())))
        name = f"{fmt}.jsonl" if fmt in ("openai", "sharegpt") else "manifest.json"
        same = len({(base / d / name).read_bytes() for d in ("one", "two", "dask")}) == 1
    lines = [
        "# Dataset benchmark",
        "",
        f"`python benchmarks/dataset_bench.py --sessions {args.sessions} --format {args.format}`:",
        f"{args.sessions:,} generated Grok sessions ({native / 1e6:.1f} MB native), written as",
        f"`{args.format}`. Peak RSS is of the process that read the sessions (the largest",
        "worker's for processes and Dask). The runs with redaction gave "
        + ("the same bytes." if same else "DIFFERENT bytes."),
        "",
        *machine(),
        "",
        "| run | wall s | sessions/s | native MB/s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, secs, rss in rows:
        lines.append(
            f"| {label} | {secs:.1f} | {args.sessions / secs:.0f} | {native / 1e6 / secs:.2f} "
            f"| {rss:.0f} |"
        )
    plain, redacted = rows[0][1], rows[1][1]
    lines += [
        "",
        f"Redaction's cost: {redacted - plain:.1f} s of {redacted:.1f} s "
        f"({(redacted - plain) / redacted:.0%}) in one process: detect-secrets runs each of",
        "its plugins over every line that could hold a secret.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
