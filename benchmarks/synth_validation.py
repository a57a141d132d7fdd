"""Synthetic-data generators compared on a VALIDATION slice of the train set (never the test set).

Trains one DP conditional LM of a synth preset (the naive LM plus its DP head on the frozen model, or the multitask
model), then generates with each requested mode and prints three label signals of the synthetic set and one of
its text:
- val. accuracy: TF-IDF + logistic regression trained on the synthetic samples, tested on every 5th train text;
- agreement: how often the same classifier trained on the other train texts agrees with the synthetic labels;
- head agrees: how often the model's own discriminator head agrees with them (what PPLM steers towards);
- word start: the share of samples whose first word is a word of the train texts (not a fragment such as "epends").
The generator saw the validation texts during fine-tuning, so these numbers are for comparing settings with each
other (`head agrees` is high for `filter` by construction: it keeps what that head scores highest); the run's own
`accuracy_synthetic` (real test set) is what `python -m core synth` reports.

    python benchmarks/synth_validation.py --model naive --epsilon 3 --generate plain,filter,pplm
    python benchmarks/synth_validation.py --model naive --epsilon 3 --generate filter,pplm --set separator=newline
    python benchmarks/synth_validation.py --model multitask --epsilon 3 --generate pplm,plain --set epochs=24
    python benchmarks/synth_validation.py --model naive --epsilon inf --generate plain --set epochs=24
    python benchmarks/synth_validation.py --model naive --epsilon inf --generate plain --probe
    python benchmarks/synth_validation.py --probe-only --base data__public_train=8000   # core quick's base model

Modes: plain (conditional nucleus sampling, nothing kept out), filter (the `filter` generator), pplm (PPLM steering
with the model's head: the `pplm` generator on the naive model, the `multitask` generator on the multitask model).
A mode may carry its own generation settings, joined by +: `pplm+pplm_iterations=10+pplm_stepsize=0.1`.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time

from common import machine_line


def word_list(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def parse_base(items: list[str]) -> dict:
    """KEY=VALUE core preset overrides of the public base model (section__field=JSON value, e.g.
    data__public_train=8000 for core quick's base), applied after the synth preset's SYNTH_BASE_OVERRIDES."""
    import json

    return {key: json.loads(text) for key, _, text in (item.partition("=") for item in items)}


def parse_settings(items: list[str]) -> dict:
    """KEY=VALUE SynthConfig overrides, typed like the field's default."""
    from core.synth.config import SynthConfig

    defaults = SynthConfig()
    out = {}
    for item in items:
        key, _, text = item.partition("=")
        current = getattr(defaults, key)  # AttributeError names an unknown setting
        out[key] = int(text) if current is None else type(current)(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("naive", "multitask"), default="naive")
    parser.add_argument("--epsilon", type=float, default=3.0)
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--generate", default="plain,filter,pplm")
    # action="extend": `--set a=1 --set b=2` keeps both
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="SynthConfig overrides")
    parser.add_argument("--base", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="public base model overrides, e.g. data__public_train=8000")
    parser.add_argument("--probe-only", action="store_true",
                        help="print the probe (below) on the public base model, before any private training, and stop")
    parser.add_argument("--probe", action="store_true",
                        help="also fit a non-private logistic probe on the mean hidden state, before and after "
                             "fine-tuning: how much topic the model's features carry at all")
    args = parser.parse_args()

    import numpy as np
    import torch

    from core.base import load_or_train_base
    from core.models import clone, set_threads
    from core.synth.config import synth_config
    from core.synth.evaluate import classifier_accuracy
    from core.synth.job import prepare_job
    from core.synth.model import Formatter, SynthLM, encode_texts
    from core.synth.run import synthesize
    from core.synth.train import (
        Batches,
        label_probs,
        lm_test_loss,
        plan_privacy,
        text_embeddings,
        train_head,
        train_lm,
    )

    set_threads()
    settings = parse_settings(args.set)
    generator = "multitask" if args.model == "multitask" else "filter"
    job = prepare_job(synth_config(args.preset, generator=generator, epsilon=args.epsilon, **settings),
                      parse_base(args.base))
    cfg, data = job.cfg, job.data
    base, tokenizer, _ = load_or_train_base(job.base, job.prepared)
    fmt = Formatter.build(tokenizer, data.labels, cfg.max_tokens, cfg.separator)
    train_ids = encode_texts(tokenizer, [e.text for e in data.train])
    plan = plan_privacy(cfg, len(train_ids))
    model = SynthLM(clone(base), len(data.labels))
    torch.manual_seed(cfg.seed)
    model.head.reset_parameters()
    fit = [e for i, e in enumerate(data.train) if i % 5]
    val = [e for i, e in enumerate(data.train) if i % 5 == 0]

    def probe_accuracy(m: SynthLM) -> float:
        from sklearn.linear_model import LogisticRegression

        def features(rows):
            return text_embeddings(m, fmt, encode_texts(tokenizer, [e.text for e in rows]), cfg.seed).numpy()

        clf = LogisticRegression(max_iter=2000).fit(features(fit), [e.label for e in fit])
        return float(clf.score(features(val), [e.label for e in val]))

    probe_before = probe_accuracy(model) if args.probe or args.probe_only else None
    if args.probe_only:
        print(machine_line())
        print(f"preset {args.preset}, base model trained on {len(job.prepared.public_train)} public sentences: "
              f"non-private logistic probe on the mean hidden state, validation accuracy {probe_before:.3f}")
        return
    batches = Batches(fmt, train_ids, [data.index(e.label) for e in data.train], cfg.seed)
    t0 = time.time()
    model, _, _ = train_lm(model, batches, cfg, plan["noise_multiplier"], lambda *a, **k: None)
    if args.model == "naive":
        model, _, _ = train_head(model, batches, cfg, plan["noise_multiplier"], lambda *a, **k: None)
    train_s = time.time() - t0

    val_texts, val_labels = [e.text for e in val], [e.label for e in val]
    reference_acc, reference = classifier_accuracy([e.text for e in fit], [e.label for e in fit], val_texts, val_labels)
    head_acc = float(np.mean(label_probs(model, fmt, encode_texts(tokenizer, val_texts), cfg.seed).argmax(-1).numpy()
                             == np.array([data.index(y) for y in val_labels])))
    test_loss = lm_test_loss(model, fmt, encode_texts(tokenizer, [e.text for e in data.test]),
                             [data.index(e.label) for e in data.test])

    print(machine_line())
    print(f"preset {args.preset}: {len(data.train)} train texts, {len(data.labels)} labels; {args.model} model, "
          f"epsilon {args.epsilon:g}, noise multiplier {plan['noise_multiplier']:.3f} "
          f"({plan['release_noise_multiplier']:.3f} per release), "
          f"{plan['lm_steps'] + plan['head_steps']} DP steps ({train_s:.0f} s); settings {settings or 'preset'}")
    print(f"LM test loss {test_loss:.3f}; discriminator head accuracy on validation {head_acc:.3f}")
    if args.probe:
        print(f"non-private logistic probe on the mean hidden state, validation accuracy: base model "
              f"{probe_before:.3f}, fine-tuned {probe_accuracy(model):.3f}; TF-IDF on the texts {reference_acc:.3f}")
    train_words = {w for e in data.train for w in word_list(e.text)}
    print(f"{'val. accuracy':>14s} {'agreement':>10s} {'head agrees':>12s} {'word start':>11s} {'samples':>8s}  "
          "generation")
    for spec in args.generate.split(","):
        mode, *extra = spec.split("+")  # e.g. pplm+pplm_iterations=10: generation settings for this mode only
        gen_cfg = dataclasses.replace(cfg, generator="filter" if mode in ("plain", "filter") else generator,
                                      **parse_settings(extra))
        if mode == "plain":  # the filter generator with a filter that keeps everything, one round
            gen_cfg = dataclasses.replace(gen_cfg, filter_threshold=0.0, filter_rounds=1)
        if mode == "pplm" and args.model == "naive":
            gen_cfg = dataclasses.replace(gen_cfg, generator="pplm")
        per_label = gen_cfg.samples_per_label or len(data.train) // len(data.labels)
        samples, _ = synthesize(gen_cfg, model, fmt, tokenizer, per_label, lambda *a, **k: None)
        texts, labels = [s["text"] for s in samples], [s["label"] for s in samples]
        accuracy, _ = classifier_accuracy(texts, labels, val_texts, val_labels)
        agreement = float(np.mean(reference.predict(texts) == np.array(labels)))
        # the model's own head on its samples: did steering move the text where the head looks?
        head_says = label_probs(model, fmt, encode_texts(tokenizer, texts), cfg.seed).argmax(-1).numpy()
        head_agrees = float(np.mean(head_says == np.array([data.index(y) for y in labels])))
        word_start = float(np.mean([bool(w) and w[0] in train_words for w in map(word_list, texts)]))
        print(f"{accuracy:14.3f} {agreement:10.3f} {head_agrees:12.3f} {word_start:11.3f} {len(samples):8d}  {spec}",
              flush=True)


if __name__ == "__main__":
    main()
