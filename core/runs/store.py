"""One run directory on disk: atomic file writes, status updates and readers.

The layout is the contract between the engine (which writes runs) and the dashboard (which reads them); see
"A run on disk" in the README. Every whole-file write goes through a temp file + os.replace, so a reader sees
either the old file or the new one, never half of one. progress.jsonl is append-only with one os.write per line.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import math
import os
import platform
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from core.config import stable_hash

STATES = ("queued", "running", "done", "failed", "cancelled")
TERMINAL = ("done", "failed", "cancelled")

CONFIG = "config.json"
STATUS = "status.json"
PROGRESS = "progress.jsonl"
PRIVACY = "privacy.json"
METRICS = "metrics.json"
COMPLETIONS = "completions.jsonl"
PHRASES = "phrases.csv"
MODEL = "model"  # the final weights and tokenizer (optional; never shipped: git ignores cached_runs/*/model/)
TEST_NLL = "test_nll.csv"  # per test sentence: summed NLL and predicted tokens (optional; for paired comparisons)
LOG = "log.txt"
CANCEL_MARKER = "cancel.requested"
STATUS_LOCK = ".status.lock"

# A run's progress bar (progress.jsonl): data up to 0.04, then the base model, then the method from METHOD_START_*
# to METHOD_END, then evaluation. Training the base model (once per preset and seed) can take as long as the method
# itself, so a run that trains it gives it the bar's first half; the run logs which start it chose as method_start
# on its first base-model line (since 2026-11-26; before, the method's first line was the only record of it).
METHOD_START_CACHED = 0.1
METHOD_START_TRAINING = 0.5
METHOD_END = 0.9

# phrases.csv is optional: not every method has secret phrases.
REQUIRED_FILES = (CONFIG, STATUS, PROGRESS, PRIVACY, METRICS, COMPLETIONS)
PHRASE_COLUMNS = ("phrase", "occurrences", "users", "teachers", "epsilon")
_INT_COLUMNS = ("occurrences", "users", "teachers")

# Recorded in config.json so a run says what it ran with; read from metadata so torch is never imported here.
VERSION_PACKAGES = (
    "seqpate-bench",
    "torch",
    "transformers",
    "tokenizers",
    "opacus",
    "autodp",
    "dp-accounting",
    "numpy",
    "scipy",
    "sacrebleu",
)


def is_synth(stored: dict[str, Any]) -> bool:
    """A config.json of a DP synthetic-data run (`python -m core synth`): its own config, metrics and files."""
    return str((stored.get("config") or {}).get("method", "")).startswith("synth-")


class RunError(Exception):
    """Base class of every run-directory error; the message is one line meant for the user."""


class RunExistsError(RunError, FileExistsError):
    pass


class RunFormatError(RunError, ValueError):
    """A run file exists but cannot be parsed."""


class RunNotFoundError(RunError, LookupError):
    pass


class RunReadOnlyError(RunError, PermissionError):
    """A write to a shipped (cached) run, or another change the run's state does not allow."""


# A run made here in a folder named like a shipped run shares its id: the listings name the shipped one with this
# suffix (registry.named_apart), so no run folder may be named with it.
SHIPPED_SUFFIX = " (shipped)"


def check_new_run_dir(path: Path) -> None:
    """RunExistsError unless a new run can be made at path: an absent path or an empty folder, with no file on
    the way to it, whose name is not one the listings give a shipped run. Checked before anything is written, so
    a refusal leaves everything as it was."""
    if path.name.endswith(SHIPPED_SUFFIX):
        raise RunExistsError(f"run directory {path}: a name ending in {SHIPPED_SUFFIX.strip()!r} is how the run "
                             "listings name a shipped run; choose another")
    for parent in path.absolute().parents:  # a run inside a run would be listed as neither, and deleted with it
        if (parent / STATUS).is_file() and (parent / CONFIG).is_file():  # both: a config.json alone is common
            raise RunExistsError(f"run directory {path} would be inside the run folder {parent}: choose a path "
                                 "outside it")
    if path.is_dir():
        if any(path.iterdir()):
            raise RunExistsError(f"run directory already exists: {path}{_holding(path)}")
        return
    if os.path.lexists(path):  # lexists: a link pointing nowhere is in the way too
        raise RunExistsError(f"run directory already exists: {path} is {_what_is(path)}")
    for parent in path.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise RunExistsError(f"run directory {path} cannot be made: {parent} is {_what_is(parent)}")
            return


def _holding(path: Path) -> str:
    """What an existing folder holds, for the refusal: a run named with its state (a failed or killed run is not
    rerun in place: a new folder keeps both), else nothing more."""
    try:
        state = RunDir(path).state()
    except RunError:
        return " (a run folder with unreadable files; choose another path, or delete it first)"
    if state is None:
        return ""
    return f" (a {state} run; choose another path, or delete it first)"


def _what_is(path: Path) -> str:
    return "a link to nothing" if path.is_symlink() and not path.exists() else "a file"


def now_iso() -> str:
    """UTC timestamp with milliseconds; strings of this form sort in time order."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# ----------------------------------------------------------------------------------------------------------------
# Low-level file helpers
# ----------------------------------------------------------------------------------------------------------------


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write text so that readers see either the old file or the whole new one."""
    path = Path(path)
    # The temp file must live in the same folder: os.replace is only atomic within one filesystem.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; run files are meant to be readable
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    # allow_nan (json's default) writes Infinity/NaN: an epsilon may be infinite.
    atomic_write_text(path, json.dumps(obj, indent=2, allow_nan=True) + "\n")


def append_jsonl(path: str | os.PathLike[str], obj: Any) -> None:
    """Append one JSON line with a single write on an O_APPEND descriptor.

    O_APPEND makes the seek-to-end and the write one step, so lines from concurrent appenders never interleave.
    """
    data = (json.dumps(obj, separators=(",", ":"), allow_nan=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        # Regular files do not short-write in practice (only on a full disk); finish the line if it happens.
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def read_text_if_present(path: Path) -> str | None:
    """A run file's text, None if it is absent; RunFormatError naming the file if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise RunFormatError(f"cannot read {path}: {e}") from e


def read_json(path: Path) -> Any | None:
    """Parsed JSON, None if the file is absent; RunFormatError naming the file if it does not parse."""
    text = read_text_if_present(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as e:  # JSONDecodeError, or an integer of more than 4300 digits
        raise RunFormatError(f"invalid JSON in {path}: {e}") from None
    except RecursionError:  # garbage such as thousands of nested brackets
        raise RunFormatError(f"invalid JSON in {path}: nested too deeply") from None


def read_jsonl(path: Path) -> list[Any]:
    """All lines of a JSON-lines file ([] if absent). A trailing line without newline that does not parse is a
    write in progress and is skipped; a bad line anywhere else raises RunFormatError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as e:
        raise RunFormatError(f"cannot read {path}: {e}") from e
    lines = text.split("\n")
    rows: list[Any] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError) as e:  # ValueError: JSONDecodeError or a 4300+ digit integer
            if i == len(lines) - 1:  # no newline after it: an append still being written
                break
            raise RunFormatError(f"invalid JSON on line {i + 1} of {path}: {e}") from None
    return rows


def pid_alive(pid: int | None) -> bool:
    """True if a process with this pid exists and is not a zombie."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid < 2**31:  # a garbled pid is no process
        return False
    # A finished child of this process stays a zombie until waited for: jobs.launch has a thread wait for each job
    # it starts, and this reaps any other child.
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except OSError:  # ChildProcessError: not our child, the usual case
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    # Zombies of other parents still answer kill(0); /proc tells them apart where it exists (Linux).
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # gone in between, or a system without /proc
    except OSError:
        return True
    # Format: "pid (comm) S ...": comm may contain spaces or ')', so split after the last ')'.
    state = stat.rpartition(")")[2].split()[:1]
    return state != ["Z"] and state != ["X"]


def process_start(pid: int) -> str | None:
    """When the process with this pid started, in clock ticks since boot (Linux's /proc/PID/stat field 22); None
    where there is no /proc or no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # the fields after the command name, which may hold ")" or spaces


def process_alive(pid: int | None, started: str | None) -> bool:
    """True if the process recorded as (pid, start time) still runs: its pid alive and started when recorded.

    A pid is reused once its process is gone (after a reboot, or when the system wraps around), so a bare pid
    would keep a dead job "running" forever and let cancel signal a stranger. A start time not recorded (runs
    written before it was) or not readable (no /proc) trusts the pid alone.
    """
    return pid_alive(pid) and (started is None or process_start(pid) in (started, None))


def collect_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in VERSION_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _safe_name(name: str) -> str:
    """Extra files are plain names inside the run folder: no separators, no '..'."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def _number(text: str, path: Path, column: str) -> int | float | None:
    text = text.strip()
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)  # accepts inf / Infinity / nan
    except ValueError:
        raise RunFormatError(f"{path}: column {column!r} has a non-number {text!r}") from None
    return int(value) if column in _INT_COLUMNS and value.is_integer() else value


def _maybe_number(text: str) -> Any:
    """Extra phrase columns: numbers become numbers, everything else stays text."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            continue
    return text


# ----------------------------------------------------------------------------------------------------------------
# The run directory
# ----------------------------------------------------------------------------------------------------------------


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    """Rows as JSON lines (completions.jsonl, a synthetic-data run's samples.jsonl): text as typed, not escaped."""
    return "".join(json.dumps(row, ensure_ascii=False, allow_nan=True) + "\n" for row in rows)


class RunDir:
    """One run folder. `source` is "live" (runs/, writable) or "cached" (cached_runs/, never written)."""

    def __init__(self, path: str | os.PathLike[str], *, source: str = "live") -> None:
        if source not in ("live", "cached"):
            raise ValueError(f"source must be live or cached, got {source!r}")
        self.path = Path(path)
        self.source = source

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunDir) and (self.path, self.source) == (other.path, other.source)

    def __hash__(self) -> int:
        return hash((self.path, self.source))

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def read_only(self) -> bool:
        return self.source == "cached"

    @property
    def log_path(self) -> Path:
        """Where a background job's stdout and stderr go."""
        return self.path / LOG

    def file(self, name: str) -> Path:
        return self.path / _safe_name(name)

    def exists(self) -> bool:
        return (self.path / STATUS).is_file() or (self.path / CONFIG).is_file()

    # ------------------------------------------------------------------------------------------------ creating

    @classmethod
    def create(
        cls, path: str | os.PathLike[str], config_dict: dict[str, Any], seed: int, *, exist_ok: bool = False
    ) -> RunDir:
        """Make a new run folder holding config.json and a queued status.json.

        An existing empty folder is fine; a non-empty one is refused unless exist_ok (which re-initialises
        config.json and status.json there).
        """
        run = cls(path)
        path = run.path
        if not (exist_ok and path.is_dir()):
            check_new_run_dir(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # the bare errno text named no run: "[Errno 1] Operation not permitted"
            raise RunError(f"cannot make run directory {path}: {e.strerror or e}") from None
        created = now_iso()
        # status.json first: a folder with a status but no config yet is a run being created, whereas a folder
        # with a config but no status would look broken to a concurrent listing.
        atomic_write_json(
            path / STATUS,
            {
                "state": "queued",
                "stage": "queued",
                "progress": 0.0,
                "pid": None,
                "created": created,
                "updated": created,
                "error": None,
            },
        )
        atomic_write_json(
            path / CONFIG,
            {
                "config": config_dict,
                "config_hash": stable_hash(config_dict),
                "seed": seed,
                "versions": collect_versions(),
                "created": created,
            },
        )
        return run

    # ------------------------------------------------------------------------------------------------ status

    def _check_writable(self) -> None:
        if self.read_only:
            raise RunReadOnlyError(f"{self.run_id} is a cached run and is never modified")

    @contextmanager
    def status_lock(self) -> Iterator[None]:
        """Serialises read-modify-write of status.json between processes (job, cancel, reconcile)."""
        self._check_writable()
        fd = os.open(self.path / STATUS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def update_status(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any]:
        """Atomically apply `change(current_status) -> fields to set, or None to leave it`; returns the status.

        The decision and the write happen under one lock, so e.g. reconcile cannot mark a run failed after the
        job has just written done.
        """
        with self.status_lock():
            current = self.status() or {}
            fields = change(dict(current))
            if fields is None:
                return current
            return self._write_status(current, fields)

    def set_status(self, **fields: Any) -> dict[str, Any]:
        """Update status.json with these fields (others kept); returns the new status.

        Moving to "running" stamps "started" (and records this process's pid unless one is given); moving to a
        terminal state stamps "finished"; moving back to queued/running clears "finished" and a stale "error".
        """
        return self.update_status(lambda _current: fields)

    def _write_status(self, current: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        status = dict(current)
        now = now_iso()
        old_state = current.get("state")
        if "state" in fields:
            state = fields["state"]
            if state not in STATES:
                raise ValueError(f"unknown run state {state!r}; expected one of {', '.join(STATES)}")
            if state != old_state:
                if state == "running":
                    status["started"] = now
                    status["pid"] = os.getpid()  # the process declaring "running" is the one running
                if state in TERMINAL:
                    status["finished"] = now
                else:
                    status.pop("finished", None)
                    status["error"] = None
        if "progress" in fields and fields["progress"] is not None:
            progress = float(fields["progress"])
            if math.isnan(progress):
                raise ValueError("progress must be a number in [0, 1], got nan")
            fields = {**fields, "progress": min(1.0, max(0.0, progress))}
            if fields["progress"] != current.get("progress"):
                status["progressed"] = now  # when the bar last moved: the dashboard's estimate starts from it
        status.update(fields)
        if status.get("pid") != current.get("pid") or "pid" in fields:
            # Which process the pid names, for process_alive: its pid alone may later be another's.
            pid = status.get("pid")
            status["pid_started"] = process_start(pid) if pid_alive(pid) else None
        status.setdefault("created", now)
        status["updated"] = now
        atomic_write_json(self.path / STATUS, status)
        return status

    def log_progress(self, stage: str, **fields: Any) -> dict[str, Any]:
        """Append one line to progress.jsonl and move status.json to this stage (and progress, if given); returns
        the line written."""
        self._check_writable()
        entry = {"time": now_iso(), "stage": stage, **fields}
        append_jsonl(self.path / PROGRESS, entry)
        update: dict[str, Any] = {"stage": stage}
        if fields.get("progress") is not None:
            update["progress"] = fields["progress"]
        self.set_status(**update)
        return entry

    # ------------------------------------------------------------------------------------------------ writers

    def write_privacy(self, privacy: dict[str, Any]) -> None:
        self._check_writable()
        atomic_write_json(self.path / PRIVACY, privacy)

    def write_metrics(self, metrics: dict[str, Any]) -> None:
        self._check_writable()
        atomic_write_json(self.path / METRICS, metrics)

    def write_completions(self, rows: list[dict[str, Any]]) -> None:
        self._check_writable()
        atomic_write_text(self.path / COMPLETIONS, jsonl_text(rows))

    def write_phrases(self, rows: list[dict[str, Any]]) -> None:
        """phrases.csv: the standard columns first, then any extra keys in order of first appearance."""
        self._check_writable()
        columns = list(PHRASE_COLUMNS)
        for row in rows:
            columns.extend(k for k in row if k not in columns)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, restval="", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})  # floats: inf -> "inf"
        atomic_write_text(self.path / PHRASES, buf.getvalue())

    def write_test_nll(self, rows: list[tuple[float, int]]) -> None:
        """test_nll.csv: one row per private test sentence, in test-set order (repr keeps every float digit)."""
        self._check_writable()
        lines = ["index,tokens,nll"] + [f"{i},{tokens},{nll!r}" for i, (nll, tokens) in enumerate(rows)]
        atomic_write_text(self.path / TEST_NLL, "\n".join(lines) + "\n")

    def write_text(self, name: str, text: str) -> None:
        """Any extra file (statement.md, a summary, ...), written atomically."""
        self._check_writable()
        atomic_write_text(self.file(name), text)

    # ------------------------------------------------------------------------------------------------ readers

    def _read_dict(self, name: str) -> dict[str, Any] | None:
        path = self.path / name
        value = read_json(path)
        if value is not None and not isinstance(value, dict):
            raise RunFormatError(f"{path} must hold a JSON object, found {type(value).__name__}")
        return value

    def config(self) -> dict[str, Any] | None:
        """config.json: {"config", "config_hash", "seed", "versions", "created"}."""
        return self._read_dict(CONFIG)

    def run_config(self):  # -> core.config.RunConfig | None
        """The stored config as a RunConfig (ConfigError if it no longer matches the dataclasses)."""
        from core.config import RunConfig

        stored = self.config()
        return None if stored is None else RunConfig.from_dict(stored.get("config") or {})

    def status(self) -> dict[str, Any] | None:
        return self._read_dict(STATUS)

    def state(self) -> str | None:
        status = self.status()
        return None if status is None else status.get("state")

    def progress(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path / PROGRESS)

    def privacy(self) -> dict[str, Any] | None:
        return self._read_dict(PRIVACY)

    def metrics(self) -> dict[str, Any] | None:
        return self._read_dict(METRICS)

    def completions(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path / COMPLETIONS)

    def phrases(self) -> list[dict[str, Any]]:
        """phrases.csv rows; occurrences/users/teachers as int, epsilon as float (inf allowed), '' as None."""
        path = self.path / PHRASES
        text = read_text_if_present(path)
        if text is None:
            return []
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            raw_rows = list(reader)
        except csv.Error as e:
            raise RunFormatError(f"invalid CSV in {path}: {e}") from e
        if reader.fieldnames is None:
            return []
        missing = [c for c in ("phrase", "epsilon") if c not in reader.fieldnames]
        if missing:
            raise RunFormatError(f"{path} lacks column(s): {', '.join(missing)}")
        rows = []
        for raw in raw_rows:
            row: dict[str, Any] = {}
            for key, value in raw.items():
                if key is None:  # more cells than header columns
                    raise RunFormatError(f"{path}: a row has more cells than the header")
                value = value or ""
                if key == "phrase":
                    row[key] = value
                elif key in PHRASE_COLUMNS:
                    row[key] = _number(value, path, key)
                else:
                    row[key] = _maybe_number(value) if value != "" else None
            rows.append(row)
        return rows

    def test_nll(self) -> list[tuple[float, int]] | None:
        """test_nll.csv as (summed NLL, predicted tokens) per test sentence; None if the run has none."""
        path = self.path / TEST_NLL
        text = read_text_if_present(path)
        if text is None:
            return None
        rows = []
        for line_no, raw in enumerate(csv.DictReader(io.StringIO(text, newline="")), start=2):
            try:
                if int(raw["index"]) != len(rows):
                    raise ValueError(f"index {raw['index']} out of order")
                rows.append((float(raw["nll"]), int(raw["tokens"])))
            except (KeyError, TypeError, ValueError) as e:
                raise RunFormatError(f"{path} line {line_no}: {e}") from e
        return rows

    def read_text(self, name: str) -> str | None:
        try:
            return self.file(name).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None

    def log_tail(self, n_lines: int = 50, max_bytes: int = 256_000) -> str:
        """The last n lines of log.txt ('' if there is no log); reads at most max_bytes from the end."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - max_bytes))
                data = f.read()
        except FileNotFoundError:
            return ""
        lines = data.decode("utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n_lines:]) if n_lines > 0 else ""

    # ------------------------------------------------------------------------------------------------ checks

    def missing_files(self) -> list[str]:
        return [name for name in REQUIRED_FILES if not (self.path / name).is_file()]

    def damaged_files(self) -> list[str]:
        """The required files missing, then those of config, privacy and metrics that do not read as a non-empty
        JSON object, and progress.jsonl where a line before its last does not parse: a finished run with any is
        failed, in `core runs list` and on the dashboard alike (a done run with a blank method and no metrics joined
        the result tables; one with a garbled progress line read done there, and not finished in `runs show`)."""
        damaged = self.missing_files()
        for name in (CONFIG, PRIVACY, METRICS):
            if name not in damaged:
                try:
                    readable = bool(self._read_dict(name))
                except (RunFormatError, OSError, ValueError):
                    readable = False
                if not readable:
                    damaged.append(name)
        if PROGRESS not in damaged:
            try:
                self.progress()
            except (RunFormatError, OSError):
                damaged.append(PROGRESS)
        return damaged

    def incomplete_reason(self) -> str | None:
        """Why this is not a finished run one can read (None when it is): its state, a missing required file, or
        one that does not parse (phrases.csv too, if present)."""
        try:
            state = self.state()
        except RunFormatError as e:  # status.json itself: no state to name
            return str(e)
        if state is None:
            return f"{STATUS} is missing"  # "state None" named no cause
        try:
            if state != "done":
                return f"state {state}"
            if missing := self.missing_files():
                return f"state done, but {', '.join(missing)} missing"
            self.config(), self.privacy(), self.metrics(), self.progress(), self.phrases()
            if empty := self.damaged_files():  # parsed, but null or {}: nothing to read results from
                return f"state done, but {', '.join(empty)} empty"
            if cut := self.completions_cut_short():
                return f"state done, but {cut}"
        except RunFormatError as e:
            return f"state done, but {e}"
        return None

    def completions_cut_short(self) -> str | None:
        """How completions.jsonl falls short of the count metrics.json records, or None: a file cut short loses
        its last lines without a parse error."""
        expected, completions = (self.metrics() or {}).get("n_completions"), self.completions()
        if isinstance(expected, int) and not isinstance(expected, bool) and len(completions) != expected:
            return f"{COMPLETIONS} holds {len(completions)} of the {expected} completions {METRICS} counts"
        return None

    def is_complete(self) -> bool:
        """State done, every required file present and parseable (phrases.csv too, if present)."""
        return self.incomplete_reason() is None


def plainest_first(run_id: str) -> tuple[int, str]:
    """Sort key among shipped copies of one config (several sweep plans ran it): the shortest id first, the plainest
    name (tiny-seqpate-eps3 before tiny-seqpate-ablationnone and -teachers10), then alphabetical. The pages and
    REPORT.md show that copy."""
    return len(run_id), run_id


def base_models_note(runs: Sequence[tuple[str, str | None]], max_named: int = 12) -> str:
    """For a table of runs given as (name, base weights digest or None): which stand on which base model, where
    they differ or may differ, or "". Runs compare only on one base model; the shipped text runs made before digests
    were recorded (2026-11-25) have none, so beside a recorded digest they may or may not share its base. Past
    max_named, the runs recording none are counted, not named."""
    by_digest: dict[str | None, list[str]] = {}
    for name, digest in runs:
        by_digest.setdefault(digest, []).append(name)
    if len(by_digest) < 2:
        return ""
    groups = [f"{', '.join(names)} on base weights {digest}" for digest, names in by_digest.items() if digest]
    none = by_digest.get(None, [])
    named = ", ".join(none) if len(none) <= max_named else f"the other {len(none)} runs"
    lead = ("These runs stand on different base models" if len(groups) > 1
            else "These runs may stand on different base models (some record their base model's digest, others none)")
    return (lead + ", so compare a run only with those on the same one: " + "; ".join(groups)
            + (f"; {named} recorded none (made before digests were recorded on 2026-11-25, on the base model of that "
               "time for their preset and seed)" if none else "")
            + ".")


__all__ = [
    "CANCEL_MARKER",
    "COMPLETIONS",
    "CONFIG",
    "LOG",
    "METRICS",
    "PHRASES",
    "PHRASE_COLUMNS",
    "PRIVACY",
    "PROGRESS",
    "SHIPPED_SUFFIX",
    "REQUIRED_FILES",
    "STATES",
    "STATUS",
    "TERMINAL",
    "RunDir",
    "RunError",
    "RunExistsError",
    "RunFormatError",
    "RunNotFoundError",
    "RunReadOnlyError",
    "append_jsonl",
    "atomic_write_json",
    "atomic_write_text",
    "base_models_note",
    "collect_versions",
    "is_synth",
    "now_iso",
    "pid_alive",
    "plainest_first",
    "process_alive",
    "process_start",
    "read_json",
    "read_jsonl",
]
