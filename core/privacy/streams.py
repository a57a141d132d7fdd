"""Seeds of the random streams a private mechanism draws from.

The accounting assumes that a mechanism's noise, and the Poisson sampling its amplification rests on, are
independent of everything else a run releases. Seeding torch or numpy with the run's seed at every stage replays
one stream: the public base model's training (its dropout, its initial weights) drew the very numbers that then
decided which sentences DP-SGD's first batches held, SeqPATE teacher 7's batch order (seed 0) the numbers of its
noise, a discriminator head's initial weights its first batch's (found by reviews). So each mechanism draws from
generators of its own, seeded by mixing the run's seed with the stream's name (numpy's SeedSequence), a seed no
other part of the run uses. A run is still reproducible from its seed, and runs of one seed still share noise
(core.analysis.statement says so).
"""

from __future__ import annotations

import hashlib

import numpy as np

SEQPATE_NOISE = "seqpate noise"  # the teacher aggregation's Gaussian or Laplace noise
DPSGD = "dp-sgd"  # DP-SGD and ADP (one stream each for the sampling and the noise)
# A synthetic-data run's DP stages are named "synth <stage>" (core.synth.train.training_stream); its other draws:
SYNTH_HEAD_INIT = "synth head init"  # the discriminator head's initial weights (released with the model)
SYNTH_LABEL_TOKENS = "synth label tokens"  # the random tokens standing in for the label in training
SYNTH_SCORING_TOKENS = "synth scoring tokens"  # the same when the head scores texts (filter, embeddings)
SYNTH_GENERATION = "synth generation"  # sampling the synthetic texts


def stream_seed(seed: int, stream: str) -> int:
    """A 63-bit seed of the named stream of a run seeded with `seed`: another name or another seed gives an
    unrelated stream (and a seed for torch.Generator.manual_seed or np.random.default_rng alike)."""
    name = int.from_bytes(hashlib.sha256(stream.encode()).digest()[:8], "little")
    return int(np.random.SeedSequence([seed, name]).generate_state(1, dtype=np.uint64)[0] >> 1)


def dp_sgd_streams(stream: str) -> dict[str, str]:
    """The names of a DP-SGD training's two streams, its Poisson sampling's and its noise's (privacy.json
    `random_streams`, so a statement can tell a run made before they had their own)."""
    return {"sampling": f"{stream} sampling", "noise": f"{stream} noise"}
