"""SynthConfig: every setting of a synthetic-data run (seed 004), its presets and one-line validation."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, fields, replace
from typing import Any

from core.config import ConfigError, check_epsilon_range, check_seed, check_types, field_names

GENERATORS = ("filter", "pplm", "multitask")

# Four chitchat conversation prompts used as topic labels (label word -> prompt). Picked among the 35 prompts for
# being far apart (film, smells, a food fantasy, music) and having enough on-topic utterances from private users.
CHITCHAT_TOPICS: tuple[tuple[str, str], ...] = (
    ("film", "What's the last film that truly made an impression on you?"),
    ("smell", "What's your favorite smell?"),
    ("peanut butter", "What if the world was made of peanut butter?"),
    ("music", "Mozart or Beethoven?"),
)


@dataclass(frozen=True)
class SynthConfig:
    generator: str = "multitask"  # filter | pplm | multitask
    epsilon: float = 3.0  # inf: clipped but no noise, labelled NOT private
    preset: str = "tiny"  # tiny | quick: sizes below, and the core preset whose public base model is used
    seed: int = 0
    corpus: str = "chitchat"  # chitchat, or a .csv/.jsonl file with text,label columns (e.g. SST-2, AG News)
    # Labelled data. Chitchat conversations drift away from their prompt, so only the first `max_turn`
    # utterances of a conversation are labelled by it (those still talk about the prompt).
    max_turn: int = 12
    min_words: int = 6
    per_label: int | None = 200  # every label downsampled to this many examples; None: to the rarest label
    test_fraction: float = 0.2
    max_tokens: int = 40  # "BOS label SEP text EOS" cut to this many tokens
    # SEP: `bos` is the base model's BOS token, after which it learned to start a text (on quick at eps 3 it
    # starts 0.87 of samples with a real word against 0.36-0.45 after a newline; cached_runs/SYNTH_NOTES.md);
    # `newline` is "\n", which the base model never saw (runs written before this setting used it)
    separator: str = "bos"
    # DP-Adam fine-tuning (paper App. A: C 0.1, batch 128, lr 5e-4, 4 epochs; smaller here for CPU)
    epochs: int = 3
    batch_size: int = 32  # expected Poisson batch
    lr: float = 1e-3
    max_grad_norm: float = 0.1
    trainable: str = "blocks"  # blocks: transformer blocks + final norm + heads; all: every weight
    disc_weight: float = 1.0  # multitask: weight of the discriminator loss next to the LM loss
    # multitask: `separate` is the paper's Algorithm 1: the LM and the discriminator gradient each clipped to C,
    # noised and applied by its own Adam step (two releases per batch, so each needs sqrt(2) times the noise at
    # the same epsilon); `joint` clips each example's summed gradient once (one release per batch)
    multitask_clipping: str = "separate"
    prefix_step: int = 2  # discriminator loss at every prefix_step-th text token, linearly weighted
    head_epochs: int = 3  # filter/pplm: DP epochs of the discriminator head on the frozen fine-tuned model
    head_lr: float = 1e-2
    # Generation
    samples_per_label: int | None = None  # None: as many as the train set has per label (paper: same size)
    max_new_tokens: int = 24
    top_p: float = 0.9  # nucleus sampling (paper Sec. 5.1.1)
    temperature: float = 1.0
    gen_batch: int = 64
    filter_threshold: float = 0.5  # filter: keep a sample if p(label | text) > threshold
    filter_rounds: int = 4  # filter: at most this many candidates per kept sample
    pplm_iterations: int = 3  # PPLM (Dathathri et al. 2020): gradient steps on the cached keys/values per token
    pplm_stepsize: float = 0.03  # PPLM's bag-of-words example (run_pplm.py's default 0.02; the others: its own)
    pplm_kl_scale: float = 0.01
    pplm_gm_scale: float = 0.9  # geometric-mean fusion weight of the perturbed distribution
    pplm_gamma: float = 1.5  # gradient normalisation exponent
    # Evaluation
    rf_trees: int = 100
    cv_folds: int = 5
    projection: str = "umap"  # umap (paper Fig. 1) | pca (fast, for tests)

    @property
    def method(self) -> str:
        return f"synth-{self.generator}"

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SynthConfig:
        """The config a run stored (config.json's `synth`); settings it predates take the value it ran with."""
        d = stored_settings(d)
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown SynthConfig field(s): {field_names(unknown)}")
        return validate(cls(**{**d, "epsilon": float(d.get("epsilon", 3.0))}))


def stored_settings(synth: dict[str, Any]) -> dict[str, Any]:
    """A run's stored synth settings, completed with the values it ran with where it predates a setting.

    Before multitask_clipping existed, multitask runs clipped their two gradients jointly (the other generators
    never read it, so today's default describes them). Before separator existed, every run separated label and
    text with a newline.
    """
    if synth.get("generator", SynthConfig.generator) == "multitask":
        synth = {"multitask_clipping": "joint", **synth}
    return {"separator": "newline", **synth}


SYNTH_PRESETS: dict[str, dict[str, Any]] = {
    # about a minute per run on 2 CPU cores once its base model is cached
    "tiny": dict(per_label=200, epochs=3, batch_size=32, head_epochs=3, max_new_tokens=20),
    # 3-4 minutes once its base model is cached: all balanced on-topic private utterances, more epochs
    # PPLM at 10 steps per token (PPLM's own setting for discriminators): 3 barely moved this model's head
    # (README, `benchmarks/synth_validation.py`); generation takes about 2.5 times as long. Steps of 0.1, not the
    # 0.03 of PPLM's bag-of-words example (its discriminator example: 0.04): on validation 0.1 and 0.3 both beat
    # 0.03 for pplm and multitask, and 0.1 is the multitask generator's best (0.3 pplm's, within noise of 0.1;
    # README)
    "quick": dict(per_label=None, epochs=6, batch_size=64, head_epochs=6, max_new_tokens=24, samples_per_label=250,
                  pplm_iterations=10, pplm_stepsize=0.1),
}


# The core preset whose public base model a synth preset fine-tunes, with these overrides. quick's base is trained
# on ALL public sentences (30,404, not the 8,000 of core quick; same model size, so DP fine-tuning costs the same):
# a public model should use all the public text there is, and its features carry more topic (README, `python
# benchmarks/synth_validation.py --probe-only`). tiny stays a smoke test.
SYNTH_BASE_OVERRIDES: dict[str, dict[str, Any]] = {
    "tiny": {},
    "quick": {"data__public_train": None},
}


def synth_config(preset: str = "tiny", **overrides: Any) -> SynthConfig:
    """SynthConfig for a preset with these settings (None is a value: per_label None takes the rarest label's
    count; a config file's null used to be dropped, leaving the preset's 200)."""
    if preset not in SYNTH_PRESETS:
        raise ConfigError(f"unknown synth preset {preset!r}; choose one of {', '.join(SYNTH_PRESETS)}")
    return validate(replace(SynthConfig(preset=preset), **{**SYNTH_PRESETS[preset], **overrides}))


def validate(cfg: SynthConfig) -> SynthConfig:
    check_types(cfg)  # a config file may carry any JSON type: "lr": "0.001" was a TypeError in a comparison
    check_epsilon_range(cfg.epsilon)
    check_seed(cfg.seed)
    if cfg.generator not in GENERATORS:
        raise ConfigError(f"unknown generator {cfg.generator!r}; choose one of {', '.join(GENERATORS)}")
    if cfg.preset not in SYNTH_PRESETS:
        raise ConfigError(f"unknown synth preset {cfg.preset!r}; choose one of {', '.join(SYNTH_PRESETS)}")
    if cfg.projection not in ("umap", "pca"):
        raise ConfigError(f"projection must be umap or pca, got {cfg.projection!r}")
    if cfg.max_tokens < 8:
        raise ConfigError(f"max_tokens must be at least 8, got {cfg.max_tokens}")
    if cfg.multitask_clipping not in ("joint", "separate"):
        raise ConfigError(f"multitask_clipping must be joint or separate, got {cfg.multitask_clipping!r}")
    if cfg.separator not in ("bos", "newline"):
        raise ConfigError(f"separator must be bos or newline, got {cfg.separator!r}")
    if cfg.trainable not in ("blocks", "all"):
        raise ConfigError(f"trainable must be blocks or all, got {cfg.trainable!r}")
    if not 0.0 < cfg.test_fraction < 1.0:
        raise ConfigError(f"test_fraction must be in (0, 1), got {cfg.test_fraction}")
    if not 0.0 < cfg.top_p <= 1.0:
        raise ConfigError(f"top_p must be in (0, 1], got {cfg.top_p}")
    if not 0.0 <= cfg.filter_threshold < 1.0:
        raise ConfigError(f"filter_threshold must be in [0, 1), got {cfg.filter_threshold}")
    if not 0.0 <= cfg.pplm_gm_scale <= 1.0:
        raise ConfigError(f"pplm_gm_scale must be in [0, 1], got {cfg.pplm_gm_scale}")
    positive = ("max_turn", "min_words", "max_tokens", "epochs", "batch_size", "prefix_step", "head_epochs",
                "max_new_tokens", "gen_batch", "filter_rounds", "rf_trees")
    for name in positive:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    for name in ("per_label", "samples_per_label"):
        value = getattr(cfg, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 2):
            raise ConfigError(f"{name} must be an integer of at least 2 (or None), got {value!r}")
    if cfg.cv_folds < 2:
        raise ConfigError(f"cv_folds must be at least 2, got {cfg.cv_folds}")
    if cfg.pplm_iterations < 0:
        raise ConfigError(f"pplm_iterations must be >= 0, got {cfg.pplm_iterations}")
    for name in ("lr", "head_lr", "max_grad_norm", "temperature", "pplm_stepsize"):
        if not getattr(cfg, name) > 0:
            raise ConfigError(f"{name} must be > 0, got {getattr(cfg, name)}")
    return cfg


# synth fields only some generators read (core.synth.run, core.synth.train): another's value is no setting of theirs
SYNTH_FIELDS_READ_BY = {"filter_": ("filter",), "pplm_": ("pplm", "multitask"), "disc_weight": ("multitask",),
                        "multitask_clipping": ("multitask",)}


def synth_field_read(field: str, generator: str | None) -> bool:
    """Whether a synthetic-data run of this generator reads this SynthConfig field (SYNTH_FIELDS_READ_BY)."""
    readers = [g for prefix, g in SYNTH_FIELDS_READ_BY.items() if field.startswith(prefix)]
    return not readers or generator in readers[0]


def synth_other_settings(cfg: dict) -> dict[str, Any]:
    """The settings a synthetic-data run's config records that differ from its preset's, its generator, epsilon and
    seed aside: REPORT.md's table and the Synthetic data page compare runs at the preset's settings (a run on a
    user's csv of two labels read as a chitchat result there, and was averaged into its cells). A synth section that
    is not an object is one such setting: nothing to compare it by."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("synth"), dict):  # a garbled config.json: set aside
        return {"synth": cfg.get("synth") if isinstance(cfg, dict) else "unreadable"}
    synth = cfg["synth"]
    preset = synth.get("preset", cfg.get("preset"))
    try:
        defaults = dataclasses.asdict(synth_config(str(preset)))
    except ConfigError:
        return {"preset": preset}
    return {f"synth.{k}": v for k, v in synth.items() if k in defaults and k not in ("generator", "epsilon", "seed")
            and v != defaults[k] and synth_field_read(k, synth.get("generator"))}
