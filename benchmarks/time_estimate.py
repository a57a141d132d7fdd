"""How close the Runs page's remaining-time estimate comes to the truth, replayed on finished runs.

Each finished run is replayed at 20, 40, 60 and 80% of its wall time: its status as it was then (the progress of
its last progress line, and when that progress was first reached) goes through the dashboard's `timing`, once with
the pace so far alone (t (1 - p) / p) and once as the Runs page paces it: `choose_pace` among the `pace_runs` of
the runs that had finished when it started (none: the pace so far again). Printed per point: how many runs, how many
were paced on a finished run, the share within 1.5x of the time the run still took, and the median of
estimate / truth (an unknown estimate counts as 0).

    python benchmarks/time_estimate.py                      # the shipped runs
    python benchmarks/time_estimate.py --runs-dir runs
    python benchmarks/time_estimate.py --runs-dir runs --paced-on cached_runs   # runs made here, on shipped runs
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.runs.values import parse_time  # noqa: E402
from dashboard import estimate, loading  # noqa: E402

POINTS = (0.2, 0.4, 0.6, 0.8)


def load(folder: Path) -> list[dict]:
    """A record per finished run (what pace_runs reads) with its progress lines; unreadable runs are skipped."""
    runs = []
    for d in sorted(p for p in folder.iterdir() if (p / "progress.jsonl").is_file()):
        try:
            status = json.loads((d / "status.json").read_text())
            cfg = json.loads((d / "config.json").read_text())["config"]
            lines = [json.loads(line) for line in (d / "progress.jsonl").read_text().splitlines() if line.strip()]
            base = (json.loads((d / "metrics.json").read_text()).get("base_model") or {})
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if status.get("state") != "done" or not status.get("started") or not status.get("finished"):
            continue
        profile = estimate.progress_profile(lines, status["started"])
        if profile:
            runs.append({"run_id": d.name, "state": "done", "preset": cfg.get("preset"), "method": cfg.get("method"),
                         "variant": loading.variant_label(loading.variant_settings(cfg)), "started": status["started"],
                         "finished": status["finished"], "base_cached": base.get("cached"), "lines": lines,
                         "profile": profile})
    return runs


def status_at(started: str, lines: list[dict], seconds: float) -> dict | None:
    """The running status the run had `seconds` in (the progress of its last line by then, and when it was
    first reached), or None before its first progress."""
    now = parse_time(started) + timedelta(seconds=seconds)
    seen = [line for line in lines if isinstance(line, dict) and line.get("progress") is not None
            and (parse_time(line.get("time")) or now) <= now]
    if not seen:
        return None
    progress = seen[-1]["progress"]
    moved = next(line for line in seen if line["progress"] == progress)["time"]
    return {"state": "running", "started": started, "progress": progress, "progressed": moved}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", default=str(ROOT / "cached_runs"))
    parser.add_argument("--paced-on", nargs="*", default=[], metavar="DIR",
                        help="more finished runs to pace on (runs made here, paced on the shipped ones)")
    parser.add_argument("--min-seconds", type=float, default=60.0, help="leave out runs shorter than this")
    args = parser.parse_args()
    runs = load(Path(args.runs_dir))
    pool = runs + [r for folder in args.paced_on for r in load(Path(folder))]
    ratios: dict[str, dict[float, list[float]]] = {"pace so far": {}, "as the Runs page paces it": {}}
    paced: dict[float, int] = {}
    for run in runs:
        total = run["profile"][-1][1]
        if total < args.min_seconds:
            continue
        then = [r for r in pool if r["finished"] < run["started"]]  # what a live run would have seen
        start = parse_time(run["started"])
        for point in POINTS:
            status = status_at(run["started"], run["lines"], point * total)
            if status is None:
                continue
            now = start + timedelta(seconds=point * total)
            so_far = [line for line in run["lines"] if (parse_time(line.get("time")) or now) <= now]
            trains = estimate.trains_its_base(so_far)
            candidates = [(then[i]["run_id"], then[i]["lines"], then[i]["started"])
                          for i in estimate.pace_runs(run, then, trains)]
            pace = estimate.choose_pace(float(status["progress"]), so_far, run["started"], candidates)
            paced[point] = paced.get(point, 0) + (pace is not None)
            truth = total * (1 - point)
            for label, chosen in (("pace so far", None), ("as the Runs page paces it", pace)):
                _, remaining = estimate.timing(status, now, chosen and chosen.profile, chosen.origin if chosen else 0.0,
                                               chosen.anchor if chosen else None)
                ratios[label].setdefault(point, []).append((remaining or 0.0) / truth)
    print(f"{len(runs)} finished runs in {args.runs_dir}; replayed: those of at least {args.min_seconds:.0f} s")
    print("| estimate | at | runs | paced on a finished run | within 1.5x | median estimate / truth |\n"
          "|---|---|---|---|---|---|")
    for label, by_point in ratios.items():
        for point, values in sorted(by_point.items()):
            within = sum(1 / 1.5 <= v <= 1.5 for v in values) / len(values)
            shown = paced[point] if label != "pace so far" else 0
            print(f"| {label} | {point:.0%} | {len(values)} | {shown} | {within:.0%} | "
                  f"{statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
