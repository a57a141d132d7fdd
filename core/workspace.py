"""What a method works with and what it returns: the contract between the run pipeline (core.runs.pipeline, which
builds a Workspace and evaluates the MethodResult) and the methods (core.seqpate.run, core.baselines)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from core import train  # train.PULSE_EVERY_S read when used: one setting for every pulse
from core.base import base_key
from core.config import RunConfig
from core.data import PreparedData, split_prefix
from core.models import clone
from core.runs.store import METHOD_END, METHOD_START_CACHED  # the run format's progress-bar layout
from core.tokenizer import encode_sentences


def within(lo: float, hi: float, fraction: float) -> float:
    """A stage's own 0..1 progress placed on [lo, hi] of the run's (clamped, so progress never leaves its share)."""
    return lo + (hi - lo) * min(max(fraction, 0.0), 1.0)


@dataclass
class Workspace:
    """Everything a method may use. `data`'s private_* splits are the only door to private data."""

    cfg: RunConfig
    data: PreparedData
    tokenizer: object
    base_model: object
    base_info: dict
    log: Callable[..., None]
    should_stop: Callable[[], bool] = lambda: False
    progress_span: tuple[float, float] = (METHOD_START_CACHED, METHOD_END)
    device: str = "cpu"  # where the models are (SEQPATE_DEVICE): SeqPATE's teachers train there too

    def encode(self, texts) -> list[list[int]]:
        return encode_sentences(self.tokenizer, texts, self.cfg.data.max_tokens)

    def fresh_base(self):
        """A trainable copy of the public base model (every method starts from the same weights)."""
        return clone(self.base_model)

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id

    @cached_property
    def base_model_key(self) -> str:
        """What names the base model in artefact caches: its config and, once known, its weights' digest (a base
        retrained after its cache was cleared, e.g. with another thread count, must not reuse pseudo data that
        another base generated), and a checkout's tokenizer digest."""
        info = self.base_info or {}
        key = base_key(self.cfg, self.device)  # pseudo data sampled on a GPU is cached apart from the CPU's
        # a checkout's tokenizer too (the tiny base's is saved with, and keyed as, its weights)
        return "-".join([key, *(info[k] for k in ("weights_sha256", "tokenizer_sha256") if info.get(k) is not None)])

    @cached_property
    def pseudo(self) -> list[str]:
        """Pseudo sentences from public train prefixes (Sec. 4.1); public information."""
        from core.seqpate.pseudo import pseudo_sentences

        prefixes = [split_prefix(s.text, self.cfg.data.prefix_words)[0] for s in self.data.public_train]
        self.log("pseudo-data", message=f"completing {len(prefixes)} public prefixes with the base model")
        logged = {"time": time.monotonic()}

        def on_batch(done: int, total: int) -> None:
            """A line where none came for PULSE_EVERY_S (tiny: 34 s without one); a cancel is seen here too."""
            if done < total and time.monotonic() - logged["time"] >= train.PULSE_EVERY_S:
                logged["time"] = time.monotonic()
                self.log("pseudo-data", completed=done, prefixes=total)

        sentences = pseudo_sentences(
            self.base_model, self.tokenizer, prefixes, self.cfg.decode, self.cfg.seed, self.base_model_key,
            on_batch=on_batch,
        )
        self.log("pseudo-data", sentences=len(sentences))  # where they end: the next stage logs its work's end only
        return sentences

    @cached_property
    def pseudo_seqs(self) -> list[list[int]]:
        """The pseudo sentences tokenised (once: SeqPATE distils on their first ones and warms up on them all)."""
        return self.encode(self.pseudo)

    def pseudo_warm_model(self, stage: str = "warm-up", span: tuple[float, float] | None = None):
        """A fresh base model fine-tuned on the pseudo data: the warm-up of SeqPATE's student and of the
        Pub-GPT+pseudo and NoisySGD +pseudo methods, one setting for all (seqpate.warmup_epochs, student_lr).
        Its lines move the bar over `span` (a share of the method's) where given. Public data only: no privacy cost."""
        sp = self.cfg.seqpate
        epochs = sp.warmup_epochs

        def report(done: float, **fields) -> None:
            self.log(stage, **({} if span is None else {"progress": self.method_progress(within(*span, done))}),
                     **fields)

        if epochs:
            self.log(stage, message=f"fine-tuning a fresh base model on {len(self.pseudo_seqs)} pseudo sentences")
        return train.train_lm(
            self.fresh_base(), self.pseudo_seqs, pad_id=self.pad_id, epochs=epochs,
            lr=sp.student_lr, batch_size=sp.batch_size, seed=self.cfg.seed, should_stop=self.should_stop,
            **train.epoch_lines(report, epochs),
        )

    def method_progress(self, fraction: float) -> float:
        return within(*self.progress_span, fraction)


@dataclass
class MethodResult:
    model: object
    privacy: dict  # body of privacy.json: epsilon, delta, accountant, unit, events, ...
    metrics: dict = field(default_factory=dict)  # extra metrics (e.g. queries, timings)
    # applied to every generated completion before scoring (e.g. the blacklist baseline's placeholder)
    postprocess: Callable[[str], str] | None = None


def public_only_privacy(reason: str) -> dict:
    return {
        "epsilon": 0.0,
        "delta": 0.0,
        "accountant": "none (public data only)",
        "unit": "none",
        "events": [],
        "note": reason,
    }
