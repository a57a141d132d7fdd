"""Non-private references of the paper's Table 1 (footnote 8: epsilon 0 for public-only, infinity for private)."""

from __future__ import annotations

import math

from core.train import epoch_lines, train_lm
from core.workspace import MethodResult, Workspace, public_only_privacy


def not_private(reason: str) -> dict:
    return {"epsilon": math.inf, "delta": 0.0, "accountant": "none (private data without protection)",
            "unit": "none", "events": [], "note": reason}


def fine_tune(ws: Workspace, texts: list[str], stage: str):
    cfg = ws.cfg
    model = ws.fresh_base()
    epochs = cfg.dpsgd.epochs

    return train_lm(model, ws.encode(texts), pad_id=ws.pad_id, epochs=epochs, lr=cfg.dpsgd.lr,
                    batch_size=cfg.dpsgd.batch_size, seed=cfg.seed, should_stop=ws.should_stop,
                    **epoch_lines(lambda done, **fields: ws.log(stage, ws.method_progress(done), **fields), epochs))


def pub_gpt(ws: Workspace) -> MethodResult:
    return MethodResult(ws.base_model, public_only_privacy("Pub-GPT: the public base model as is"))


def pub_gpt_pseudo(ws: Workspace) -> MethodResult:
    model = ws.pseudo_warm_model("pseudo-finetune")
    return MethodResult(model, public_only_privacy("Pub-GPT fine-tuned on pseudo data completed from public prefixes"))


def pri_gpt(ws: Workspace) -> MethodResult:
    model = fine_tune(ws, [s.text for s in ws.data.private_train], "private-finetune")
    return MethodResult(model, not_private("Pri-GPT: fine-tuned on the private train set with no protection"))
