"""All runs: where they live, a cheap listing, repair of runs whose process died, lookup by id, new ids."""

from __future__ import annotations

import math
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.config import fixed_epsilon
from core.runs.store import (
    LOG,
    PROGRESS,
    SHIPPED_SUFFIX,
    STATES,
    STATUS,
    RunDir,
    RunFormatError,
    RunNotFoundError,
    process_alive,
)
from core.runs.values import as_float, as_str

# core/runs/registry.py -> the repository root is two folders above core/.
REPO_ROOT = Path(__file__).resolve().parents[2]

# A root is (folder, source); a bare folder counts as a live root.
Root = tuple[Path, str]
RootsArg = Sequence[tuple[str | os.PathLike[str], str] | str | os.PathLike[str]] | None


def live_root() -> Path:
    """Where new runs go: $SEQPATE_RUNS_DIR, else runs/ in the repository (read at call time, so tests can set it)."""
    env = os.environ.get("SEQPATE_RUNS_DIR")
    return Path(env).expanduser() if env else REPO_ROOT / "runs"


def cached_root() -> Path:
    """Finished runs shipped with the repository ($SEQPATE_CACHED_RUNS_DIR for tests); never written."""
    env = os.environ.get("SEQPATE_CACHED_RUNS_DIR")
    return Path(env).expanduser() if env else REPO_ROOT / "cached_runs"


def default_roots() -> list[Root]:
    return [(live_root(), "live"), (cached_root(), "cached")]


def _normalise_roots(roots: RootsArg) -> list[Root]:
    if roots is None:
        return default_roots()
    result: list[Root] = []
    for item in roots:
        if isinstance(item, tuple):
            folder, source = item
        else:
            folder, source = item, "live"
        if source not in ("live", "cached"):
            raise ValueError(f"root source must be live or cached, got {source!r}")
        result.append((Path(folder), source))
    return result


@dataclass(frozen=True)
class RunInfo:
    """One line of the run list; built from config.json and status.json only."""

    run_id: str
    path: Path
    source: str  # "live" | "cached"
    state: str
    stage: str | None
    progress: float
    method: str | None
    epsilon: float | None  # requested (config privacy.epsilon), not the accounted one; a method that takes no
    # epsilon has its fixed one (0 public only, inf unprotected), whatever its config holds
    preset: str | None
    created: str | None
    updated: str | None
    error: str | None

    @property
    def run_dir(self) -> RunDir:
        return RunDir(self.path, source=self.source)


def _mtime_iso(path: Path) -> str | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="milliseconds")
    except OSError:
        return None


def _requested_epsilon(method: str | None, privacy: dict) -> float | None:
    fixed = fixed_epsilon(method)
    return fixed if fixed is not None else as_float(privacy.get("epsilon"))


def run_info(run: RunDir, status: dict[str, Any] | None = None) -> RunInfo:
    """RunInfo for one folder (status: as reconcile found it, else read here); unreadable files give state "failed"
    instead of an exception."""
    try:
        status = status if status is not None else run.status()
        if status is None:
            raise RunFormatError(f"{run.path / STATUS} is missing")
        try:
            stored = run.config() or {}
        except RunFormatError:
            if status.get("state") != "done":
                raise
            stored = {}  # a finished run's config damaged since: named with the other damaged files below
    except RunFormatError as e:
        return RunInfo(
            run_id=run.run_id,
            path=run.path,
            source=run.source,
            state="failed",
            stage=None,
            progress=0.0,
            method=None,
            epsilon=None,
            preset=None,
            created=_mtime_iso(run.path),
            updated=_mtime_iso(run.path),
            error=f"unreadable run files: {e}",
        )
    config = stored.get("config") if isinstance(stored.get("config"), dict) else {}
    privacy = config.get("privacy") if isinstance(config.get("privacy"), dict) else {}
    progress = as_float(status.get("progress"))
    state = status.get("state") if status.get("state") in STATES else "failed"
    error = as_str(status.get("error"))
    if state == "done" and (damaged := run.damaged_files()):  # lost or garbled since: no results to read
        state, error = "failed", f"finished, but {', '.join(damaged)} missing or unreadable since"
    return RunInfo(
        run_id=run.run_id,
        path=run.path,
        source=run.source,
        state=state,
        stage=as_str(status.get("stage")),
        progress=min(1.0, max(0.0, progress)) if progress is not None and not math.isnan(progress) else 0.0,
        method=as_str(config.get("method")),
        epsilon=_requested_epsilon(as_str(config.get("method")), privacy),
        preset=as_str(config.get("preset")),
        created=as_str(status.get("created")) or as_str(stored.get("created")) or _mtime_iso(run.path),
        updated=as_str(status.get("updated")),
        error=error,
    )


def _run_folders(root: Path) -> Iterable[Path]:
    try:
        entries = sorted(root.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    # Hidden folders (.slots, temp dirs) are not runs; neither is a folder without status.json or config.json.
    return [p for p in entries if p.is_dir() and not p.name.startswith(".") and RunDir(p).exists()]


def last_sign_of_life(run_dir: RunDir, status: dict[str, Any]) -> str:
    """When a job whose process is gone last wrote anything (its status, a progress line, its log), as now_iso
    writes times: its end as well as can be known. Stamped "now", a killed run's elapsed time ran to whenever
    someone next looked (hours, for a job killed overnight)."""
    times = [str(status["updated"])] if status.get("updated") else []
    for name in (PROGRESS, LOG):
        try:
            mtime = (run_dir.path / name).stat().st_mtime
        except OSError:
            continue
        times.append(datetime.fromtimestamp(mtime, UTC).isoformat(timespec="milliseconds"))
    return max(times, default=None) or datetime.now(UTC).isoformat(timespec="milliseconds")


def reconcile(run_dir: RunDir) -> dict[str, Any] | None:
    """Mark a live run failed when its status says it is active but its process is gone; returns the status.

    Active means "running", or "queued" with a recorded pid (a launched job waiting for a slot). A queued run
    without a pid has not been started by anyone yet and is left alone. A shipped run's folder is never written,
    nor is one that cannot be (read-only, a full disk): the status returned reads failed all the same (a sweep
    killed while writing into cached_runs/, or a run whose folder became unwritable, showed "running" for good).
    """

    def looks_dead(status: dict[str, Any]) -> bool:
        state, pid = status.get("state"), status.get("pid")
        return (state == "running" or (state == "queued" and pid)) and not process_alive(pid, status.get("pid_started"))

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        # Check again under the lock: the job may have written a final state in between.
        if not looks_dead(current):
            return None
        stage = current.get("stage") or "unknown"
        return {"state": "failed", "error": f"process exited without finishing (stage: {stage})",
                "finished": last_sign_of_life(run_dir, current)}

    status = run_dir.status()
    if status is None or not looks_dead(status):
        return status
    if not run_dir.read_only:
        try:
            return run_dir.update_status(change)
        except OSError:
            pass
    return {**status, **(change(status) or {})}


def list_runs(roots: RootsArg = None) -> list[RunInfo]:
    """Every run under the roots, newest first; live runs with a dead process are reconciled first."""
    infos: list[RunInfo] = []
    for folder, source in _normalise_roots(roots):
        for path in _run_folders(folder):
            run = RunDir(path, source=source)
            try:
                status = reconcile(run)
            except RunFormatError:
                status = None  # run_info reports the unreadable files
            infos.append(run_info(run, status))
    infos.sort(key=lambda info: (info.created or "", info.run_id), reverse=True)
    return infos


def _has_separator(text: str) -> bool:
    return any(sep in text for sep in ("/", "\\", os.sep, os.altsep or "/"))


# A run made here in a folder named like a shipped run (`core run --run-dir runs/tiny-seqpate-eps3`, a sweep into
# runs/) shares its id: the shipped one is named with SHIPPED_SUFFIX wherever both are listed (the dashboard, `runs
# list`), and resolve_run takes the suffixed name, so that each name stands for one run (no run folder may end in
# it: store.check_new_run_dir).


def shadowed(run: RunDir) -> bool:
    """Whether this is a shipped run whose id a run made here also has."""
    return run.source == "cached" and (live_root() / run.run_id).is_dir()


def listed_id(run: RunDir) -> str:
    """A run's name as the listings give it: a shipped run with a run made here in a folder of its name is
    suffixed."""
    return run.run_id + SHIPPED_SUFFIX if shadowed(run) else run.run_id


def named_apart(infos: Sequence[RunInfo]) -> list[RunInfo]:
    """The listing with every name standing for one run: a shipped run whose id a run made here has is
    suffixed."""
    made_here = {info.run_id for info in infos if info.source != "cached"}
    return [replace(info, run_id=info.run_id + SHIPPED_SUFFIX)
            if info.source == "cached" and info.run_id in made_here else info for info in infos]


def resolve_run(
    id_or_path: str | os.PathLike[str], roots: RootsArg = None, *, allow_paths: bool = True
) -> RunDir:
    """A RunDir from a run id (a folder name under one of the roots, the live ones first; "ID (shipped)": the
    shipped run of that id) or, if allow_paths, a path to a run folder.

    Anything that looks like a path (a separator, '.' or '..') is accepted only if it is an existing run folder,
    so user input cannot point outside the roots at arbitrary folders. The dashboard should pass
    allow_paths=False.
    """
    text = os.fspath(id_or_path).strip()
    normalised = _normalise_roots(roots)
    if text.endswith(SHIPPED_SUFFIX):
        text = text.removesuffix(SHIPPED_SUFFIX).strip()
        normalised = [(folder, source) for folder, source in normalised if source == "cached"]
        if not text or _has_separator(text) or text in (".", ".."):  # a name, never a path, goes with the suffix
            raise RunNotFoundError(f"not a shipped run's name: {os.fspath(id_or_path).strip()!r}")
    if not text:
        raise RunNotFoundError("empty run id")
    if not _has_separator(text) and text not in (".", ".."):
        for folder, source in normalised:
            candidate = folder / text
            if candidate.is_dir() and RunDir(candidate).exists():
                return RunDir(candidate, source=source)
        where = ", ".join(str(folder) for folder, _ in normalised)
        raise RunNotFoundError(f"no run named {text!r} in {where}")
    if not allow_paths:
        raise RunNotFoundError(f"not a run id (ids are plain folder names): {text!r}")
    path = Path(text).expanduser().resolve()
    if not (path.is_dir() and RunDir(path).exists()):
        raise RunNotFoundError(f"not a run folder: {text}")
    source = "live"
    for folder, root_source in normalised:
        if path.is_relative_to(folder.expanduser().resolve()):
            source = root_source
            break
    # A path under the shipped folder is cached whatever roots were passed: those runs are never written.
    if path.is_relative_to(cached_root().resolve()):
        source = "cached"
    return RunDir(path, source=source)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "run"


def eps_label(epsilon: float | str | None) -> str:
    """An epsilon as run names write it: 3, 0.5, 1e-06, inf ("na" where there is none)."""
    value = as_float(epsilon)
    if value is None or math.isnan(value):
        return "na"
    if math.isinf(value):
        return "inf"
    return f"{value:g}".replace("+", "")


def new_run_id(method: str, epsilon: float | str | None) -> str:
    """e.g. "20261122-071500-seqpate-eps3-ab12": UTC time, method, epsilon (a method's fixed one where no setting
    changes it: pub-gpt-eps0, pri-gpt-epsinf), 4 random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    fixed = fixed_epsilon(method)
    label = eps_label(fixed if fixed is not None else epsilon)
    return f"{stamp}-{_slug(method)}-eps{label}-{secrets.token_hex(2)}"


def is_safe_run_id(run_id: str) -> bool:
    """A run id must be a plain, visible folder name, and not a name the listings give a shipped run."""
    return (bool(run_id) and not _has_separator(run_id) and not run_id.startswith(".") and "\0" not in run_id
            and not run_id.endswith(SHIPPED_SUFFIX))


__all__ = [
    "REPO_ROOT",
    "RunInfo",
    "SHIPPED_SUFFIX",
    "cached_root",
    "default_roots",
    "is_safe_run_id",
    "last_sign_of_life",
    "list_runs",
    "listed_id",
    "live_root",
    "named_apart",
    "new_run_id",
    "reconcile",
    "resolve_run",
    "run_info",
    "shadowed",
]
