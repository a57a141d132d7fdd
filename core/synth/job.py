"""What a synthetic-data run is given before it starts (no torch here, so the command line checks input fast)."""

from __future__ import annotations

from dataclasses import dataclass

from core.config import ConfigError, RunConfig, preset_config
from core.data import PreparedData, load_prepared, load_records
from core.data.corpora import corpus_format
from core.synth.config import SYNTH_BASE_OVERRIDES, SynthConfig
from core.synth.data import LabelledData, labelled_data


@dataclass
class SynthJob:
    """Everything fixed before a run starts: the settings, the public base config, the labelled data."""

    cfg: SynthConfig
    base: RunConfig
    prepared: PreparedData
    data: LabelledData

    @property
    def delta(self) -> float:
        return 1.0 / len(self.data.train)

    def config_dict(self) -> dict:
        """config.json body: top-level method/preset/seed/privacy as every run has, the rest under synth/base."""
        return {"method": self.cfg.method, "preset": self.cfg.preset, "seed": self.cfg.seed,
                "privacy": {"epsilon": self.cfg.epsilon, "delta": self.delta},
                "synth": self.cfg.to_dict(), "base": self.base.to_dict(), "data_stats": self.data.stats()}


def synth_base_config(cfg: SynthConfig, base_overrides: dict | None = None) -> RunConfig:
    """The core config of the public base model: the synth preset's base, then the caller's overrides."""
    overrides = {**SYNTH_BASE_OVERRIDES[cfg.preset], **(base_overrides or {})}
    return preset_config(cfg.preset, seed=cfg.seed, **overrides)


def prepare_job(cfg: SynthConfig, base_overrides: dict | None = None) -> SynthJob:
    """Load and check everything a run needs (raises one-line errors before anything is written)."""
    base = synth_base_config(cfg, base_overrides)
    # the topics are chitchat's conversation prompts: a base corpus in its layout (corpus_format) holds them too
    if cfg.corpus == "chitchat" and corpus_format(base.data) != "chitchat":
        raise ConfigError(f"the chitchat topics are read from the chitchat corpus, but the base model's corpus is "
                          f"{base.data.corpus!r}; for labelled texts of your own give --corpus FILE (.csv or .jsonl "
                          "with text and label)")
    own = labelled_data(cfg) if cfg.corpus != "chitchat" else None  # a bad file fails before chitchat loads
    prepared = load_prepared(base.data, cfg.seed)  # the public base model's data and the user split
    data = own or labelled_data(cfg, prepared.public_users, load_records(base.data))
    return SynthJob(cfg, base, prepared, data)
