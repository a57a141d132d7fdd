"""Cold and warm load time of every dashboard page with ~100 cached runs, measured in a real browser.

For each page a fresh server is started as the README starts it (`python -m dashboard`: the libraries are imported
before it listens, no st.cache_data entries, no run read yet; `--plain` uses `streamlit run dashboard/app.py`).
Debian's chromium, in a fresh profile (nothing cached), opens the page; the cold load is the time from navigation
until the script has finished ([data-testid=stApp][data-test-script-state=notRunning] with the page title shown)
and the page has rendered (no loading skeleton left, every plotly chart and every dataframe drawn). The same page
is then opened again in a new tab of the same server: the warm load.

    python benchmarks/cold_load.py                      # 100 fake cached runs in a temp folder
    python benchmarks/cold_load.py --runs 300
    python benchmarks/cold_load.py --cached-dir cached_runs   # the shipped runs instead of fake ones
    python benchmarks/cold_load.py --json out.json
    python benchmarks/cold_load.py --apptest            # no browser: the pages' Python only (AppTest)
    python benchmarks/cold_load.py --cached-dir cached_runs --returning   # browser cache primed, server fresh
    python benchmarks/cold_load.py --cached-dir cached_runs --screenshots dashboard/screenshots   # README images

Needs /usr/bin/chromium (apt-get install -y chromium); never runs `playwright install`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "dashboard")]

PAGES = {
    "overview": "/",
    "launch": "/launch",
    "runs": "/runs",
    "privacy-utility": "/privacy-utility",
    "phrases": "/phrases",
    "completions": "/completions",
    "calculator": "/calculator",
    "export": "/export",
    "synthetic": "/synthetic",
}
READY = "[data-testid=stApp][data-test-script-state=notRunning]"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict[str, str], log_path: Path, plain: bool = False, port: int | None = None,
                 app: Path | None = None) -> tuple[subprocess.Popen, str, float]:
    """A fresh server as the README starts it (`python -m dashboard`), or `streamlit run APP` (plain; the app
    defaults to dashboard/app.py)."""
    port = port or free_port()
    log = open(log_path, "a")
    t0 = time.perf_counter()
    command = ["-m", "streamlit", "run", str(app or "dashboard/app.py")] if plain else ["-m", "dashboard"]
    proc = subprocess.Popen(
        [sys.executable, *command, "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return proc, base, time.perf_counter() - t0
        except OSError:
            pass
        if proc.poll() is not None or time.perf_counter() - t0 > 60:
            proc.kill()
            raise SystemExit(f"streamlit did not start; see {log_path}")
        time.sleep(0.1)


# Records (state, ms since navigation start) at every change of stApp's data-test-script-state, so that a load
# splits into "frontend" (HTML + JS bundle + websocket, until the script starts) and "script" (the page's Python).
RECORD_STATES = """
window.__states = [];
new MutationObserver(() => {
  const app = document.querySelector('[data-testid=stApp]');
  const state = app && app.getAttribute('data-test-script-state');
  const last = window.__states[window.__states.length - 1];
  if (state && (!last || last[0] !== state)) window.__states.push([state, performance.now()]);
}).observe(document, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ['data-test-script-state']});
"""


# The page has rendered: no element is still a loading skeleton (plotly.js, a 4.7 MB chunk, and the dataframe grid
# are loaded on first use, and their elements show as skeletons until then), every visible plotly chart has drawn
# its SVG and every visible dataframe its canvas (one in a collapsed expander is never drawn). Checking the charts
# alone is not enough: before the chunk has loaded there are no chart elements yet, and "every chart" holds for none.
CHARTS_DRAWN = """() => {
  const visible = selector => [...document.querySelectorAll(selector)].filter(el => el.checkVisibility());
  return !document.querySelector('[data-testid=stSkeleton]')
    && visible('[data-testid=stPlotlyChart]').every(chart => chart.querySelector('.main-svg'))
    && visible('[data-testid=stVegaLiteChart]').every(chart => chart.querySelector('canvas, svg.marks'))
    && visible('[data-testid=stDataFrame]').every(frame => frame.querySelector('canvas'));
}"""


def timed_visit(context, url: str, screenshot: Path | None = None) -> dict[str, float]:
    """Navigation until the script finished (total) and until every chart has drawn (drawn), and the part spent
    running the page's script; optionally a screenshot of the page once its charts have drawn."""
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(READY, timeout=120_000)
    page.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
    page.wait_for_selector(READY, timeout=120_000)
    total = time.perf_counter() - t0
    page.wait_for_function(CHARTS_DRAWN, timeout=120_000)
    drawn = time.perf_counter() - t0
    states = page.evaluate("() => window.__states")
    running = [t for state, t in states if state == "running"]
    done = [t for state, t in states if state == "notRunning"]
    script = (done[-1] - running[0]) / 1000 if running and done and done[-1] > running[0] else float("nan")
    errors = page.locator("[data-testid=stException]").count()
    if screenshot is not None:
        page.wait_for_timeout(500)
        page.screenshot(path=str(screenshot), full_page=False)
    page.close()
    return {"total": total, "drawn": drawn, "script": script, "frontend": total - script, "errors": errors}


APPTEST_CHILD = """
import json, sys, time
sys.path[:0] = [{root!r}]
t0 = time.perf_counter()
from streamlit.testing.v1 import AppTest
import_s = time.perf_counter() - t0
at = AppTest.from_file({view!r}, default_timeout=120)
t = time.perf_counter(); at.run(); cold = time.perf_counter() - t
t = time.perf_counter(); at.run(); warm = time.perf_counter() - t
print(json.dumps({{"cold_s": cold, "warm_s": warm, "streamlit_import_s": import_s, "exceptions": len(at.exception)}}))
"""


def apptest_mode(env: dict[str, str], n_runs: int) -> dict[str, dict[str, float]]:
    """Each page's script alone (views/<page>.py run by AppTest) in a fresh interpreter: cold then warm."""
    results = {}
    for name in PAGES:
        view = ROOT / "dashboard" / "views" / f"{name.replace('-', '_')}.py"
        code = APPTEST_CHILD.format(root=str(ROOT), view=str(view))
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(f"{name}: {done.stderr[-2000:]}")
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
        r = results[name]
        print(f"  {name:16s} cold {r['cold_s']:5.2f} s   warm {r['warm_s']:5.2f} s", flush=True)
    print(f"\n{n_runs} cached runs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}.")
    print("AppTest: a page's script in a fresh interpreter (streamlit itself already imported); cold = first run")
    print("(imports of pandas, plotly, core.privacy..., reading every run), warm = second run (caches filled).")
    print(f"{'page':16s} {'cold (s)':>9s} {'warm (s)':>9s}")
    for name, r in results.items():
        print(f"{name:16s} {r['cold_s']:9.2f} {r['warm_s']:9.2f}")
    return results


def returning_mode(args, env: dict[str, str], log_path: Path, n_runs: int) -> dict[str, dict[str, float]]:
    """A returning visitor: a fresh server per page and repeat, but a browser profile that has opened every page
    twice before (Streamlit's content-hashed, immutable JS in its HTTP cache and V8's code cache). Every server
    listens on the same port: a cached URL includes the port."""
    from playwright.sync_api import sync_playwright

    port, profile = free_port(), tempfile.mkdtemp(prefix="seqpate-profile-")
    results: dict[str, dict[str, float]] = {}
    with sync_playwright() as p:
        def browser():
            return p.chromium.launch_persistent_context(profile, executable_path=args.chromium, args=CHROMIUM_ARGS,
                                                        headless=True, viewport={"width": 1400, "height": 1000})

        proc, base, _ = start_server(env, log_path, plain=args.plain, port=port)
        try:
            context = browser()
            context.add_init_script(RECORD_STATES)
            for _ in range(2):
                for path in PAGES.values():
                    timed_visit(context, base + path)
            context.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        for name in args.pages.split(","):
            visits = []
            for _ in range(args.repeat):
                proc, base, _ = start_server(env, log_path, plain=args.plain, port=port)
                try:
                    context = browser()
                    context.add_init_script(RECORD_STATES)
                    visits.append(timed_visit(context, base + PAGES[name]))
                    context.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
            results[name] = {"returning_s": statistics.median(v["drawn"] for v in visits),
                             "returning_script_s": statistics.median(v["script"] for v in visits),
                             "exceptions": sum(v["errors"] for v in visits)}
            print(f"  {name:16s} returning {results[name]['returning_s']:5.2f} s", flush=True)
    worst = max(r["returning_s"] for r in results.values())
    print(f"\n{n_runs} cached runs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}.")
    print("returning: first visit on a fresh server process, in a browser profile that has opened every page twice")
    print("before (static files cached); navigation until the script finished and the page has rendered.")
    print(f"{'page':16s} {'returning (s)':>14s} {'script':>7s}")
    for name, r in results.items():
        print(f"{name:16s} {r['returning_s']:14.2f} {r['returning_script_s']:7.2f}")
    print(f"slowest returning-visitor load: {worst:.2f} s ({'under' if worst < 3 else 'OVER'} the 3 s target)")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="fake cached runs to generate (default 100)")
    parser.add_argument("--cached-dir", help="use this cached-runs folder instead of generating fake runs")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--repeat", type=int, default=1, help="cold measurements per page (fresh server each)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--apptest", action="store_true", help="no browser: time each page's script with AppTest")
    parser.add_argument("--screenshots", help="save a screenshot of every page (warm visit) into this folder")
    parser.add_argument("--pages", default=",".join(PAGES), help="comma list of pages (default: all)")
    parser.add_argument("--returning", action="store_true",
                        help="a fresh server per load, but a browser profile that has opened every page before")
    parser.add_argument("--plain", action="store_true",
                        help="start the server with `streamlit run dashboard/app.py` instead of `python -m dashboard`")
    args = parser.parse_args(argv)

    if not args.apptest and not Path(args.chromium).exists():
        print(f"{args.chromium} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="seqpate-coldload-"))
    if args.cached_dir:
        cached = Path(args.cached_dir).resolve()
        n_runs = sum(1 for p in cached.iterdir() if p.is_dir() and not p.name.startswith("."))
    else:
        from fake_runs import populate

        cached = work / "cached_runs"
        t = time.perf_counter()
        n_runs = len(populate(cached, args.runs))
        print(f"wrote {n_runs} fake cached runs in {time.perf_counter() - t:.1f} s to {cached}")
    (work / "runs").mkdir(exist_ok=True)
    env = dict(os.environ, SEQPATE_RUNS_DIR=str(work / "runs"), SEQPATE_CACHED_RUNS_DIR=str(cached),
               SEQPATE_CACHE=str(work / "cache"))
    log_path = work / "streamlit.log"
    if args.apptest:
        results = apptest_mode(env, n_runs)
        if args.json:
            Path(args.json).write_text(json.dumps({"runs": n_runs, "mode": "apptest", "pages": results}, indent=2))
        return 0 if all(r["exceptions"] == 0 for r in results.values()) else 1

    if args.returning:
        results = returning_mode(args, env, log_path, n_runs)
        if args.json:
            Path(args.json).write_text(json.dumps({"runs": n_runs, "mode": "returning", "pages": results}, indent=2))
        return 0 if all(r["exceptions"] == 0 for r in results.values()) else 1

    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        shots = Path(args.screenshots) if args.screenshots else None
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
        for name in args.pages.split(","):
            path = PAGES[name]
            colds, warms, starts = [], [], []
            for _ in range(args.repeat):
                proc, base, start_s = start_server(env, log_path, plain=args.plain)
                try:
                    context = browser.new_context(viewport={"width": 1400, "height": 1000})
                    context.add_init_script(RECORD_STATES)
                    colds.append(timed_visit(context, base + path))
                    warms.append(timed_visit(context, base + path, shots / f"{name}.png" if shots else None))
                    context.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
                starts.append(start_s)

            def med(rows: list[dict[str, float]], field: str) -> float:
                return statistics.median(r[field] for r in rows)

            results[name] = {
                "cold_s": med(colds, "drawn"), "cold_script_done_s": med(colds, "total"),
                "cold_script_s": med(colds, "script"),
                "warm_s": med(warms, "drawn"), "warm_script_s": med(warms, "script"),
                "server_start_s": statistics.median(starts),
                "exceptions": sum(r["errors"] for r in colds + warms),
            }
            r = results[name]
            print(f"  {name:16s} cold {r['cold_s']:5.2f} s (script {r['cold_script_s']:.2f})   warm {r['warm_s']:5.2f} s"
                  f" (script {r['warm_script_s']:.2f})" + (f"  EXCEPTIONS {r['exceptions']}"
                                                           if r["exceptions"] else ""), flush=True)
        browser.close()

    worst = max(r["cold_s"] for r in results.values())
    print(f"\n{n_runs} cached runs, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}.")
    started = "`streamlit run dashboard/app.py`" if args.plain else "`python -m dashboard` (libraries imported first)"
    print(f"cold: first visit on a fresh server process started with {started}, empty caches, a fresh browser")
    print("profile; navigation until the page's script finished AND the page has rendered (no loading skeleton, every")
    print("visible plotly chart and dataframe drawn). done: until the script finished only; script: the part between")
    print("the script starting and finishing (the rest is loading the Streamlit frontend and connecting); warm: the")
    print("same page again in a new tab of the same server.")
    print(f"{'page':16s} {'cold (s)':>9s} {'done':>6s} {'script':>7s} {'warm (s)':>9s} {'script':>7s}")
    for name, r in results.items():
        print(f"{name:16s} {r['cold_s']:9.2f} {r['cold_script_done_s']:6.2f} {r['cold_script_s']:7.2f} "
              f"{r['warm_s']:9.2f} {r['warm_script_s']:7.2f}")
    print(f"slowest cold load: {worst:.2f} s ({'under' if worst < 3 else 'OVER'} the 3 s target)")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": n_runs, "pages": results}, indent=2))
    return 0 if all(r["exceptions"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
