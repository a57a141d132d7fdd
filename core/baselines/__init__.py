"""Baselines: every one is a function Workspace -> MethodResult, registered by its --method name."""

from core.baselines.reference import pri_gpt, pub_gpt, pub_gpt_pseudo

METHODS = {
    "pub-gpt": pub_gpt,
    "pub-gpt+pseudo": pub_gpt_pseudo,
    "pri-gpt": pri_gpt,
}
