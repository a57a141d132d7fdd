"""The seeds of a mechanism's own random streams (core.privacy.streams). That a SeqPATE run seeds its oracle from
its stream, and DP-SGD its batches and noise, is tested with the runs (tests/seqpate, tests/baselines)."""

from core.privacy import streams
from core.privacy.streams import dp_sgd_streams, stream_seed


def test_every_named_stream_is_distinct_and_gets_its_own_seed_per_run_seed():
    names = [value for key, value in vars(streams).items() if key.isupper()]  # every named stream
    names += [*dp_sgd_streams(streams.DPSGD).values(), *dp_sgd_streams("synth conditional-finetune").values()]
    assert len(set(names)) == len(names) >= 9  # two consumers sharing a name would share their numbers
    seeds = {(seed, name): stream_seed(seed, name) for seed in range(3) for name in names}
    assert len(set(seeds.values())) == len(seeds)  # another seed or another name: another stream
    assert all(0 <= s < 2**63 for s in seeds.values())  # a seed for torch.Generator and numpy alike
