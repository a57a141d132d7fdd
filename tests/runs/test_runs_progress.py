"""A run's progress lines: progress.jsonl for the dashboard, a readable copy on stderr for a terminal or log.txt."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

import core.train
from core.config import RunConfig
from core.runs import RunDir, pipeline
from core.runs.pipeline import Cancelled, progress_line, progress_logger
from core.workspace import Workspace, within


@pytest.fixture
def clock_zone(monkeypatch: pytest.MonkeyPatch):
    """Set the local time zone (a POSIX TZ string: no tz database needed) for the progress lines' clock."""

    def set_zone(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_a_stage_share_maps_its_own_progress_into_the_runs_and_never_outside_it() -> None:
    """DP-SGD's stages nest shares (progress_share) inside the method's; a stage's 0..1 lands on its share, clamped."""
    from types import SimpleNamespace

    from core.baselines.dpsgd import progress_share

    assert [within(0.2, 0.9, f) for f in (-1.0, 0.0, 0.5, 1.0, 3.0)] == pytest.approx([0.2, 0.2, 0.55, 0.9, 0.9])
    ws = SimpleNamespace(progress_span=(0.2, 0.9))
    with progress_share(ws, 0.5, 1.0):  # the second half of the method's share: 0.55 to 0.9
        assert ws.progress_span == pytest.approx((0.55, 0.9))
        with progress_share(ws, 0.0, 0.5):
            assert within(*ws.progress_span, 1.0) == pytest.approx(0.725)
        assert ws.progress_span == pytest.approx((0.55, 0.9))
    assert ws.progress_span == (0.2, 0.9)


def test_progress_line_reads_as_a_sentence_of_fields(clock_zone) -> None:
    clock_zone("UTC0")
    entry = {"time": "2026-11-25T21:29:02.123+00:00", "stage": "calibrate", "progress": 0.148, "noise": "gaussian",
             "noise_scale": 69.04358, "query_budget": 1000, "teachers_per_user": {"1": 122}, "message": "sigma set"}
    assert progress_line(entry) == "[21:29:02]  calibrate  15%  noise=gaussian  noise_scale=69.04  query_budget=1000  " \
                                   "sigma set"
    assert progress_line({"time": "2026-11-25T21:30:00+00:00", "stage": "pseudo-data"}) == "[21:30:00]  pseudo-data"
    clock_zone("CET-1")  # a terminal reads its own clock: progress.jsonl stores UTC
    assert progress_line({"time": "2026-11-25T21:30:00+00:00", "stage": "audit"}) == "[22:30:00]  audit"


class BrokenPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_stderr_that_is_gone_stops_the_copies_not_the_run(tmp_path: Path) -> None:
    """`python -m core run ... 2>&1 | head -1` failed the run with BrokenPipeError at its second progress line."""
    run = RunDir.create(tmp_path / "run", RunConfig().to_dict(), 0)
    log = progress_logger(run, should_stop=lambda: False, echo=BrokenPipe())
    for stage in ("data", "base-model", "evaluate"):
        log(stage, 0.5, message="working")
    assert [e["stage"] for e in run.progress()] == ["data", "base-model", "evaluate"]


def test_progress_logger_writes_every_line_and_echoes_stages_epochs_messages_and_a_pulse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunDir.create(tmp_path / "run", RunConfig().to_dict(), 0)
    clock = {"now": 100.0}
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: clock["now"])
    echo = io.StringIO()
    log = progress_logger(run, should_stop=lambda: False, echo=echo)
    log("teachers", 0.2, teacher=1, teachers=500)  # a new stage: echoed
    clock["now"] += 1
    log("teachers", 0.21, teacher=2, teachers=500)  # same stage a second later: file only
    clock["now"] += pipeline.ECHO_EVERY_S
    log("teachers", 0.22, teacher=3, teachers=500)  # ten seconds on: echoed
    clock["now"] += 1
    log("student", 0.8, epoch=1, loss=4.5)  # new stage
    clock["now"] += 1
    log("student", 0.9, epoch=2, loss=4.25)  # an epoch: echoed although a second apart
    clock["now"] += 1
    log("student", message="saving")  # a message: echoed
    # DP-SGD's step lines each name their epoch: only a new epoch is echoed between the pulses (all 63 were)
    for step in (1, 2, 3):
        clock["now"] += 1
        log("dp-train", 0.3 + step / 100, step=step, steps=6, epoch=1)
    clock["now"] += 1
    log("dp-train", 0.34, step=4, steps=6, epoch=2)
    clock["now"] += 1
    log("dp-train", 0.35, step=5, steps=6, epoch=2)
    # a step pulse of an epoch, then that epoch's loss line a second later: the loss is echoed (it was not, once the
    # pulse had named the epoch)
    clock["now"] += 1
    log("warm-up", 0.71, epoch=1, epochs=1, step=3, steps=9)
    clock["now"] += 1
    log("warm-up", 0.72, epoch=1, epochs=1, loss=3.5)
    written = [json.loads(line) for line in (run.path / "progress.jsonl").read_text().splitlines()]
    assert [e.get("teacher") or e.get("epoch") or e.get("message") for e in written][:6] == [1, 2, 3, 1, 2, "saving"]
    assert len(written) == 13
    echoed = echo.getvalue().splitlines()
    assert [line.split("  ", 1)[1] for line in echoed] == [
        "teachers  20%  teacher=1  teachers=500", "teachers  22%  teacher=3  teachers=500",
        "student  80%  epoch=1  loss=4.5", "student  90%  epoch=2  loss=4.25", "student  saving",
        "dp-train  31%  step=1  steps=6  epoch=1", "dp-train  34%  step=4  steps=6  epoch=2",
        "warm-up  71%  epoch=1  epochs=1  step=3  steps=9", "warm-up  72%  epoch=1  epochs=1  loss=3.5"]
    assert run.status()["stage"] == "warm-up" and run.status()["progress"] == 0.72


def test_progress_logger_stops_a_cancelled_run_before_writing(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "run", RunConfig().to_dict(), 0)
    log = progress_logger(run, should_stop=lambda: True, echo=io.StringIO())
    with pytest.raises(Cancelled):
        log("teachers", 0.5)
    assert not (run.path / "progress.jsonl").exists()


def test_the_pseudo_data_log_their_end_as_well_as_their_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only their start was logged, so the training-progress chart gave their minutes to the partition, whose one
    line follows them, and the remaining-time estimate could not tell where they ended."""
    from types import SimpleNamespace

    from core.seqpate import pseudo

    lines: list[tuple[str, dict]] = []
    monkeypatch.setattr(pseudo, "pseudo_sentences", lambda *args, **kw: (lines.append(("computing", {})), ["a b", "c d"])[1])
    ws = SimpleNamespace(cfg=RunConfig(), base_model=None, tokenizer=None, base_model_key="key",
                         data=SimpleNamespace(public_train=[SimpleNamespace(text="one two three four five six")] * 2),
                         log=lambda stage, **fields: lines.append((stage, fields)))
    assert Workspace.pseudo.func(ws) == ["a b", "c d"]
    assert [stage for stage, _ in lines] == ["pseudo-data", "computing", "pseudo-data"]
    assert "message" in lines[0][1] and lines[2][1] == {"sentences": 2}  # a start, then an end line (no message)


@pytest.mark.parametrize("quiet_s, expected", [
    (0.0, [{"completed": 256, "prefixes": 600}, {"completed": 512, "prefixes": 600}]),
    (3600.0, []),
])
def test_pseudo_data_sampling_logs_where_no_line_came_for_a_while(monkeypatch: pytest.MonkeyPatch, quiet_s, expected):
    """Tiny's 34 s of sampling logged nothing between its start and its end: a line per batch once PULSE_EVERY_S has
    passed without one (PULSE_EVERY_S; the last batch's is the end line, which counts the sentences)."""
    from types import SimpleNamespace

    from core.seqpate import pseudo

    def sampling(*args, on_batch, **kw):
        for done in (256, 512, 600):
            on_batch(done, 600)
        return ["a b"] * 600

    monkeypatch.setattr(core.train, "PULSE_EVERY_S", quiet_s)
    monkeypatch.setattr(pseudo, "pseudo_sentences", sampling)
    lines: list[tuple[str, dict]] = []
    ws = SimpleNamespace(cfg=RunConfig(), base_model=None, tokenizer=None, base_model_key="key",
                         data=SimpleNamespace(public_train=[SimpleNamespace(text="one two three four five six")] * 600),
                         log=lambda stage, **fields: lines.append((stage, fields)))
    Workspace.pseudo.func(ws)
    assert all(stage == "pseudo-data" for stage, _ in lines)
    assert [fields for _, fields in lines[1:-1]] == expected and lines[-1][1] == {"sentences": 600}
