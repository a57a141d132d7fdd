"""A running run's elapsed and remaining time, from its status.json and progress lines.

The remaining time is paced on a finished run of the same kind (choose_pace): how long that run still took after
the same progress, scaled by how long each took to get there. Progress bars that split differently between the base
model and the method (a run that trains its base model gives it the first half) are compared on the method's time
alone. benchmarks/time_estimate.py replays the shipped runs through these functions and prints how close they come.
Pure functions over parsed run files: no streamlit, no file reads.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from core.runs import store
from core.runs.values import as_float, parse_time


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and (math.isnan(seconds) or math.isinf(seconds))):
        return "–"
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def progress_profile(lines: Sequence[Any], started: str | None) -> list[tuple[float, float]]:
    """A finished run's pace from its progress.jsonl: (progress, seconds after its start) where it first reached
    each progress value below 1, both rising, then (1, its last line's time). [] without a start or times; lines
    that are not objects or have no time are skipped."""
    start = parse_time(started)
    profile: list[tuple[float, float]] = []
    end = None
    for line in lines if start else []:
        stamp = parse_time(line.get("time")) if isinstance(line, Mapping) else None
        if stamp is None:
            continue
        end = max(0.0, (stamp - start).total_seconds(), end or 0.0)  # a clock set back does not undo time spent
        progress = as_float(line.get("progress"))
        if progress is not None and progress < 1.0 and (not profile or progress > profile[-1][0]):
            profile.append((progress, end))
    return [*profile, (1.0, end)] if end is not None else []


# Times to reach a progress value below this count as this: the ratio of two runs' times of a few seconds says more
# about start-up jitter than about their speed, and a floor keeps the scale from jumping as one crosses it.
MIN_PACE_S = 10.0


def paces(profile: Sequence[tuple[float, float]], progress: float) -> bool:
    """A finished run's profile says what is left after `progress`: it logged that progress, or more, below 1."""
    return any(progress <= value < 1.0 for value, _ in profile)


def paced_remaining(progress: float, at: float, elapsed: float, profile: Sequence[tuple[float, float]],
                    anchor: tuple[float, float] | None = None) -> float | None:
    """Remaining seconds of a run that reached `progress` `at` seconds in (`elapsed` seconds now), paced on a
    finished run of the same kind whose profile paces it (paces()): the time that run still took after the same
    progress, scaled by how long each took to get there, less the time since the progress moved; None once past it.
    With an anchor (this run's and the finished run's seconds where a stage that may come from a cache ended:
    Pace.anchor), "to get there" counts from it once both are past it.

    Progress fractions are not proportional to time (a run's last 10% evaluates for minutes): replayed on the shipped
    runs (benchmarks/time_estimate.py), each paced as the dashboard would have paced it then, this was within 1.5x
    of the time they still took for 70-77% of them at a fifth to four fifths of their time, t (1 - p) / p for
    27-60% (median 0.51x at a fifth)."""
    reached = [seconds for value, seconds in profile if value >= progress]
    if not reached:
        return None
    ref_at, total = reached[0], profile[-1][1]
    own_from, ref_from = anchor if anchor and at >= anchor[0] and ref_at >= anchor[1] else (0.0, 0.0)
    scale = max(at - own_from, MIN_PACE_S) / max(ref_at - ref_from, MIN_PACE_S)
    estimate = scale * (total - ref_at) - (elapsed - at)
    return estimate if estimate >= 0 else None


# Stages whose result may come from a cache: the pseudo data (core.seqpate.pseudo) took one shipped tiny run under a
# second and a run made here 25 s, and scaling a pace by the time to reach the teachers made it 5x too long.
CACHED_STAGES = ("pseudo-data",)


def after_cached_stage(lines: Sequence[Any], started: str | None) -> float | None:
    """Seconds after `started` of a run's first line with a progress after its last line of a stage that may come
    from a cache (CACHED_STAGES); None when it logged none, is still in it, or without times."""
    start = parse_time(started)
    last = max((i for i, line in enumerate(lines) if isinstance(line, Mapping) and line.get("stage") in CACHED_STAGES),
               default=None)
    if start is None or last is None:
        return None
    line = next((line for line in lines[last + 1:] if isinstance(line, Mapping) and line.get("progress") is not None),
                None)
    stamp = parse_time(line.get("time")) if line is not None else None
    return max(0.0, (stamp - start).total_seconds()) if stamp is not None else None


def _starts_method(line: Any) -> bool:
    """The line core.runs.pipeline logs as a run's method starts ("method NAME")."""
    return isinstance(line, Mapping) and str(line.get("message", "")).startswith("method ")


def method_start(lines: Sequence[Any]) -> float | None:
    """Where a run's progress bar starts its method (store.METHOD_START_*: later when it trains its base model): the
    method_start its first base-model line logs, or in runs from before that was logged the progress of the line
    that starts the method; None before either, and for a bar with no such split (synthetic data)."""
    for line in lines:
        if isinstance(line, Mapping):
            logged = as_float(line.get("method_start"))
            if logged is not None:
                return logged
            if _starts_method(line):
                return as_float(line.get("progress"))
    return None


def method_began(lines: Sequence[Any], started: str | None) -> float | None:
    """Seconds after `started` at which a run's method began (its line that starts the method); None before that,
    or without times. Not where the progress first reached the method's start: the last base-model epoch does, and
    saving the base model follows it."""
    start = parse_time(started)
    line = next((line for line in lines if _starts_method(line)), None)
    stamp = parse_time(line.get("time")) if line is not None else None
    return max(0.0, (stamp - start).total_seconds()) if stamp is not None and start is not None else None


def on_method_time(profile: Sequence[tuple[float, float]], start: float, to: float,
                   began: float) -> list[tuple[float, float]]:
    """A finished run's profile whose method started at `start` on its bar, `began` seconds in, as a run whose
    method starts at `to` sees it: from the start of its method, timed from then, with the method's share of the bar
    stretched onto [to, METHOD_END) and evaluation's where it was. So a run that trains its base model (half its
    bar) is paced on one that found it trained, and the reverse, on the method alone."""
    if not (start < store.METHOD_END and to < store.METHOD_END):  # a damaged start: nothing to stretch
        return []
    stretch = (store.METHOD_END - to) / (store.METHOD_END - start)
    return [(value if value >= store.METHOD_END else to + (value - start) * stretch, max(0.0, seconds - began))
            for value, seconds in profile if value >= start]


@dataclass(frozen=True)
class Pace:
    """What a running run's remaining time is paced on (choose_pace)."""

    run_id: str
    profile: list[tuple[float, float]]  # on the running run's progress bar
    origin: float  # the running run's seconds that the profile's times count from: 0, or when its method began
    ref_start: float | None  # where the finished run's method started on its bar (method_start; None: not known)
    ref_took: float  # seconds the finished run took in all
    # (this run's seconds from origin, the profile's seconds) where both ended a stage that may come from a cache
    anchor: tuple[float, float] | None = None


def choose_pace(progress: float, lines: Sequence[Any], started: str | None,
                references: Iterable[tuple[str, Sequence[Any], str | None]]) -> Pace | None:
    """The pace of a running run at `progress` (its progress lines and start): the first of `references` (run id,
    progress lines and start of finished runs, best first) whose profile paces it (paces) and whose method starts
    where its own does, or either start is unknown; else the first that paces it on the method's time alone
    (on_method_time), once its method has begun; else None (the pace so far)."""
    start = method_start(lines)
    began = method_began(lines, started) if start is not None else None
    own_after = after_cached_stage(lines, started)

    def anchor(ref_lines, ref_started, origin: float, shift: float) -> tuple[float, float] | None:
        ref_after = after_cached_stage(ref_lines, ref_started)
        if own_after is None or ref_after is None or own_after < origin or ref_after < shift:
            return None
        return own_after - origin, ref_after - shift

    fallback = None
    for run_id, ref_lines, ref_started in references:
        profile, ref_start = progress_profile(ref_lines, ref_started), method_start(ref_lines)
        if start is None or ref_start is None or ref_start == start:
            if paces(profile, progress):
                return Pace(run_id, profile, 0.0, ref_start, profile[-1][1], anchor(ref_lines, ref_started, 0.0, 0.0))
        elif fallback is None and began is not None:
            ref_began = method_began(ref_lines, ref_started)
            moved = on_method_time(profile, ref_start, start, ref_began) if ref_began is not None else []
            if paces(moved, progress):
                fallback = Pace(run_id, moved, began, ref_start, profile[-1][1],
                                anchor(ref_lines, ref_started, began, ref_began))
    return fallback


def timing(status: dict[str, Any], now: datetime | None = None, profile: Sequence[tuple[float, float]] | None = None,
           origin: float = 0.0, anchor: tuple[float, float] | None = None) -> tuple[float | None, float | None]:
    """(elapsed seconds, estimated remaining seconds) from status.json.

    The pace is read where the progress last moved (t seconds in, at fraction p): with a finished run of the same
    kind that paces it (profile, whose times count from `origin` seconds into this run, and anchor: Pace),
    paced_remaining;
    else t * (1 - p) / p remain from there, less the time since, once t is at least MIN_PACE_S (loading the data
    reaches 4% in 1.5 s, which would estimate 35 s for a run that takes minutes). A stage that writes no
    progress (tokenizer training, say) so counts the estimate down instead of stretching it, and once it runs past
    the estimate the remaining time is unknown (None)."""
    now = now or datetime.now(UTC)
    started = parse_time(status.get("started"))
    if started is None:
        return None, None
    state = status.get("state")
    end = parse_time(status.get("finished")) if state in store.TERMINAL else now
    elapsed = max(0.0, ((end or now) - started).total_seconds())
    remaining = None
    progress = as_float(status.get("progress")) or 0.0
    if state == "running" and 0.01 <= progress < 1.0:
        moved = parse_time(status.get("progressed"))  # absent in status files written before it was recorded
        at = min(elapsed, max(0.0, (moved - started).total_seconds())) if moved else elapsed
        if profile and paces(profile, progress):  # the progress may have last moved just before origin
            remaining = paced_remaining(progress, max(0.0, at - origin), max(0.0, elapsed - origin), profile, anchor)
        elif at >= MIN_PACE_S:  # a pace of a few seconds is start-up: loading the data reaches 4% in 1-3 s
            estimate = at * (1.0 - progress) / progress - (elapsed - at)
            remaining = estimate if estimate >= 0 else None
    elif state == "done":
        remaining = 0.0
    return elapsed, remaining


def trains_its_base(lines: Sequence[Any]) -> bool:
    """A run's progress lines show it training its base model: its bar starts the method late (method_start), or,
    where that is not known (synthetic data; runs before their method's first line), core.base logs the tokenizer
    or an epoch."""
    start = method_start(lines)
    if start is not None:
        return start == store.METHOD_START_TRAINING
    return any(isinstance(line, Mapping) and line.get("stage") == "base-model"
               and ("epoch" in line or str(line.get("message", "")).startswith("training")) for line in lines)


def pace_runs(record: Mapping[str, Any], records: Sequence[Mapping[str, Any]], trains_base: bool = False) -> list[int]:
    """Indexes in records of the finished runs a running one's remaining time may be paced on, best first: of its
    preset and method, on its data and base model (setup) and at its settings (variant) if any run is, else at any; those that, like it (trains_base),
    trained their base model or found it trained (one that trains it spends the first half of its progress bar on
    that; choose_pace reads where each bar's method starts), then the most recently finished."""
    kin = [i for i, r in enumerate(records) if r["state"] == "done" and r is not record and r.get("started")
           and r["preset"] == record["preset"] and r["method"] == record["method"]]
    # on its data and base model (a corpus of the user's own has other sizes) where any run is
    kin = [i for i in kin if (records[i].get("setup") or "chitchat") == (record.get("setup") or "chitchat")] or kin
    alike = [i for i in kin if (records[i].get("variant") or "") == (record.get("variant") or "")] or kin
    return sorted(alike, reverse=True, key=lambda i: ((records[i].get("base_cached") is False) == trains_base,
                                                      records[i].get("finished") or "", records[i]["run_id"]))


def past_durations(record: Mapping[str, Any],
                   records: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, float | None]]:
    """For the Launch page, so that a run's time is known before launching it: the finished runs
    that a run about to be launched (record: its preset, method, variant, target ε) should take about as long as,
    best first, each with its time without its base model's training or loading, as (run id, seconds, its target ε
    or None).
    They are pace_runs' with a recorded total time, of the same target ε first. The page says the base model's
    training comes on top where this machine has not done it (left in, it was counted twice)."""
    kin = pace_runs(record, records)
    target = as_float(record.get("epsilon_target"))
    if target is not None:
        kin.sort(key=lambda i: as_float(records[i].get("epsilon_target")) != target)  # stable: pace_runs' order next
    found = []
    for i in kin:
        total, base = as_float(records[i].get("total_s")), as_float(records[i].get("base_model_s"))
        if total is None or not math.isfinite(total) or total <= 0:
            continue
        took = total - base if base is not None and math.isfinite(base) and 0 <= base < total else total
        found.append((str(records[i]["run_id"]), took, as_float(records[i].get("epsilon_target"))))
    return found


def base_training(preset: str, records: Sequence[Mapping[str, Any]]) -> tuple[int, float] | None:
    """(how many, median seconds) of the finished text-generation runs of this preset that trained their base model
    (found none cached), for the Launch page's "training one comes on top"; None where no run records one. The
    median: one trained beside other jobs took three times as long (quick: 77, 78 and 229 s)."""
    took = [float(r["base_model_s"]) for r in records
            if r.get("state") == "done" and r.get("preset") == preset and r.get("base_cached") is False
            and not str(r.get("method") or "").startswith("synth-") and (as_float(r.get("base_model_s")) or 0.0) > 0]
    return (len(took), float(np.median(took))) if took else None


def bar_share(start: float | None) -> str | None:
    """What a progress bar whose method starts at `start` gives the base model, in words."""
    return {store.METHOD_START_TRAINING: "the base model's training the first half of it",
            store.METHOD_START_CACHED: "the base model none of it"}.get(start)


def estimate_help(record: Mapping[str, Any]) -> str:
    """The help of a run's "remaining (est.)": what paced it (a record of run_records) and how."""
    def known(key: str) -> float | None:  # a DataFrame row holds NaN where the field is absent
        value = as_float(record.get(key))
        return None if value is None or math.isnan(value) else value

    def flag(key: str) -> bool | None:  # or numpy's bool where a column holds nothing else
        value = record.get(key)
        return bool(value) if isinstance(value, bool | np.bool_) else None

    unknown = "unknown (–) once a stage runs longer than that predicts"
    paced_on = record.get("paced_on") if isinstance(record.get("paced_on"), str) else None
    start, share = known("method_start"), bar_share(known("method_start"))
    if record.get("state") != "running":
        return "estimated while the run runs"
    if paced_on:
        ref_share = bar_share(known("paced_start"))
        # Pace.anchor: both runs' times count from the end of their pseudo data, which one may have found cached
        from_pseudo = " from the end of its pseudo data, which either may have found cached" \
            if flag("paced_from_pseudo") else ""
        took = known("paced_took_s")
        which = (f"paced on {paced_on}" + (f" (it took {fmt_duration(took)} in all)" if took is not None else "")
                 + ", a finished run of this method and preset (at these settings where one is; of those, one whose base "
                 "model was trained or cached as this run's is, then the most recent)")
        if share and ref_share and share != ref_share:
            return (f"{which}. Its progress bar gave {ref_share}, this one's gives {share}, so it paces the method's "
                    "time alone: the time that run's method still took after the same point of it, scaled by how long "
                    f"each method took to get there{from_pseudo} (times under {MIN_PACE_S:.0f} s count as "
                    f"{MIN_PACE_S:.0f} s); "
                    f"{unknown}")
        like = f", whose progress bar, like this one's, gives {share}" if share and ref_share else ""
        return (f"{which}{like}: the time it still took after this progress, scaled by how long each took to reach "
                f"it{from_pseudo} (times under {MIN_PACE_S:.0f} s count as {MIN_PACE_S:.0f} s, so the first seconds "
                f"show about that run's own time); {unknown}")
    # a running run's record has both flags (_paced); progress alone cannot say it: the last epoch reaches the
    # method's start before the base model is saved and the method begins
    if start == store.METHOD_START_TRAINING and flag("has_kin") is True and flag("method_begun") is False:
        return ("from the pace so far until its method begins: no finished run of this method and preset that it may "
                "be paced on (the last ones, at these settings where one is) gives the base model's training half its "
                "progress bar, as this one's does; from then on one of them paces the method's time alone; "
                f"{unknown}")
    return (f"from the pace so far (no finished run of this method and preset that got this far to pace it on), "
            f"once the progress has moved {MIN_PACE_S:.0f} s in; {unknown}")
