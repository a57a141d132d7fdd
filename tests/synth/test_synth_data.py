"""Labelled data: chitchat topic labels, balance by downsampling, seeded stratified split, text,label files."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from core.config import DataConfig
from core.data import load_records
from core.data.corpora import CorpusError, Record
from core.synth.config import CHITCHAT_TOPICS, synth_config
from core.synth.data import (
    Example,
    balance,
    chitchat_examples,
    labelled_data,
    load_labelled,
    min_examples_per_label,
    split,
)

FILM, SMELL = CHITCHAT_TOPICS[0][1], CHITCHAT_TOPICS[1][1]
LONG = "one two three four five six seven"


def conversation(cid: str, prompt: str, users: list[str]) -> list[Record]:
    meta = {"conversation": cid, "prompt": prompt}
    return [Record(f"{LONG} turn {k}", user, meta) for k, user in enumerate(users)]


def test_chitchat_labels_by_prompt_first_turns_private_users_only():
    records = (conversation("c1", FILM, ["a", "b", "a", "b"]) + conversation("c2", SMELL, ["pub", "c", "c"])
               + conversation("c3", "Mozart or Beethoven? not a topic prompt", ["a"])
               + [Record("too short", "a", {"conversation": "c2", "prompt": SMELL})])
    got = chitchat_examples(records, CHITCHAT_TOPICS, frozenset({"pub"}), max_turn=3, min_words=6)
    assert [(e.label, e.text.split()[-1]) for e in got] == [
        ("film", "0"), ("film", "1"), ("film", "2"),  # turn 3 is past max_turn
        ("smell", "1"), ("smell", "2"),  # turn 0 is by a public user
    ]


def test_balance_downsamples_every_label_to_the_rarest_or_per_label():
    examples = [Example(f"a{i}", "a") for i in range(10)] + [Example(f"b{i}", "b") for i in range(4)]
    assert Counter(e.label for e in balance(examples, None, 0)) == {"a": 4, "b": 4}
    assert Counter(e.label for e in balance(examples, 3, 0)) == {"a": 3, "b": 3}
    assert balance(examples, 3, 0) == balance(examples, 3, 0)
    assert balance(examples, 3, 0) != balance(examples, 3, 1)


def test_split_is_stratified_80_20_and_seeded():
    examples = [Example(f"{y}{i}", y) for y in "abc" for i in range(20)]
    train, test = split(examples, 0.2, seed=5)
    assert Counter(e.label for e in test) == {"a": 4, "b": 4, "c": 4}
    assert Counter(e.label for e in train) == {"a": 16, "b": 16, "c": 16}
    assert not set(train) & set(test)
    assert split(examples, 0.2, seed=5) == (train, test)
    assert split(examples, 0.2, seed=6) != (train, test)


def test_chitchat_tiny_preset_is_balanced_and_deterministic():
    cfg = synth_config("tiny")
    records = load_records(DataConfig())  # chitchat, loaded once (cached in-process)
    a, b = labelled_data(cfg, frozenset(), records), labelled_data(cfg, frozenset(), records)
    assert a == b and a.labels == ("film", "music", "peanut butter", "smell")
    assert Counter(e.label for e in a.train) == {label: 160 for label in a.labels}
    assert Counter(e.label for e in a.test) == {label: 40 for label in a.labels}


# ------------------------------------------------------------------------------------------------------------
# text,label files
# ------------------------------------------------------------------------------------------------------------


def test_csv_and_jsonl_files_load(tmp_path):
    csv_file = tmp_path / "sst2.csv"
    csv_file.write_text('text,label,extra\n"a fine, warm film",positive,x\nawful,negative,y\n  ,negative,z\n')
    assert load_labelled(csv_file) == [Example("a fine, warm film", "positive"), Example("awful", "negative")]
    jsonl = tmp_path / "ag.jsonl"
    jsonl.write_text(json.dumps({"text": "stocks fell", "label": 2}) + "\n\n"
                     + json.dumps({"text": "a goal", "label": "sports"}) + "\n")
    assert load_labelled(jsonl) == [Example("stocks fell", "2"), Example("a goal", "sports")]
    floats = tmp_path / "floats.jsonl"  # a whole float is its integer's label: 1 and 1.0 were two labels
    floats.write_text("\n".join(json.dumps({"text": t, "label": y}) for t, y in [("a b", 1), ("c d", 1.0), ("e f", 0.5)]))
    assert [e.label for e in load_labelled(floats)] == ["1", "1", "0.5"]
    floats_csv = tmp_path / "floats.csv"  # and in a csv, where pandas writes such a column as 1.0
    floats_csv.write_text("text,label\na b,1\nc d,1.0\ne f,0.5\ng h,-2.00\ni j,1.05\nk l,10\nm n,-0.0\no p,+1.0\n"
                          "q r,1.\ns t,007\n")
    assert [e.label for e in load_labelled(floats_csv)] == ["1", "1", "0.5", "-2", "1.05", "10", "0", "1", "1", "007"]
    # json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 raw inside a string: still one line each
    # (str.splitlines split there, and the file was refused as "Unterminated string")
    raw = tmp_path / "raw.jsonl"
    raw.write_text("\n".join(json.dumps({"text": f"one\u2028two{c}three", "label": label}, ensure_ascii=False)
                             for c, label in (("\u2029", "a"), ("\x85", "b"))) + "\n", encoding="utf-8")
    assert load_labelled(raw) == [Example("one two three", "a"), Example("one two three", "b")]
    mac = tmp_path / "mac.jsonl"  # lines ended by a carriage return alone, or by both
    mac.write_bytes(b'{"text": "x y", "label": "a"}\r{"text": "z w", "label": "b"}\r\n')
    assert load_labelled(mac) == [Example("x y", "a"), Example("z w", "b")]


@pytest.mark.parametrize("name, content, message", [
    ("d.csv", "text,topic\nhello,a\n", "d.csv: no 'label' column (columns: text, topic)"),
    ("d.csv", "sentence,label\nhello,a\n", "d.csv: no 'text' column (columns: sentence, label)"),
    ("d.csv", "text,label\nhello,a\nbye,b,extra\n", "d.csv line 3: expected 2 fields"),
    # a header cell with a newline is named with it escaped; a long one (a file without a header row) cut short
    ("d.csv", '"sen\ntence",label\nhello,a\n', "d.csv: no 'text' column (columns: sen\\ntence, label)"),
    pytest.param("d.csv", "x" * 200_000 + ",label\nhello,a\n", "d.csv: no 'text' column (columns: " + "x" * 59
                 + "…, label)", id="header-cell-over-the-field-limit"),
    ("d.csv", "text,label\nhello,a\nbye,\n", "d.csv line 3: empty label"),
    # a stray quote swallowed the rows up to the next quote into one example of one label, without a word (a
    # review: 40 rows read as 25); one never closed, the rest of the file
    pytest.param("d.csv", 'text,label\nfine,a\n"open quote,b\nnext,a\nand" more,b\nlast,a\n',
                 "d.csv line 3: ',' expected after '\"' (in the row starting there; a quote left open?)",
                 id="quote-left-open"),
    pytest.param("d.csv", 'text,label\nfine,a\n"open quote,b\nnext,a\nend",b\nlast,a\n',
                 "d.csv line 3: a quoted field runs from here to line 5 over lines that read as rows of their own: "
                 "a quote left open?", id="quote-closed-before-a-delimiter"),
    pytest.param("d.csv", 'text,label\nfine,a\n"open to the end,b\nnext,a\n',
                 "d.csv line 3: unexpected end of data", id="quote-open-to-the-end"),
    ("d.jsonl", '{"text": "hi", "label": "a"}\n{"text": "yo"}\n', "d.jsonl line 2: no 'label' field"),
    ("d.jsonl", '{"text": "hi", "label": "a"}\n{"text": "yo", \n', "d.jsonl line 2: not valid JSON"),
    ("d.jsonl", '["hi", "a"]\n', "d.jsonl line 1: expected a JSON object, got list"),
    ("d.jsonl", '{"text": "hi", "label": 1}\n{"text": "yo", "label": NaN}\n', "d.jsonl line 2: missing label (nan)"),
    # a missing value written out as text (str(NaN)) was a third label 'nan' (a CLI audit)
    ("d.csv", "text,label\nhello,a\nbye,NaN\n", "d.csv line 3: missing label (NaN)"),
    ("d.jsonl", '{"text": "hi", "label": "a"}\n{"text": "yo", "label": "nan"}\n', "d.jsonl line 2: missing label (nan)"),
    ("d.jsonl", '{"text": "hi", "label": "a"}\n{"text": "yo", "label": "a"}\n', "needs at least 2 labels"),
    ("d.csv", "", "d.csv: file is empty"),
    ("d.txt", "hello\n", "must be a .csv or .jsonl file"),
])
def test_bad_files_give_one_line_errors_naming_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(CorpusError) as err:
        load_labelled(path)
    text = str(err.value)
    assert message in text and "\n" not in text and str(tmp_path) in text


def test_a_text_over_the_csv_modules_field_limit_is_read(tmp_path):
    """A 2.6 MB review was refused as "field larger than field limit (131072) ... a quote left open?"."""
    path = tmp_path / "d.csv"
    path.write_text("text,label\nhello,a\n" + "x" * 200_000 + ",b\n")
    assert [(len(e.text), e.label) for e in load_labelled(path)] == [(5, "a"), (200_000, "b")]


def test_a_file_too_small_to_split_and_score_is_refused_before_training(tmp_path):
    """A 6-row file trained with delta = 1/|train| = 0.5 and failed at evaluation (separability cross-validates on
    2 test texts of each label at least); the file is refused first, naming the labels short of examples."""
    assert min_examples_per_label(0.2) == 8 and min_examples_per_label(0.25) == 6
    rows = [f"text {i} of a,a" for i in range(8)] + [f"text {i} of b,b" for i in range(7)]
    data = tmp_path / "mine.csv"
    data.write_text("text,label\n" + "\n".join(rows) + "\n")
    cfg = synth_config("tiny", corpus=str(data))
    with pytest.raises(CorpusError) as err:
        labelled_data(cfg)
    assert str(err.value) == (f"{data}: every label needs at least 8 examples (6 to train on, 2 to test); "
                              "too few of 'b' (7)")
    data.write_text("text,label\n" + "\n".join([*rows, "one more of b,b"]) + "\n")
    split_data = labelled_data(cfg)  # 8 of each: 6 to train on, 2 to test
    assert len(split_data.train) == 12 and Counter(e.label for e in split_data.test) == {"a": 2, "b": 2}
    with pytest.raises(CorpusError, match="per_label 3 is too few: every label needs at least 8 examples"):
        labelled_data(synth_config("tiny", corpus=str(data), per_label=3))


def test_missing_file(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        load_labelled(tmp_path / "none.csv")
