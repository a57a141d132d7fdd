"""Labelled text for synthetic-data runs: chitchat utterances labelled by topic, or a user's text,label file.

Chitchat (default): every utterance is labelled by the prompt of its conversation, for four prompts picked as
topics (core.synth.config.CHITCHAT_TOPICS: "film", "smell", "peanut butter", "music"). Conversations drift off
their prompt, so only the first `max_turn` utterances of a conversation (with at least `min_words` words) count.
Only utterances of PRIVATE users are used (users outside the public side of core.data's user split), so the
public base model and its tokenizer never saw any of them.

Own data: a .csv (header row) or .jsonl file with `text` and `label` columns, e.g. SST-2 or AG News exported as
text,label. Problems are one-line CorpusErrors naming the file (and the line where there is one).

Both are balanced by downsampling every label to the same count, then split 80/20 per label, seeded.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.data.corpora import CorpusError, Record, csv_rows, json_lines, normalise, read_text
from core.synth.config import CHITCHAT_TOPICS, SynthConfig


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: str


@dataclass(frozen=True)
class LabelledData:
    train: tuple[Example, ...]
    test: tuple[Example, ...]
    labels: tuple[str, ...]  # sorted label names; a label's index is its class id
    source: str
    read: int = 0  # the examples read before balancing, and the rarest label's count among them: balance() cuts
    rarest: int = 0  # every label to it, or to per_label where that is fewer

    def index(self, label: str) -> int:
        return self.labels.index(label)

    def stats(self) -> dict:
        return {"source": self.source, "labels": list(self.labels), "train": len(self.train), "test": len(self.test),
                "train_per_label": dict(Counter(e.label for e in self.train)),
                "test_per_label": dict(Counter(e.label for e in self.test))}


# ------------------------------------------------------------------------------------------------------------
# Chitchat topics
# ------------------------------------------------------------------------------------------------------------


def chitchat_examples(records: Iterable[Record], topics: Sequence[tuple[str, str]], excluded_users: frozenset[str],
                      max_turn: int, min_words: int) -> list[Example]:
    """Utterances among the first max_turn of a conversation whose prompt is a topic, by non-excluded users.

    `records` must be in conversation order (as core.data.load_chitchat returns them): the turn of an utterance
    is its rank among its conversation's records.
    """
    label_of = {prompt: label for label, prompt in topics}
    turn: Counter[str] = Counter()
    out = []
    for r in records:
        conversation = r.meta.get("conversation")
        k = turn[conversation]
        turn[conversation] += 1
        label = label_of.get(r.meta.get("prompt"))
        if label is None or k >= max_turn or r.user_id in excluded_users or len(r.text.split()) < min_words:
            continue
        out.append(Example(r.text, label))
    return out


# ------------------------------------------------------------------------------------------------------------
# text,label files
# ------------------------------------------------------------------------------------------------------------


WHOLE_FLOAT = re.compile(r"[+-]?\d+\.0*")  # 1.0, -2.00, +1.0, 1. (a dot: "007" stays a name)


def _example(path: Path, where: str, text, label) -> Example | None:
    if not isinstance(text, str):
        raise CorpusError(f"{path} {where}: 'text' must be a string, got {type(text).__name__}")
    if label is None or isinstance(label, (dict, list)):
        raise CorpusError(f"{path} {where}: 'label' must be a string or number, got {json.dumps(label)}")
    if isinstance(label, float) and not math.isfinite(label):  # pandas writes a missing label as NaN
        raise CorpusError(f"{path} {where}: missing label ({label})")
    if isinstance(label, float) and label.is_integer():
        label = int(label)  # 1.0 (pandas writes an int column with gaps as floats) is the label 1, not "1.0"
    label = normalise(str(label))
    if label.lower() == "nan":  # a missing label written out as text (str(NaN)), as a jsonl NaN is refused
        raise CorpusError(f"{path} {where}: missing label ({label})")
    if WHOLE_FLOAT.fullmatch(label):
        label = str(int(float(label)))  # the same as text (a csv's): "1.0" and "1" were two labels; "-0.0" is 0
    text = normalise(text)
    if not text:
        return None  # blank rows are skipped, as core.data does
    if not label:
        raise CorpusError(f"{path} {where}: empty label")
    return Example(text, label)


def _csv_examples(path: Path, content: str) -> list[Example]:
    out = []
    for line, row in csv_rows(path, content, required=("text", "label")):
        ex = _example(path, f"line {line}", row["text"], row["label"])
        if ex is not None:
            out.append(ex)
    return out


def _jsonl_examples(path: Path, content: str) -> list[Example]:
    out = []
    for number, row in json_lines(path, content):
        if not isinstance(row, dict):
            raise CorpusError(f"{path} line {number}: expected a JSON object, got {type(row).__name__}")
        for column in ("text", "label"):
            if column not in row:
                raise CorpusError(f"{path} line {number}: no {column!r} field")
        ex = _example(path, f"line {number}", row["text"], row["label"])
        if ex is not None:
            out.append(ex)
    return out


def load_labelled(path: str | Path) -> list[Example]:
    """Examples of a .csv or .jsonl file with text and label columns (extra columns are ignored)."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in (".csv", ".jsonl"):
        raise CorpusError(f"{path}: labelled data must be a .csv or .jsonl file with text,label columns")
    if not path.is_file():
        raise CorpusError(f"labelled data file not found: {path}")
    content = read_text(path)
    if not content.strip():
        raise CorpusError(f"{path}: file is empty")
    examples = _csv_examples(path, content) if path.suffix.lower() == ".csv" else _jsonl_examples(path, content)
    if not examples:
        raise CorpusError(f"{path}: no rows with non-blank text")
    labels = {e.label for e in examples}
    if len(labels) < 2:
        raise CorpusError(f"{path}: needs at least 2 labels, found {len(labels)} ({', '.join(sorted(labels))})")
    return examples


# ------------------------------------------------------------------------------------------------------------
# Balance and split
# ------------------------------------------------------------------------------------------------------------


def balance(examples: Sequence[Example], per_label: int | None, seed: int) -> list[Example]:
    """Every label downsampled (seeded) to the same count: per_label, or the rarest label's count if smaller."""
    by_label: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_label[e.label].append(e)
    n = min(len(v) for v in by_label.values())
    if per_label is not None:
        n = min(n, per_label)
    out = []
    for label in sorted(by_label):
        chosen = list(by_label[label])
        random.Random(f"{seed}:balance:{label}").shuffle(chosen)
        out.extend(chosen[:n])
    return out


def split(examples: Sequence[Example], test_fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """(train, test), stratified: each label's examples shuffled and cut test_fraction / rest."""
    by_label: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_label[e.label].append(e)
    train, test = [], []
    for label in sorted(by_label):
        items = list(by_label[label])
        random.Random(f"{seed}:split:{label}").shuffle(items)
        n_test = split_sizes(len(items), test_fraction)[0]
        test.extend(items[:n_test])
        train.extend(items[n_test:])
    # interleave labels so that any prefix of the train set is balanced too
    random.Random(f"{seed}:order").shuffle(train)
    return train, test


def labelled_data(cfg: SynthConfig, public_users: frozenset[str] = frozenset(),
                  records: Sequence[Record] | None = None) -> LabelledData:
    """The labelled train/test sets of a config (chitchat topics, or cfg.corpus as a text,label file).

    public_users: chitchat users on the public side of the user split (their utterances are left out);
    records: the chitchat records if already loaded.
    """
    if cfg.corpus == "chitchat":
        from core.data import load_chitchat

        records = load_chitchat() if records is None else records
        examples = chitchat_examples(records, CHITCHAT_TOPICS, public_users, cfg.max_turn, cfg.min_words)
        source = f"chitchat topics (private users, first {cfg.max_turn} turns)"
    else:
        examples = load_labelled(cfg.corpus)
        source = str(cfg.corpus)
    check_enough(Counter(e.label for e in examples), cfg, source)
    balanced = balance(examples, cfg.per_label, cfg.seed)
    train, test = split(balanced, cfg.test_fraction, cfg.seed)
    labels = tuple(sorted({e.label for e in balanced}))
    counts = Counter(e.label for e in examples)
    return LabelledData(tuple(train), tuple(test), labels, source, read=len(examples), rarest=min(counts.values()))


def check_enough(counts: Counter[str], cfg: SynthConfig, source: str) -> None:
    """Every label (after balancing) needs the examples split() cuts into at least 2 test texts (separability
    cross-validates on them) and 1 to train on: a 6-row file trained with delta = 1/|train| = 0.5 and failed at
    evaluation."""
    needed = min_examples_per_label(cfg.test_fraction)
    n_test, n_train = split_sizes(needed, cfg.test_fraction)
    what = f"every label needs at least {needed} examples ({n_train} to train on, {n_test} to test)"
    if cfg.per_label is not None and cfg.per_label < needed:
        raise CorpusError(f"per_label {cfg.per_label} is too few: {what}")
    few = {label: n for label, n in sorted(counts.items()) if n < needed}
    if few:
        raise CorpusError(f"{source}: {what}; too few of " + ", ".join(f"{lb!r} ({n})" for lb, n in few.items()))


def split_sizes(n: int, test_fraction: float) -> tuple[int, int]:
    """(test, train) sizes split() cuts n examples of one label into."""
    n_test = max(1, round(test_fraction * n))
    return n_test, n - n_test


def min_examples_per_label(test_fraction: float) -> int:
    """The fewest examples of a label that split() leaves at least 2 test texts (separability's two folds) and 1
    train text: 8 at the default test fraction 0.2."""
    n = max(2, math.floor(1.5 / test_fraction))  # round(f n) >= 2 needs f n >= 1.5: start just below, step up
    while split_sizes(n, test_fraction)[0] < 2 or split_sizes(n, test_fraction)[1] < 1:
        n += 1
    return n
