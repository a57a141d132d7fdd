"""Fields of run files as the run list, the report and the dashboard read them: a run file may be missing,
half-written or garbled (by a crash, a full disk or a hand edit), so a field of the wrong type counts as absent
instead of failing a page or a table."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from core.runs.store import RunFormatError


def safe_read(read: Callable[[], Any], default: Any = None) -> Any:
    """read(), or default where the file is absent, garbled or holds null."""
    try:
        value = read()
    except (RunFormatError, OSError, ValueError):
        return default
    return default if value is None else value


def as_float(value: Any) -> float | None:
    """A number field of a run file (or numeric text); booleans and other JSON types count as absent."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def as_int(value: Any) -> int | None:
    """A whole-number field of a run file (a seed, a teacher count); anything else counts as absent."""
    number = as_float(value)
    return int(number) if number is not None and math.isfinite(number) and number == int(number) else None


def as_str(value: Any) -> str | None:
    """A text field of a run file; any other JSON type (a garbled file) counts as absent."""
    return value if isinstance(value, str) else None


def parse_time(text: str | None) -> datetime | None:
    """An ISO time of a run file (UTC where it names no zone); None where absent or garbled."""
    if not isinstance(text, str) or not text:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def as_dict(value: Any) -> dict[str, Any]:
    """A section of a run file, or {} when a garbled file holds something else there."""
    return value if isinstance(value, dict) else {}
