"""How close the Runs page's remaining-time estimate comes to the truth, replayed on finished runs.

Each finished run is replayed at 20, 40, 60 and 80% of its wall time: its status as it was then (the progress of
its last progress line, and when that progress was first reached) goes through the dashboard's `timing`, once with
the pace so far alone (t (1 - p) / p) and once paced on another finished run of its preset, method and settings
(`progress_profile` of that run; of its preset and method where no other has its settings). Printed per point: how
many runs, the share within 1.5x of the time the run still took, and the median of estimate / truth.

    python benchmarks/time_estimate.py                      # the shipped runs
    python benchmarks/time_estimate.py --runs-dir runs
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

from dashboard import common as c  # noqa: E402

POINTS = (0.2, 0.4, 0.6, 0.8)


def load(folder: Path) -> dict[str, tuple]:
    runs = {}
    for d in sorted(p for p in folder.iterdir() if (p / "progress.jsonl").is_file()):
        status = json.loads((d / "status.json").read_text())
        if status.get("state") != "done":
            continue
        cfg = json.loads((d / "config.json").read_text())["config"]
        lines = [json.loads(line) for line in (d / "progress.jsonl").read_text().splitlines() if line.strip()]
        kind = (cfg.get("preset"), cfg.get("method"), c.variant_label(c.variant_settings(cfg)))
        runs[d.name] = (kind, status["started"], lines, c.progress_profile(lines, status["started"]))
    return runs


def status_at(started: str, lines: list[dict], seconds: float) -> dict | None:
    """The running status the run had `seconds` in (the progress of its last line by then, and when it was
    first reached), or None before its first progress."""
    now = c._parse_time(started) + timedelta(seconds=seconds)
    seen = [line for line in lines if line.get("progress") is not None and c._parse_time(line["time"]) <= now]
    if not seen:
        return None
    progress = seen[-1]["progress"]
    moved = next(line for line in seen if line["progress"] == progress)["time"]
    return {"state": "running", "started": started, "progress": progress, "progressed": moved}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", default=str(ROOT / "cached_runs"))
    parser.add_argument("--min-seconds", type=float, default=60.0, help="leave out runs shorter than this")
    args = parser.parse_args()
    runs = load(Path(args.runs_dir))
    ratios: dict[str, dict[float, list[float]]] = {"pace so far": {}, "paced on a finished run": {}}
    for name, (kind, started, lines, profile) in runs.items():
        others = ([o for o, v in runs.items() if o != name and v[0] == kind]
                  or [o for o, v in runs.items() if o != name and v[0][:2] == kind[:2]])
        if not others or not profile or profile[-1][1] < args.min_seconds:
            continue
        reference = runs[others[0]][3]
        total = profile[-1][1]
        for point in POINTS:
            status = status_at(started, lines, point * total)
            if status is None:
                continue
            now = c._parse_time(started) + timedelta(seconds=point * total)
            truth = total * (1 - point)
            for label, pace in (("pace so far", None), ("paced on a finished run", reference)):
                _, estimate = c.timing(status, now, pace)
                ratios[label].setdefault(point, []).append((estimate or 0.0) / truth)
    print(f"{len(runs)} finished runs in {args.runs_dir}; replayed: those of at least {args.min_seconds:.0f} s "
          "with another run of their kind")
    print("| estimate | at | runs | within 1.5x | median estimate / truth |\n|---|---|---|---|---|")
    for label, by_point in ratios.items():
        for point, values in sorted(by_point.items()):
            within = sum(1 / 1.5 <= v <= 1.5 for v in values) / len(values)
            print(f"| {label} | {point:.0%} | {len(values)} | {within:.0%} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
