"""Baselines: every one is a function Workspace -> MethodResult, registered by its --method name."""

from core.baselines.adp import adp
from core.baselines.blacklist import pri_gpt_blacklist
from core.baselines.dpsgd import noisysgd, noisysgd_gc_pseudo, noisysgd_pseudo
from core.baselines.reference import pri_gpt, pub_gpt, pub_gpt_pseudo

METHODS = {
    "pub-gpt": pub_gpt,
    "pub-gpt+pseudo": pub_gpt_pseudo,
    "pri-gpt": pri_gpt,
    "noisysgd": noisysgd,
    "noisysgd+pseudo": noisysgd_pseudo,
    "noisysgd-gc+pseudo": noisysgd_gc_pseudo,
    "pri-gpt-blacklist": pri_gpt_blacklist,
    "adp": adp,
}
