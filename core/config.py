"""Frozen configuration for every stage of a run, presets, validation and the config hash.

Everything a run does is decided here; the run directory stores `RunConfig.to_dict()` so a run can be
reproduced from its config.json alone.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration the engine refuses; the message is one line meant for the user."""


# Ranges the engine can honour. Above MAX_EPSILON an epsilon promises nothing (e^1000 > 10^434), and calibrating
# DP-SGD for it takes seconds and gigabytes (the PLD grid grows as the noise shrinks: 7 s and 0.5 GB at 1,000,
# 44 s and 2.9 GB at 10,000). Below MIN_DELTA the PLD accountant's tail truncation (about 1e-15) dominates: DP-SGD's
# calibrated noise jumps (multiplier 0.80 at 1e-12, 800 at 1e-15). Below MIN_EPSILON a guarantee says nothing more
# than epsilon 0 with the same delta (e^epsilon - 1 < 1e-6; the calibrated Gaussian noise is within 1.5x of its
# epsilon -> 0 limit), and at a subnormal epsilon (1e-320) autodp's search for the noise never ends.
# Seeds are 32-bit, as numpy's legacy seeding.
MAX_EPSILON = 1000.0
MIN_EPSILON = 1e-6
MIN_DELTA = 1e-12
MAX_SEED = 2**32 - 1


def check_epsilon_range(epsilon: float, name: str = "epsilon") -> None:
    """A positive epsilon from MIN_EPSILON to MAX_EPSILON, or inf (no noise)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or math.isnan(epsilon) or epsilon <= 0:
        raise ConfigError(f"{name} must be a positive number or inf, got {epsilon!r}")
    if epsilon < MIN_EPSILON:
        raise ConfigError(f"{name} must be at least {MIN_EPSILON:g} (a smaller one promises no more than 0), "
                          f"got {epsilon:g}")
    if math.isfinite(epsilon) and epsilon > MAX_EPSILON:
        raise ConfigError(f"{name} must be at most {MAX_EPSILON:g} (or inf for no noise), got {epsilon:g}")


def check_delta_range(delta: float, name: str = "delta") -> None:
    """A delta in [MIN_DELTA, 1)."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta < 1.0):
        raise ConfigError(f"{name} must be in (0, 1), got {delta!r}")
    if delta < MIN_DELTA:
        raise ConfigError(f"{name} must be at least {MIN_DELTA:g} (the accountants' precision), got {delta:g}")


def check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")


MAX_THREADS = 16


def thread_setting() -> int:
    """SEQPATE_THREADS: this process's torch threads, 1 to MAX_THREADS (unset or blank: all cores).

    Not part of a run's config: it changes how fast a run goes, and its numbers through the order of float sums,
    which training amplifies (recorded in metrics as torch_threads; a seed reproduces a run at the same count)."""
    value = os.environ.get("SEQPATE_THREADS", "").strip()
    if not value:
        count = os.cpu_count() or 1
    else:
        try:
            count = int(value)
        except ValueError:
            raise ConfigError(f"SEQPATE_THREADS must be a whole number of torch threads, got {value!r}") from None
    return max(1, min(count, MAX_THREADS))


DEVICES = ("cpu", "cuda")


def device_setting() -> str:
    """SEQPATE_DEVICE: where runs compute, cpu (unset or blank) or cuda (the first GPU).

    Not part of a run's config, like the thread count: it changes how fast a run goes, and its numbers in the last
    bits, which training amplifies (recorded in status and metrics as device). CPU is the default: there a seed
    repeats a run bit for bit on one machine (nearly always: see the README), and the shipped runs were made there."""
    value = os.environ.get("SEQPATE_DEVICE", "").strip().lower() or "cpu"
    if value not in DEVICES:
        raise ConfigError(f"SEQPATE_DEVICE must be cpu or cuda, got {os.environ['SEQPATE_DEVICE']!r}")
    return value


def device_refusal() -> str | None:
    """Why SEQPATE_DEVICE cannot be used on this machine (an unknown value, or cuda where torch sees no GPU), or
    None. torch is imported only when cuda is asked for, so a CPU run's refusals stay quick."""
    try:
        name = device_setting()
    except ConfigError as exc:
        return str(exc)
    if name == "cuda":
        import torch

        if not torch.cuda.is_available():
            return f"SEQPATE_DEVICE=cuda, but torch {torch.__version__} sees no CUDA GPU"
    return None


def check_device() -> None:
    """Refuses what device_refusal names (the command line before anything is written; a job as it starts)."""
    refusal = device_refusal()
    if refusal:
        raise ConfigError(refusal)


def check_device_executor(method: str, executor: str, device: str) -> None:
    """On a GPU SeqPATE's teachers train one after another on it (the local executor): the process pool would put
    a CUDA context, a model and a positions x vocabulary table per worker on the one GPU (gigabytes each at the
    paper's size), and Ray tasks ask for CPUs only, so a cluster's workers may have no GPU."""
    if device == "cuda" and method == "seqpate" and executor != "local":
        raise ConfigError(f"executor {executor} (--executor, config seqpate.executor) with SEQPATE_DEVICE=cuda: on a "
                          "GPU the teachers train one after another (executor local); the process and ray executors "
                          "spread them over CPU cores (run them without SEQPATE_DEVICE)")


# ----------------------------------------------------------------------------------------------------------------
# Stage configs
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataConfig:
    """Corpus, paper-style preparation (App. E) and the user-level public/private split."""

    corpus: str = "chitchat"  # "chitchat" or a path: AirDialog .json, Europarl .txt, or .jsonl/.csv with text[,user_id]
    corpus_format: str = "auto"  # auto | chitchat | airdialog | europarl | table
    min_words: int = 8  # keep sentences with at least this many words
    max_tokens: int = 40  # truncate to this many tokens when tokenising
    prefix_words: int = 4  # the prefix is the first words of a sentence; the rest is the reference
    public_fraction: float = 0.25  # share of sentences given to public (volunteer) users
    # Sizes after the split; None takes everything available on that side.
    private_train: int | None = 2000
    private_valid: int | None = 200
    private_test: int | None = 200
    public_train: int | None = 2000
    public_valid: int | None = 200
    # Seeded canaries (Carlini's secret sharer): insertion counts, e.g. "1,10,100"; one canary per count, each
    # inserted into one private user's train data. Every method on the same data config sees the same secrets.
    canaries: str = ""
    canary_seed: int = 0
    canary_digits: int = 6


@dataclass(frozen=True)
class ModelConfig:
    """The public base model ("Pub-GPT"): a tiny GPT-2 pretrained on public text, or a local checkout."""

    source: str = "tiny"  # "tiny" (train here on public text) or a local directory with a GPT-2 checkout
    vocab_size: int = 8192
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    n_positions: int = 64
    pretrain_epochs: int = 4
    pretrain_lr: float = 2e-3
    batch_size: int = 32


@dataclass(frozen=True)
class DecodeConfig:
    """Sampling settings for completions of test prefixes (identical for every method) and pseudo data."""

    top_k: int = 40
    top_p: float = 1.0
    temperature: float = 0.7
    max_new_tokens: int = 32
    n_completions: int = 200  # test prefixes completed for BLEU and the side-by-side view
    # Pseudo data (Sec. 4.1) is sampled from the base model's own distribution (no top-k, temperature 1): the
    # base model here is trained on the same domain, so truncated sampling would only teach the warm-up to drop
    # the tail of the distribution (measured on tiny, public validation PPL: top-k 50 raised it, pure sampling
    # with one warm-up epoch lowered it, 630 -> 597).
    pseudo_top_k: int = 0
    pseudo_temperature: float = 1.0


@dataclass(frozen=True)
class PrivacyConfig:
    epsilon: float = 3.0  # math.inf allowed: no noise, labelled non-private
    delta: float = 1e-6
    # "sample": one sentence is the unit; "phrase-avg": calibrate so the AVERAGE secret-phrase epsilon hits epsilon
    target: str = "sample"


@dataclass(frozen=True)
class SeqPATEConfig:
    teachers: int = 10
    partition: str = "random"  # random | by-user
    teacher_epochs: int = 2
    teacher_lr: float = 1e-3
    distill_sentences: int = 1000  # pseudo sentences the student distils on (teachers are run once over them)
    filter: str = "top-p:0.95"  # top-p:P | top-k:K  (student's candidate set; public information)
    rank_threshold: int = 5  # efficient KD: query when the pseudo label's rank under the student exceeds this
    query_budget: int = 2000  # Q: sigma is calibrated for this many releases before the first query
    # Per-token KL (summed over C, not divided by |V| as the official code does, whose lambda 20 is ~4e-4 in
    # effect). Chosen on PUBLIC validation perplexity (tiny, epsilon 3, M 10): lambda 0.1 -> 652, 1 -> 606,
    # 20 -> noise-dominated answers wreck the student (test PPL 2349).
    kd_lambda: float = 1.0
    warmup_epochs: int = 1  # pseudo-data warm-up (every +pseudo method uses the same one)
    student_epochs: int = 2
    student_lr: float = 1e-3
    batch_size: int = 32
    ablation: str = "none"  # none | -merge_p | -kl | -pseudo | -effi_kd | -gaussian | -all
    executor: str = "local"  # local | process | ray
    ray_address: str = ""  # executor ray: "" starts a local Ray instance; "auto" or host:port joins a cluster


@dataclass(frozen=True)
class DPSGDConfig:
    epochs: int = 2
    batch_size: int = 32  # expected (Poisson) batch size
    lr: float = 1e-3
    max_grad_norm: float = 1.0
    ghost_batch_size: int = 512  # logical batch of the ghost-clipping baseline
    batching: str = "samples"  # samples (Poisson) | users (App. M)


@dataclass(frozen=True)
class RunConfig:
    method: str = "pub-gpt"
    preset: str = "tiny"
    seed: int = 0
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    seqpate: SeqPATEConfig = field(default_factory=SeqPATEConfig)
    dpsgd: DPSGDConfig = field(default_factory=DPSGDConfig)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self), default=_json_default))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        if not isinstance(d, dict):
            raise ConfigError(f"a run config must be a JSON object, got {type(d).__name__}")
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            value = d[f.name]
            kwargs[f.name] = _build(SECTIONS[f.name], value) if f.name in SECTIONS else value
        cfg = cls(**kwargs)
        try:  # JSON has no integer/float distinction (and may spell inf as a string)
            epsilon = float(cfg.privacy.epsilon)
        except (TypeError, ValueError, OverflowError):
            return cfg  # validate() says what is wrong with it
        return replace(cfg, privacy=replace(cfg.privacy, epsilon=epsilon))


SECTIONS = {"data": DataConfig, "model": ModelConfig, "decode": DecodeConfig, "privacy": PrivacyConfig,
            "seqpate": SeqPATEConfig, "dpsgd": DPSGDConfig}


def field_names(keys) -> str:
    """Keys of a config file for a one-line error: a name that is blank, padded or not printable (a newline) is
    quoted, so the error stays one line and shows what the file holds."""
    return ", ".join(k if isinstance(k, str) and k and k.isprintable() and k == k.strip() else repr(k)
                     for k in sorted(keys, key=str))


def _build(cls, values: dict[str, Any]):
    if not isinstance(values, dict):
        raise ConfigError(f"{cls.__name__} must be a JSON object, got {type(values).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} field(s): {field_names(unknown)}")
    return cls(**values)


def _json_default(obj):
    raise TypeError(f"not JSON serialisable: {obj!r}")


def stable_hash(obj: Any) -> str:
    """Short hash of a JSON-able object; infinities are encoded the way json.dumps writes them."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------------------
# Presets: sizes that decide how long a run takes
# ----------------------------------------------------------------------------------------------------------------

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # seconds: a few thousand private sentences, 2-layer model
    "tiny": {
        "data": dict(private_train=2000, private_valid=200, private_test=200, public_train=2000, public_valid=200),
        "model": dict(pretrain_epochs=4),
        "decode": dict(n_completions=100),
        "seqpate": dict(teachers=10, distill_sentences=400, query_budget=1000, teacher_epochs=2),
    },
    # minutes: the dashboard default
    "quick": {
        "data": dict(private_train=20000, private_valid=1000, private_test=1000, public_train=8000, public_valid=500),
        "model": dict(pretrain_epochs=4),
        # every test prefix: with 300 completions BLEU-4 differences were all within sampling noise
        "decode": dict(n_completions=1000),
        # Student settings chosen on PUBLIC validation perplexity at epsilon 3 (cached_runs/NOTES.md): at M = 100
        # the noise (std 49 for Q = 500) drowns the teachers' summed probability of any candidate, at M = 1,000 an
        # answer's top candidate stands out for a few thousand answers; top-k 10, lambda 5 and lr 1e-4 (also the
        # lr of the shared pseudo-data warm-up, which at 1e-3 hurt on this in-domain base model). The budget
        # (Q = 2,000) is spent within the 300 distillation sentences (~3,100 hard positions), so the teachers run
        # over those 5,100 positions only: teacher sum 170 MB, and no answer the student asks for is missing.
        "seqpate": dict(teachers=1000, distill_sentences=300, query_budget=2000, teacher_epochs=3, filter="top-k:10",
                        kd_lambda=5.0, student_lr=1e-4),
    },
    # the whole corpus
    "paper": {
        "data": dict(private_train=None, private_valid=2000, private_test=5000, public_train=None, public_valid=2000),
        "model": dict(pretrain_epochs=4, n_layer=4, n_embd=256),
        "decode": dict(n_completions=1000),
        "seqpate": dict(teachers=2000, distill_sentences=8000, query_budget=40000, teacher_epochs=3),
    },
}

METHODS = (
    "pub-gpt",
    "pri-gpt",
    "pub-gpt+pseudo",
    "seqpate",
    "noisysgd",
    "noisysgd+pseudo",
    "noisysgd-gc+pseudo",
    "pri-gpt-blacklist",
    "adp",
)
# Methods whose privacy is fixed by the data they read, not by a noise setting: they take no epsilon or delta.
PUBLIC_ONLY_METHODS = ("pub-gpt", "pub-gpt+pseudo")  # no private data: epsilon 0 (the paper's footnote 8)
UNPROTECTED_METHODS = ("pri-gpt", "pri-gpt-blacklist")  # private data without noise: epsilon infinity


def fixed_epsilon(method: str | None) -> float | None:
    """A method's epsilon when no setting changes it (0 public only, inf unprotected), else None."""
    if method in PUBLIC_ONLY_METHODS:
        return 0.0
    if method in UNPROTECTED_METHODS:
        return math.inf
    return None


HEURISTIC_REASONS = {
    "adp": "ADP chooses each step's noise level from the private sentences' perplexity, a dependence no accountant "
           "covers; epsilon is accounted at the smallest noise the run used",
    "phrase-avg": "the noise level was calibrated from private counts (how many teachers or sentences hold each "
                  "name phrase) so that the AVERAGE phrase epsilon hits the target, and then released",
}


def heuristic_reason(method: str | None, target: str | None, target_epsilon: float | None) -> str | None:
    """Why a run's accounted epsilon is a heuristic rather than a DP guarantee (its noise level was chosen from the
    private data), or None. The one place that decides it: statement.md, privacy.json's "heuristic" and the
    dashboard all ask here (in core.config, so the dashboard need not import the privacy analysis). At epsilon 0 or
    infinity no noise is chosen: such a run is public-only or not private, not a heuristic."""
    if target_epsilon is None or not 0 < target_epsilon < math.inf:
        return None
    if method == "adp":
        return HEURISTIC_REASONS["adp"]
    if target == "phrase-avg":
        return HEURISTIC_REASONS["phrase-avg"]
    return None


def dpsgd_batch_size(cfg: RunConfig) -> int:
    """The expected batch a DP-SGD method samples: NoisySGD-GC+pseudo's large ghost-clipping batch, else
    dpsgd.batch_size. The runs and the Launch page's noise preview both read it here."""
    return cfg.dpsgd.ghost_batch_size if cfg.method == "noisysgd-gc+pseudo" else cfg.dpsgd.batch_size


# Until 2026-11-27 these methods' private training drew its Poisson batches and noise from torch's generator
# re-seeded with the run's seed, as other parts of the run had (core.privacy.streams gives each its own stream now)
GLOBAL_STREAM_METHODS = ("noisysgd", "noisysgd+pseudo", "noisysgd-gc+pseudo", "adp")


def shared_noise_streams(method: str, privacy: dict[str, Any], seed: int, teachers: int = 0) -> bool:
    """A private run made before its noise had a stream of its own (privacy.json without `random_streams`) whose
    noise or sampling replayed numbers drawn elsewhere in the run: DP-SGD's, ADP's and a synthetic-data run's
    (torch's re-seeded generator), and SeqPATE's at seed 0 with more than 7 teachers (its noise stream, seed + 7,
    was teacher 7's batch order). Its epsilon is a measurement at its noise level, not a proven bound; its
    statement says what it shared (core.analysis.statement.shared_stream_lines)."""
    eps = privacy.get("epsilon")
    if "random_streams" in privacy or not (isinstance(eps, (int, float)) and 0 < eps < math.inf):
        return False
    if method == "seqpate":
        return seed == 0 and teachers > 7
    return method in GLOBAL_STREAM_METHODS or method.startswith("synth")


# Methods that fine-tune on pseudo data first: they read the pseudo-data sampling and the shared warm-up settings.
PSEUDO_METHODS = ("pub-gpt+pseudo", "seqpate", "noisysgd+pseudo", "noisysgd-gc+pseudo")
PSEUDO_FIELDS = {"decode": ("pseudo_top_k", "pseudo_temperature"),
                 "seqpate": ("warmup_epochs", "student_lr", "batch_size")}
# The non-private fine-tuning of Pri-GPT (and the blacklist baseline) borrows DP-SGD's schedule, not its noise.
PLAIN_FINETUNE_FIELDS = ("epochs", "lr", "batch_size")
EXECUTION_FIELDS = ("executor", "ray_address")


_FLOAT_FIELDS = {name: {f.name for f in fields(cls) if "float" in str(typing.get_type_hints(cls)[f.name])}
                 for name, cls in SECTIONS.items()}


# The fields of a synthetic-data run's core config ("base") that it never reads: only the public base model is
# built from it (core.base.load_or_train_base: data, model and seed; core.synth samples with its own settings)
SYNTH_BASE_UNREAD = ("method", "decode", "privacy", "seqpate", "dpsgd")


def effective_config(config: dict[str, Any]) -> dict[str, Any]:
    """A run config (RunConfig.to_dict()) without the fields its method never reads, e.g. a Pub-GPT run's
    SeqPATE section or a Pri-GPT run's epsilon. Two runs that differ only in such fields are the same run (one
    launched before a default it never reads changed, say): they are copies, not two settings or two seeds.

    When in doubt a field counts as read: a wrongly kept field shows a setting apart, a wrongly dropped one would
    merge two different runs. A synthetic-data run keeps its settings but for its base config's SYNTH_BASE_UNREAD
    (its public base model reads the data, model and seed); a config of another shape is returned unchanged."""
    method = config.get("method")
    if str(method).startswith("synth-") and isinstance(config.get("base"), dict):
        # a synthetic-data run's report listed base.privacy.epsilon 3 beside its own ε, inf in an ε = ∞ run
        base = {k: v for k, v in config["base"].items() if k not in SYNTH_BASE_UNREAD}
        if isinstance(base.get("model"), dict) and base["model"].get("source", "tiny") != "tiny":
            base["model"] = {"source": base["model"]["source"]}  # a checkout's run reads none of the tiny model's
        return {**config, "base": base}
    if method not in METHODS:
        return config
    kept = {key: value for key, value in config.items() if not isinstance(value, dict)}
    for section in SECTIONS:
        values = config.get(section)
        if not isinstance(values, dict):
            continue
        if section == "privacy" and fixed_epsilon(method) is not None:
            continue
        if section == "decode" and method not in PSEUDO_METHODS:
            values = {k: v for k, v in values.items() if k not in PSEUDO_FIELDS["decode"]}
        if section == "seqpate":
            # how teachers are executed, not what they compute (the executors give bitwise-identical results on
            # the CPU; on a GPU the local one alone, and its atomic adds make two runs differ in the last bits)
            values = {k: v for k, v in values.items() if k not in EXECUTION_FIELDS}
            if method != "seqpate":
                if method not in PSEUDO_METHODS:
                    continue
                values = {k: v for k, v in values.items() if k in PSEUDO_FIELDS["seqpate"]}
        if section == "dpsgd":
            if method in PUBLIC_ONLY_METHODS or method == "seqpate":
                continue
            if method in UNPROTECTED_METHODS:
                values = {k: v for k, v in values.items() if k in PLAIN_FINETUNE_FIELDS}
            else:  # a DP-SGD method samples one of the two batch sizes (dpsgd_batch_size)
                unread = "batch_size" if method == "noisysgd-gc+pseudo" else "ghost_batch_size"
                values = {k: v for k, v in values.items() if k != unread}
            if method == "adp":  # ADP samples its batches (its Algorithm 1) whatever batching says
                values = {k: v for k, v in values.items() if k != "batching"}
        if section == "model" and values.get("source", "tiny") != "tiny":
            # a GPT-2 checkout brings its own architecture, tokenizer and training: the tiny model's are not read
            values = {"source": values["source"]}
        # JSON keeps 5 and 5.0 apart; a float field means the same either way
        kept[section] = {k: float(v) if k in _FLOAT_FIELDS.get(section, ()) and type(v) is int else v
                         for k, v in values.items()}
    return kept


def effective_hash(config: dict[str, Any]) -> str:
    """stable_hash of effective_config: equal for runs that differ only in fields their method never reads."""
    return stable_hash(effective_config(config))


def flatten_config(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as "section.field" -> value."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(flatten_config(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: obj}


@functools.cache
def _default_fields(preset: str, method: str) -> dict[str, Any]:
    """The flattened effective config of a method at a preset's defaults (built once per pair: ~1 ms)."""
    return flatten_config(effective_config(preset_config(preset, method=method).to_dict()))


# Canaries only touch the private train data: not the public base model (core.base.base_key) nor the test sentences
# (core.runs.compare), which runs with and without them share.
PRIVATE_ONLY_DATA_FIELDS = ("canaries", "canary_seed", "canary_digits")

# The settings the paper's tables vary (Tables 2-4, 6, App. H): the pages' experiment variants are named by them,
# and core.runs.report places a run in its tables by them (a run varying anything else has no place there)
VARIANT_FIELDS = ("seqpate.teachers", "seqpate.filter", "seqpate.partition", "seqpate.ablation", "privacy.target",
                  "data.canaries", "dpsgd.batching")

# a run's axis (ε) or not settings at all: never a variation of the preset's defaults
NOT_VARIATIONS = ("method", "preset", "seed", "privacy.epsilon")


def varied_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a run's method reads whose value differs from its preset's default ("section.field" -> value,
    in the defaults' order); {} at the defaults, and for a config of another shape (a synthetic-data run). A field
    an older config lacks counts as the default."""
    preset, method = config.get("preset"), config.get("method")
    if not isinstance(preset, str) or preset not in PRESETS or method not in METHODS:
        return {}
    defaults = _default_fields(preset, method)
    ours = flatten_config(effective_config(config))
    return {key: ours[key] for key, value in defaults.items()
            if key not in NOT_VARIATIONS and ours.get(key, value) != value}


# SeqPATE's Table 3 ablations: which of the paper's strategies each one turns off (core.seqpate.run reads them).
ABLATION_SWITCHES: dict[str, dict[str, Any]] = {
    "none": {},
    "-merge_p": {"use_votes": True},
    "-kl": {"teacher_loss": "ce"},
    "-pseudo": {"pseudo_loss": False},
    "-effi_kd": {"efficient_kd": False},
    "-gaussian": {"noise": "laplace"},
    "-all": {"use_votes": True, "teacher_loss": "ce", "pseudo_loss": False, "efficient_kd": False, "noise": "laplace"},
}
ABLATIONS = tuple(ABLATION_SWITCHES)
# those releasing Laplace noise (L1 sensitivity 2) instead of Gaussian
LAPLACE_ABLATIONS = tuple(a for a, switches in ABLATION_SWITCHES.items() if switches.get("noise") == "laplace")
# the student's loss on an answered position, as metrics.json records it ("teacher_loss")
TEACHER_LOSSES = {"kl": "KL to the noisy answer over the candidate set",
                  "ce": "cross-entropy over the vocabulary on the noisy answer's top candidate"}


OLD_TEACHER_LOSS = "made before 2026-11-27"
OLD_TEACHER_LOSS_NOTE = (f"Rows {OLD_TEACHER_LOSS} took the -KL cross-entropy over the candidate set; runs made since "
                         "take it over the vocabulary, as PATE trains its student (cached_runs/NOTES.md measures both).")


# Table 4's top-k 1 under the KL loss: the paper renormalises the student's distribution over the candidates (Sec.
# 4.3), and over one candidate both distributions are 1 there, so the KL is 0 whatever the answer says
ONE_CANDIDATE_NOTE = ("top-k:1: with one candidate the KL to the teachers' answer is 0 (the student's distribution is "
                      "renormalised over the candidates, as the paper's Sec. 4.3 writes), so its answers spend the "
                      "query budget and teach the student nothing: its row is the distillation stage with the "
                      "pseudo-label loss alone.")


def ablation_label(ablation: str, metrics: dict[str, Any]) -> str:
    """An ablation's name in result tables. A finished run that records no teacher_loss predates 2026-11-27,
    when the -KL cross-entropy (in -kl and -all) was taken over the candidate set instead of the vocabulary;
    tables showing such a label add OLD_TEACHER_LOSS_NOTE."""
    uses_ce = ABLATION_SWITCHES.get(ablation, {}).get("teacher_loss") == "ce"
    if uses_ce and metrics.get("ppl") is not None and "teacher_loss" not in metrics:
        return f"{ablation} ({OLD_TEACHER_LOSS})"
    return ablation


def preset_value(preset: str, section: str, name: str) -> Any:
    """A field of a preset (falling back to the dataclass default), e.g. quick's SeqPATE filter."""
    value = PRESETS.get(preset, {}).get(section, {}).get(name)
    if value is not None:
        return value
    return getattr(getattr(RunConfig(), section), name)


def preset_config(preset: str = "tiny", **overrides: Any) -> RunConfig:
    """RunConfig for a preset; overrides are `section__field=value` or top-level `method=...`.

    None is a value like any other (a size of None takes everything): a config file's null must survive, so callers
    leave out what they do not override rather than passing None.
    """
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    sections: dict[str, dict[str, Any]] = {k: dict(v) for k, v in PRESETS[preset].items()}
    top: dict[str, Any] = {"preset": preset}
    for key, value in overrides.items():
        if "__" in key:
            section, name = key.split("__", 1)
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    base = RunConfig()
    section_names = {f.name for f in fields(RunConfig) if dataclasses.is_dataclass(getattr(base, f.name))}
    for key in top:
        if key in section_names:
            raise ConfigError(f"config section {key} must be a JSON object, got {top[key]!r}")
        if key not in {f.name for f in fields(RunConfig)}:
            raise ConfigError(f"unknown config field {key!r}")
    for key in sections:
        if key not in section_names:
            raise ConfigError(f"unknown config section {key!r}")
    built = {name: _build(type(getattr(base, name)), {**dataclasses.asdict(getattr(base, name)), **vals})
             for name, vals in sections.items()}
    return validate(replace(base, **top, **built))


# ----------------------------------------------------------------------------------------------------------------
# Validation: one clear line per problem
# ----------------------------------------------------------------------------------------------------------------


def absolute_path(value: Any, builtin: str) -> Any:
    """A corpus or model path as an absolute path, so that the run's config.json names the same file from any
    directory (`core audit` and `run --config` of a run made with `--corpus ../data.csv` read another file, or
    none, elsewhere). The built-in name and a path that does not exist (refused later, as typed) stay as they are."""
    if not isinstance(value, str) or value == builtin or not Path(value).expanduser().exists():
        return value
    # joined, not normalised: "link/../data.csv" through a symlink is not "data.csv" (os.path.abspath would say so)
    return str(Path.cwd() / Path(value).expanduser())


def parse_number(text: Any, name: str, allow_inf: bool = True) -> float:
    """A user-typed number ('3', '1e-6', and 'inf' where allowed, e.g. an epsilon but not a delta), for the CLI and
    the dashboard alike; ConfigError (one line) otherwise."""
    wanted = "a number (or inf)" if allow_inf else "a number"
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        try:
            value = float(str(text).strip())
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be {wanted}, got {text!r}") from None
    if math.isnan(value):
        raise ConfigError(f"{name} must be {wanted}, got {text!r}")
    if math.isinf(value) and not allow_inf:
        raise ConfigError(f"{name} must be a finite number, got {text!r}")
    if math.isinf(value) and not isinstance(text, (int, float)) and "inf" not in str(text).lower():
        # float('1e400') is inf: a huge number typed is not a request for no noise
        raise ConfigError(f"{name} {str(text).strip()[:40]!r} is too large for a number; write inf for no noise")
    return value


def parse_filter(spec: str) -> tuple[str, float]:
    """'top-p:0.95' -> ('top-p', 0.95); 'top-k:50' -> ('top-k', 50)."""
    kind, _, value = spec.partition(":")
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"candidate filter {spec!r} must look like top-p:0.95 or top-k:50") from None
    if not math.isfinite(number):  # top-k:inf was an OverflowError
        raise ConfigError(f"candidate filter {spec!r} needs a finite number, like top-p:0.95 or top-k:50")
    if kind == "top-p":
        if not (0.0 < number <= 1.0):
            raise ConfigError(f"top-p must be in (0, 1], got {value}")
        return kind, number
    if kind == "top-k":
        if number < 1 or number != int(number):
            raise ConfigError(f"top-k must be a positive integer, got {value}")
        return kind, int(number)
    raise ConfigError(f"candidate filter {spec!r} must start with top-p: or top-k:")


def canonical_filter(spec: str) -> str:
    """The filter as the engine writes it ('top-p: 0.9' -> 'top-p:0.9'), so one setting has one spelling."""
    kind, value = parse_filter(spec)
    return f"{kind}:{value!r}" if kind == "top-p" else f"{kind}:{value}"


def _has_type(value: Any, kind: Any) -> bool:
    if kind is type(None):
        return value is None
    if isinstance(value, bool):  # bool is an int to Python, never a count or a rate here
        return kind is bool
    if kind is float:
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def check_types(obj: Any, where: str = "") -> None:
    """A config.json may carry any JSON type: refuse a wrong one with one line, not a TypeError in a stage."""
    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        value, kind = getattr(obj, f.name), hints[f.name]
        if dataclasses.is_dataclass(kind):
            if not isinstance(value, kind):
                raise ConfigError(f"{where}{f.name} must be a section of settings (a JSON object), got {value!r}")
            check_types(value, f"{f.name}.")
            continue
        allowed = typing.get_args(kind) or (kind,)
        if not any(_has_type(value, k) for k in allowed):
            names = " or ".join("null" if k is type(None) else "a number" if k is float else k.__name__
                                for k in allowed)
            raise ConfigError(f"{where}{f.name} must be {names}, got {value!r}")


def check_private_size(cfg: RunConfig, n_private_train: int) -> None:
    """Checks that need the number n of private training sentences (from the preset, or after loading data)."""
    n = n_private_train
    if n < 1:
        raise ConfigError("no private training sentences")
    # delta is an additive slack on every probability bound; at delta >= 1/n a mechanism may publish one whole
    # sentence outright.
    if cfg.privacy.delta >= 1.0 / n:
        raise ConfigError(f"delta must be below 1/n = {1.0 / n:.3g} (n = {n} private training sentences), "
                          f"got {cfg.privacy.delta}")
    if cfg.method == "seqpate" and cfg.seqpate.teachers > n:
        raise ConfigError(f"{cfg.seqpate.teachers} teachers but only {n} private training sentences")


# A checkout's weights as from_pretrained looks for them, in its order of preference: (one file, a sharded
# checkpoint's index), safetensors before pickles
MODEL_WEIGHT_FILES = (("model.safetensors", "model.safetensors.index.json"),
                      ("pytorch_model.bin", "pytorch_model.bin.index.json"))


def _check_model_dir(source: str, max_tokens: int) -> None:
    try:
        model_config = json.loads((Path(source) / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        model_config = None
    if not isinstance(model_config, dict) or "model_type" not in model_config:
        raise ConfigError(f"model path is not a model directory (no readable config.json with model_type): "
                          f"{source}")
    if model_config["model_type"] != "gpt2":  # the engine builds GPT2LMHeadModel (ghost clipping, PPLM's cache)
        raise ConfigError(f"model {source} is a {model_config['model_type']!r} model; a GPT-2 checkout is needed")
    folder = Path(source)
    if not any((folder / name).is_file() for pair in MODEL_WEIGHT_FILES for name in pair):
        raise ConfigError(f"model {source} holds no weights ({' or '.join(single for single, _ in MODEL_WEIGHT_FILES)})")
    # without these transformers builds an empty tokenizer and the run completes every prefix with nothing
    if not ((folder / "tokenizer.json").is_file() or all((folder / n).is_file() for n in ("vocab.json", "merges.txt"))):
        raise ConfigError(f"model {source} holds no tokenizer (tokenizer.json, or vocab.json and merges.txt)")
    _check_model_files(folder, max_tokens)


def _check_model_files(folder: Path, max_tokens: int) -> None:
    """What loading the checkout would refuse after the run folder is made, or fail on in the middle of a run,
    checked now: its config fields (transformers' GPT2Config), positions for a training sentence, a tokenizer with
    the begin/end token every sentence is wrapped in and no ids past the model's vocabulary, and a safetensors
    file's header against its size (a file cut short)."""
    from transformers import GPT2Config

    from core.tokenizer import ModelLoadError, load_tokenizer

    try:
        model_config = GPT2Config.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # transformers' validation errors span lines: "field 'n_embd':\n TypeError: ..."
        raise ConfigError(f"model {folder}: config.json: {' '.join(str(exc).split())}") from None
    # checked up front: each of these would fail at evaluation, after training (an IndexError or a TypeError)
    if model_config.n_positions < max_tokens:
        raise ConfigError(f"model {folder} has {model_config.n_positions} positions, fewer than data.max_tokens "
                          f"({max_tokens}) a training sentence may take; set data.max_tokens to at most "
                          f"{model_config.n_positions}")
    try:
        tokenizer = load_tokenizer(folder)
    except ModelLoadError as exc:
        raise ConfigError(str(exc)) from None
    if tokenizer.bos_token_id is None or tokenizer.eos_token_id is None:
        raise ConfigError(f"model {folder}: its tokenizer has no bos or eos token (each sentence is wrapped in them; "
                          "GPT-2's is <|endoftext|>: set bos_token and eos_token in tokenizer_config.json)")
    if len(tokenizer) > model_config.vocab_size:
        raise ConfigError(f"model {folder}: its tokenizer has {len(tokenizer):,} tokens, more than the model's "
                          f"vocab_size ({model_config.vocab_size:,}): not the tokenizer it was trained with")
    weights = folder / "model.safetensors"
    if weights.is_file():
        from safetensors import safe_open

        try:
            with safe_open(str(weights), "np"):
                pass
        except Exception as exc:
            raise ConfigError(f"model {folder}: model.safetensors: {' '.join(str(exc).split())}") from None


# what Ray's init takes as an address: "auto", "local", a cluster's host:port, or a client's scheme://... (ray://
# host:10001, or a provider's, whose form is its own)
RAY_ADDRESS = re.compile(r"(?P<host>[^\s:/?]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})")
RAY_CLIENT_ADDRESS = re.compile(r"\w+://\S+")


def check_ray_address(address: str) -> None:
    """Refused before any work: Ray itself said "Invalid address format" once the pseudo data was made, and the run
    failed at its teacher phase."""
    match = RAY_ADDRESS.fullmatch(address)
    if (address not in ("", "auto", "local") and not RAY_CLIENT_ADDRESS.fullmatch(address)
            and not (match and 1 <= int(match["port"]) <= 65535)):
        raise ConfigError(f"ray address must be auto, local, host:port or scheme://... (e.g. 10.0.0.5:6379, or "
                          f"ray://host:10001), got {address!r}")


def validate(cfg: RunConfig) -> RunConfig:
    p = cfg.privacy
    eps = p.epsilon
    check_epsilon_range(eps)
    check_types(cfg)
    check_delta_range(p.delta)
    check_seed(cfg.seed)
    if p.target not in ("sample", "phrase-avg"):
        raise ConfigError(f"privacy target must be sample or phrase-avg, got {p.target!r}")
    if cfg.method not in METHODS:
        raise ConfigError(f"unknown method {cfg.method!r}; choose one of {', '.join(METHODS)}")
    s = cfg.seqpate
    if s.teachers < 1:
        raise ConfigError(f"teachers must be at least 1, got {s.teachers}")
    if s.partition not in ("random", "by-user"):
        raise ConfigError(f"partition must be random or by-user, got {s.partition!r}")
    if s.ablation not in ABLATIONS:
        raise ConfigError(f"unknown ablation {s.ablation!r}; choose one of {', '.join(ABLATIONS)}")
    if p.target == "phrase-avg" and cfg.method == "seqpate" and s.ablation in LAPLACE_ABLATIONS and math.isfinite(eps):
        # the average-phrase calibration is for Gaussian releases; the run would silently calibrate per sentence
        raise ConfigError(f"privacy target phrase-avg calibrates Gaussian noise, but ablation {s.ablation} releases "
                          "Laplace noise; use --privacy-target sample")
    if p.target == "phrase-avg" and cfg.method == "adp" and math.isfinite(eps):
        # ADP calibrates per sentence: its statement would claim an average phrase epsilon it never aimed at
        raise ConfigError("privacy target phrase-avg is for seqpate and the noisysgd methods; adp calibrates "
                          "per sentence: use --privacy-target sample")
    if s.query_budget < 1:
        raise ConfigError(f"query budget must be at least 1, got {s.query_budget}")
    if s.executor not in ("local", "process", "ray"):
        raise ConfigError(f"executor must be local, process or ray, got {s.executor!r}")
    check_ray_address(s.ray_address)
    parse_filter(s.filter)
    d = cfg.data
    if d.prefix_words < 1:  # -3 made every prefix "all but the last 3 words"
        raise ConfigError(f"data.prefix_words must be at least 1, got {d.prefix_words}")
    if d.min_words < d.prefix_words + 1:
        raise ConfigError("min_words must exceed prefix_words so every sentence has a continuation")
    if not (0.0 < d.public_fraction < 1.0):
        raise ConfigError(f"public_fraction must be in (0, 1), got {d.public_fraction}")
    for name in ("private_train", "private_valid", "private_test", "public_train", "public_valid"):
        size = getattr(d, name)
        if size is not None and size < 0:
            raise ConfigError(f"{name} must not be negative (null takes all), got {size}")
    if d.private_train is not None:  # else the pipeline checks once the data is loaded
        check_private_size(cfg, d.private_train)
    dc = cfg.decode
    if dc.top_k < 1:
        raise ConfigError(f"decode top-k must be a positive integer, got {dc.top_k}")
    if dc.pseudo_top_k < 0:
        raise ConfigError(f"pseudo-data top-k must be 0 (no truncation) or positive, got {dc.pseudo_top_k}")
    if not (0.0 < dc.top_p <= 1.0):
        raise ConfigError(f"decode top-p must be in (0, 1], got {dc.top_p}")
    for name in ("temperature", "pseudo_temperature"):
        if not getattr(dc, name) > 0:
            raise ConfigError(f"decode.{name} must be positive, got {getattr(dc, name)}")
    if cfg.model.source != "tiny":
        _check_model_dir(cfg.model.source, d.max_tokens)
    from core.data.secrets import parse_canary_counts  # lazy: core.data imports this module

    try:
        parse_canary_counts(d.canaries)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if not 1 <= d.canary_digits <= 12:
        raise ConfigError(f"canary digits must be in 1..12, got {d.canary_digits}")
    if cfg.dpsgd.batching not in ("samples", "users"):
        raise ConfigError(f"batching must be samples or users, got {cfg.dpsgd.batching!r}")
    _check_sizes(cfg)
    return cfg


# Counts and rates that must be positive (or at least 0) for a stage to run at all: each of these used to pass
# validation and fail the run at its stage (dpsgd.epochs 0 at noisysgd, batch_size 0 dividing by zero,
# n_completions 0 at evaluate) or, worse, finish having done nothing (Pri-GPT at 0 epochs, clipping norm 0).
_AT_LEAST_ONE = {
    "model": ("vocab_size", "n_layer", "n_embd", "n_head", "n_positions", "pretrain_epochs", "batch_size"),
    "decode": ("max_new_tokens", "n_completions"),
    "seqpate": ("teacher_epochs", "distill_sentences", "student_epochs", "batch_size"),
    "dpsgd": ("epochs", "batch_size", "ghost_batch_size"),
}
_AT_LEAST_ZERO = {"seqpate": ("warmup_epochs", "rank_threshold", "kd_lambda")}
_ABOVE_ZERO = {"model": ("pretrain_lr",), "seqpate": ("teacher_lr", "student_lr"), "dpsgd": ("lr", "max_grad_norm")}


def _check_sizes(cfg: RunConfig) -> None:
    for bounds, low, strict in ((_AT_LEAST_ONE, 1, False), (_AT_LEAST_ZERO, 0, False), (_ABOVE_ZERO, 0, True)):
        for section, names in bounds.items():
            for name in names:
                value = getattr(getattr(cfg, section), name)
                if not math.isfinite(value) or value < low or (strict and value <= low):
                    bound = f"above {low}" if strict else f"at least {low}"
                    raise ConfigError(f"{section}.{name} must be {bound}, got {value!r}")
    m, d = cfg.model, cfg.data
    if m.n_embd % m.n_head:
        raise ConfigError(f"model.n_embd ({m.n_embd}) must be a multiple of model.n_head ({m.n_head})")
    if d.max_tokens < 8 or d.max_tokens <= d.prefix_words:
        raise ConfigError(f"data.max_tokens must be at least 8 and above prefix_words ({d.prefix_words}), "
                          f"got {d.max_tokens}")
    if m.source == "tiny" and m.n_positions < d.max_tokens:
        raise ConfigError(f"model.n_positions ({m.n_positions}) must hold a training sentence: at least "
                          f"data.max_tokens ({d.max_tokens})")
