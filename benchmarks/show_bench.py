"""How fast a large session's HTML page (``trajconv show --format html``) is usable.

    python benchmarks/show_bench.py [--size 100MB] [--repeat 3] [--out FILE.md] [--screenshot PNG]

Generates (or reuses) the seeded Grok dataset of ``benchmarks/generate.py``, writes
its page with ``trajconv show --from grok PATH --format html -o PAGE`` (timed in a
subprocess, peak RSS from ``os.wait4``), then opens the page ``--repeat`` times in a
fresh headless Chromium tab (``python -m proof install chromium``) and
measures:

* time to interactive: from ``page.goto`` until the page has rendered its first window
  and attached its handlers (``body[data-ready]``; the script runs once the first
  data block is parsed), as seen by the driver and as ``performance.now()`` inside;
* the whole page parsed (``DOMContentLoaded``, ``body[data-loaded]``), from when
  search and the kind filter answer;
* scrolling: the time to render each of 10 next windows, scrolled to the bottom;
* search: from pressing Enter to the matches shown (every data block parsed once);
* that the page logged no console error and made no request but itself;
* with ``--views``, the text and Markdown views of the same session written to files.

Writes ``evidence/show-benchmark.md``. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from generate import ensure  # noqa: E402
from run import measure  # noqa: E402

from proof import tools_dir  # noqa: E402
from proof.loaders import chromium  # noqa: E402

EVIDENCE = REPO / "evidence" / "show-benchmark.md"
CLI = [sys.executable, "-c", "from trajconv.cli.main import main; main()"]


def open_page(browser: Any, url: str) -> dict[str, Any]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    start = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=600_000)
    page.wait_for_selector("body[data-ready]", timeout=600_000)
    tti = time.perf_counter() - start
    page.wait_for_selector("body[data-loaded]", timeout=600_000)
    loaded = time.perf_counter() - start
    return {
        "page": page,
        "tti": tti,
        "in_page": int(page.evaluate("document.body.dataset.ready")) / 1000,
        "loaded": loaded,
        "parsed": int(page.evaluate("document.body.dataset.loaded")) / 1000,
        "errors": errors,
        "req": requests,
    }


SCROLL_JS = """async (before) => {
  const t0 = performance.now();
  window.scrollTo(0, document.body.scrollHeight);
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  while (document.querySelectorAll("details.rec").length <= before) await frame();
  await frame();
  return performance.now() - t0;
}"""


def scroll_windows(page: Any, windows: int = 10) -> list[float]:
    """In-page time from scrolling to the bottom until the next window is drawn."""
    times = []
    for _ in range(windows):
        before = page.locator("details.rec").count()
        times.append(page.evaluate(SCROLL_JS, before) / 1000)
    return times


def search(page: Any, query: str) -> tuple[float, str]:
    page.fill("#search", query)
    start = time.perf_counter()
    page.press("#search", "Enter")
    chromium.wait_for(
        page, "document.getElementById('status').textContent.includes('matching')", 600
    )
    return time.perf_counter() - start, page.locator("#status").inner_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB", help="dataset size: 10MB, 100MB or 1GB")
    parser.add_argument("--repeat", type=int, default=3, help="page openings to time")
    parser.add_argument("--out", type=Path, default=EVIDENCE, help="report file")
    parser.add_argument("--screenshot", type=Path, default=None, help="save a PNG of the page")
    parser.add_argument("--query", default="read_file", help="what the search looks for")
    parser.add_argument(
        "--views", action="store_true", help="also time the text and Markdown views (slow)"
    )
    args = parser.parse_args(argv)

    exe = chromium.find(tools_dir())
    if exe is None:
        raise SystemExit(f"no Chromium: {chromium.INSTALL_HINT}")
    from playwright.sync_api import sync_playwright

    info = ensure("grok", args.size)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="trajconv-show-bench-") as scratch:
        page_path = Path(scratch) / "session.html"
        argv_ = [*CLI, "show", "--from", "grok", info["read_path"], "--format", "html"]
        wall, rss, status, err = measure([*argv_, "-o", str(page_path)])
        if status != 0:
            raise SystemExit(f"trajconv show failed ({status}): {err}")
        page_bytes = page_path.stat().st_size
        others = []
        for fmt in ("markdown", "text") if args.views else ():
            out = Path(scratch) / f"session.{fmt}"
            took, peak, code, err = measure([*argv_[:-1], fmt, "-o", str(out)])
            if code != 0:
                raise SystemExit(f"trajconv show --format {fmt} failed ({code}): {err}")
            others.append((fmt, took, peak, out.stat().st_size))
        runs = []
        with sync_playwright() as pw:
            browser = chromium.launch(pw, exe)
            for i in range(args.repeat):
                opened = open_page(browser, page_path.as_uri())
                page = opened["page"]
                records = int(page.locator("#count").inner_text())
                if i == 0:
                    opened["scroll"] = scroll_windows(page)
                    opened["search"] = search(page, args.query)
                    if args.screenshot is not None:
                        page.evaluate("window.scrollTo(0, 0)")
                        page.fill("#search", "")
                        page.press("#search", "Enter")
                        chromium.wait_for(
                            page,
                            "!document.getElementById('status').textContent.includes('matching')",
                        )
                        page.screenshot(path=str(args.screenshot))
                opened["records"] = records
                clean = not opened["errors"] and opened["req"] == [page_path.as_uri()]
                opened["clean"] = clean
                page.close()
                runs.append(opened)
            version = browser.version
            browser.close()
    first = runs[0]
    scroll = first["scroll"]
    search_s, search_status = first["search"]
    lines = [
        "# `trajconv show --format html` on a large session",
        "",
        "Generated by `benchmarks/show_bench.py`; do not edit by hand.",
        "",
        "Command:",
        "",
        "```sh",
        f"python benchmarks/show_bench.py --size {args.size} --repeat {args.repeat}"
        + (" --views" if args.views else ""),
        "```",
        "",
        f"- dataset: `grok-{args.size}` from `benchmarks/generate.py` "
        f"({info['bytes'] / 1024**2:.1f} MiB of native files), {first['records']:,} records",
        f"- `trajconv show --format html -o PAGE`: {wall:.1f} s, peak RSS {rss / 1024:.0f} MiB",
        f"- page: {page_bytes:,} bytes ({page_bytes / 1024**2:.1f} MiB), one file",
        *(
            f"- `trajconv show --format {fmt} -o FILE`: {took:.1f} s, peak RSS "
            f"{peak / 1024:.0f} MiB, {size / 1024**2:.1f} MiB"
            for fmt, took, peak, size in others
        ),
        f"- browser: Chromium {version} (Debian package), headless, driven by Playwright",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{load_before:.1f} at the start (the machine is shared; times vary with it)",
        "",
        "| measure | median | runs |",
        "|---|---:|---|",
        "| time to interactive (goto → first window rendered, handlers on), seen by the driver "
        "(it polls the page, which is busy parsing: an upper bound) | "
        f"{statistics.median(r['tti'] for r in runs):.2f} s | "
        + ", ".join(f"{r['tti']:.2f}" for r in runs)
        + " |",
        "| **time to interactive**, `performance.now()` in the page at that moment | "
        f"{statistics.median(r['in_page'] for r in runs):.2f} s | "
        + ", ".join(f"{r['in_page']:.2f}" for r in runs)
        + " |",
        "| whole page parsed (DOMContentLoaded: search and filters usable), driver | "
        f"{statistics.median(r['loaded'] for r in runs):.2f} s | "
        + ", ".join(f"{r['loaded']:.2f}" for r in runs)
        + " |",
        "| the same, `performance.now()` in the page | "
        f"{statistics.median(r['parsed'] for r in runs):.2f} s | "
        + ", ".join(f"{r['parsed']:.2f}" for r in runs)
        + " |",
        f"| next window on scroll (10 windows) | {statistics.median(scroll) * 1000:.0f} ms | "
        f"max {max(scroll) * 1000:.0f} ms |",
        f"| search `{args.query}` over every record (first search) | {search_s:.2f} s | "
        f"{search_status} |",
        "",
        "Every opening logged no console error and requested nothing but the page: "
        + ("yes" if all(r["clean"] for r in runs) else "NO"),
        "",
    ]
    args.out.write_text("\n".join(lines), "utf-8")
    print("\n".join(lines))
    return 0 if all(r["clean"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
