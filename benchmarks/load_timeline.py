"""Where a cold load of one dashboard page spends its time, from the browser's clock.

Same set-up as cold_load.py (a fresh `python -m dashboard` server per load, fresh chromium profile, the shipped or
fake cached runs), but instead of one number it prints the milestones of each load in ms since navigation:

    frontend   Streamlit's page shell is up and the title is shown (HTML, JS bundle, websocket)
    script     the page's Python runs (from -> to, as the browser sees the script state)
    plotly.js  the lazily loaded plotly chunk (4.7 MB): requested -> received
    chart      the first chart element exists (the chunk has been compiled and run) -> its first SVG drawn
    grid       the data-grid chunk received; first dataframe element -> its canvas
    rendered   the cold_load criterion: no skeleton left, every visible chart and dataframe drawn

    python benchmarks/load_timeline.py --page privacy-utility --cached-dir cached_runs --repeat 3

Needs /usr/bin/chromium (apt-get install -y chromium).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from cold_load import CHARTS_DRAWN, CHROMIUM_ARGS, PAGES, READY, RECORD_STATES, start_server

# First time (ms since navigation) each kind of element appears.
RECORD_ELEMENTS = """
window.__marks = {};
new MutationObserver(() => {
  for (const [name, selector] of [['title', '[data-testid=stMain] h1'], ['chart', '[data-testid=stPlotlyChart]'],
      ['svg', '[data-testid=stPlotlyChart] .main-svg'], ['grid', '[data-testid=stDataFrame]'],
      ['canvas', '[data-testid=stDataFrame] canvas']])
    if (!(name in window.__marks) && document.querySelector(selector)) window.__marks[name] = performance.now();
}).observe(document, {subtree: true, childList: true});
"""
CHUNKS = {"plotly": "/PlotlyChart.", "grid": "/DataFrame."}


def one_load(browser, env: dict[str, str], log: Path, path: str) -> dict[str, float]:
    proc, base, _ = start_server(env, log)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(RECORD_STATES + RECORD_ELEMENTS)
        page = context.new_page()
        page.goto(base + path)
        page.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
        page.wait_for_selector(READY, timeout=120_000)
        page.wait_for_function(CHARTS_DRAWN, timeout=120_000)
        out = {"rendered": page.evaluate("performance.now()")}
        out.update(page.evaluate("window.__marks"))
        states = page.evaluate("window.__states")
        running = [t for state, t in states if state == "running"]
        done = [t for state, t in states if state == "notRunning"]
        if running and done:
            out["script_from"], out["script_to"] = running[0], done[-1]
        for name, needle in CHUNKS.items():
            entries = page.evaluate("n => performance.getEntriesByType('resource').filter(e => e.name.includes(n))"
                                    ".map(e => [e.startTime, e.responseEnd])", needle)
            if entries:
                out[f"{name}_requested"], out[f"{name}_received"] = entries[0]
        context.close()
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def span(row: dict[str, float], start: str, end: str) -> str:
    if start not in row:
        return "-"
    return f"{row[start]:5.0f} -> {row[end]:5.0f}" if end in row else f"{row[start]:5.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--page", default="privacy-utility", choices=list(PAGES))
    parser.add_argument("--cached-dir", default="cached_runs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    if not Path(args.chromium).exists():
        print(f"{args.chromium} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2

    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="seqpate-timeline-"))
    (work / "runs").mkdir()
    env = dict(os.environ, SEQPATE_RUNS_DIR=str(work / "runs"),
               SEQPATE_CACHED_RUNS_DIR=str(Path(args.cached_dir).resolve()), SEQPATE_CACHE=str(work / "cache"))
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        for _ in range(args.repeat):
            rows.append(one_load(browser, env, work / "streamlit.log", PAGES[args.page]))
        browser.close()

    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"page {args.page}, {args.repeat} cold loads; ms since navigation")
    print(f"{'frontend':>8s} {'script':>16s} {'plotly.js':>16s} {'chart -> svg':>16s} {'grid':>6s} "
          f"{'grid -> canvas':>16s} {'rendered':>9s}")
    for row in rows:
        print(f"{row.get('title', float('nan')):8.0f} {span(row, 'script_from', 'script_to'):>16s} "
              f"{span(row, 'plotly_requested', 'plotly_received'):>16s} {span(row, 'chart', 'svg'):>16s} "
              f"{row.get('grid_received', float('nan')):6.0f} {span(row, 'grid', 'canvas'):>16s} "
              f"{row['rendered']:9.0f}")
    with_chart = [r for r in rows if "chart" in r and "plotly_received" in r]
    if with_chart:
        fetch = statistics.median(r["plotly_received"] - r["plotly_requested"] for r in with_chart)
        run = statistics.median(r["chart"] - r["plotly_received"] for r in with_chart)
        print(f"median: plotly.js fetched in {fetch:.0f} ms, then {run:.0f} ms until the first chart element exists; "
              f"rendered at {statistics.median(r['rendered'] for r in rows):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
