"""The seeds of a mechanism's own random streams (core.privacy.streams)."""

import numpy as np

from core.privacy import streams
from core.privacy.streams import SEQPATE_NOISE, dp_sgd_streams, stream_seed
from core.seqpate.teachers import teacher_seed


def test_a_stream_seed_is_fixed_by_the_run_seed_and_the_name_and_differs_otherwise():
    names = [value for key, value in vars(streams).items() if key.isupper()]  # every named stream
    names += [*dp_sgd_streams(streams.DPSGD).values(), *dp_sgd_streams("synth conditional-finetune").values()]
    assert len(set(names)) == len(names) >= 9
    seeds = {(seed, name): stream_seed(seed, name) for seed in range(3) for name in names}
    assert len(set(seeds.values())) == len(seeds)  # another seed or another name: another stream
    assert all(0 <= s < 2**63 for s in seeds.values())  # a seed for torch.Generator and numpy alike
    assert np.random.default_rng(stream_seed(0, SEQPATE_NOISE)).normal() != np.random.default_rng(0).normal()


def test_seqpate_noise_is_no_stream_a_teacher_or_the_partition_draws_from():
    """Seeded cfg.seed + 7, the noise of a seed-0 run replayed the numbers that ordered teacher 7's training
    batches (numpy's default_rng(7)): the released answers were not independent of that teacher's training."""
    for seed in range(3):
        others = {seed} | {teacher_seed(seed, index) for index in range(2000)}  # partition, student; teachers
        assert stream_seed(seed, SEQPATE_NOISE) not in others
    assert 0 + 7 == teacher_seed(0, 7)  # the collision the old seed had
