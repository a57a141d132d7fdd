"""Loaders for AirDialog, Europarl and tables on small files written here, and the dispatch."""

import json
import re

import pytest

from core.config import DataConfig
from core.data import CorpusError, load_airdialog, load_corpus, load_europarl, load_table, split_speaker

DIALOGUES = [
    {
        "dialogue": ["customer: Hi, I am Jason Lee.", "agent: Hello Jason,  how can I help you?"],
        "intent": {"name": "Jason Lee", "goal": "book"},
        "action": {"status": "book"},
        "correct_sample": True,
    },
    {
        "dialogue": ["customer: My name is Ann  Smith.", "agent: Sure.", "customer: Thanks"],
        "intent": {"name": "Ann Smith", "goal": "cancel"},
    },
    {
        "dialogue": ["customer: Jason again here."],
        "intent": {"name": "Jason Lee"},
    },
]


def write_lines(path, objects):
    path.write_text("\n".join(json.dumps(o) for o in objects) + "\n")
    return path


# --- AirDialog ---------------------------------------------------------------------------------------------------


def test_airdialog_json_lines(tmp_path):
    records = load_airdialog(write_lines(tmp_path / "train_data.json", DIALOGUES))
    assert len(records) == 6
    assert [r.user_id for r in records] == ["Jason Lee"] * 2 + ["Ann Smith"] * 3 + ["Jason Lee"]
    assert records[0].text == "Hi, I am Jason Lee."
    assert records[1].text == "Hello Jason, how can I help you?"
    assert records[1].meta == {"dialogue": 0, "speaker": "agent", "name": "Jason Lee"}
    assert records[2].meta == {"dialogue": 1, "speaker": "customer", "name": "Ann Smith"}
    assert records[5].meta["dialogue"] == 2


def test_airdialog_json_list(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(DIALOGUES, indent=2))
    assert load_airdialog(path) == load_airdialog(write_lines(tmp_path / "lines.json", DIALOGUES))


def test_airdialog_malformed_line(tmp_path):
    path = tmp_path / "train_data.json"
    path.write_text(json.dumps(DIALOGUES[0]) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"train_data\.json line 2: not valid JSON"):
        load_airdialog(path)


def test_airdialog_missing_name(tmp_path):
    path = write_lines(tmp_path / "a.json", [DIALOGUES[0], {"dialogue": ["customer: hi"], "intent": {}}])
    with pytest.raises(CorpusError, match=r"a\.json line 2: no customer name"):
        load_airdialog(path)


def test_split_speaker():
    assert split_speaker("customer: Hi there") == ("customer", "Hi there")
    assert split_speaker("Agent:Sure") == ("agent", "Sure")
    assert split_speaker("time: 5pm") == ("unknown", "time: 5pm")


# --- Europarl ----------------------------------------------------------------------------------------------------


def test_europarl(tmp_path):
    path = tmp_path / "europarl.txt"
    path.write_text("Resumption of the session\n\n  I declare   resumed the session.\n")
    records = load_europarl(path)
    assert [(r.text, r.user_id) for r in records] == [
        ("Resumption of the session", "line-1"),
        ("I declare resumed the session.", "line-3"),
    ]


def test_europarl_lines_end_at_line_breaks_only(tmp_path):
    """str.splitlines also ends a line at U+2028 and U+0085: a review's 4-line file read as 6 records, one sentence
    in two halves and every later line's id one off. CRLF and CR still end lines."""
    path = tmp_path / "europarl.txt"
    path.write_text("First sentence\nI declare\u2028resumed the session\r\nof the\x85Parliament\rLast one\n",
                    encoding="utf-8", newline="")
    assert [(r.text, r.user_id) for r in load_europarl(path)] == [
        ("First sentence", "line-1"), ("I declare resumed the session", "line-2"),
        ("of the Parliament", "line-3"), ("Last one", "line-4")]


# --- Tables ------------------------------------------------------------------------------------------------------


def test_jsonl_with_and_without_user_id(tmp_path):
    path = write_lines(tmp_path / "d.jsonl", [{"text": "a b", "user_id": "u1", "topic": "x"}, {"text": "c  d"}])
    records = load_table(path)
    assert [(r.text, r.user_id, r.meta) for r in records] == [("a b", "u1", {"topic": "x"}), ("c d", "row-2", {})]


def test_jsonl_bad_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"text": "ok"}\n' * 6 + "oops\n")
    with pytest.raises(CorpusError, match=r"data\.jsonl line 7: not valid JSON"):
        load_table(path)


def test_csv_with_user_id(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('user_id,text,label\nu1,"hello, world",pos\n,second row,neg\n')
    records = load_table(path)
    assert [(r.text, r.user_id, r.meta) for r in records] == [
        ("hello, world", "u1", {"label": "pos"}),
        ("second row", "row-2", {"label": "neg"}),
    ]


def test_a_csv_text_longer_than_the_csv_modules_field_limit_is_read(tmp_path):
    """A 2.6 MB review was refused as "field larger than field limit (131072) ... a quote left open?"."""
    path = tmp_path / "d.csv"
    long = "word " * 60_000  # 300,000 characters
    path.write_text(f'text,label\n"{long}",pos\nshort,neg\n')
    assert [(len(r.text), r.meta["label"]) for r in load_table(path)] == [(len(long.strip()), "pos"), (5, "neg")]


def test_a_quote_left_open_over_many_lines_is_still_refused(tmp_path):
    """With the field limit raised to the file's length, a one-column csv whose quote opened at line 6 and closed at
    line 15,001 loaded 15,000 rows as one text (cut to max_tokens) without a word."""
    path = tmp_path / "d.csv"
    lines = [f"row {i} of a one-column file" for i in range(20_000)]
    lines[5], lines[15_000] = '"' + lines[5], lines[15_000] + '"'
    path.write_text("text\n" + "\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=r"d.csv line 7: field larger than field limit \(131072\)"):
        load_table(path)


def test_csv_without_user_id(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text\nfirst\nsecond\n")
    assert [r.user_id for r in load_table(path)] == ["row-1", "row-2"]


def test_csv_without_text_column(tmp_path):
    path = tmp_path / "notext.csv"
    path.write_text("user_id,body\nu1,hello\n")
    with pytest.raises(CorpusError, match=r"notext\.csv: no 'text' column"):
        load_table(path)


def test_csv_with_a_column_named_twice(tmp_path):
    path = tmp_path / "twice.csv"
    path.write_text("text,user_id,text\nhello there,u1,bye\n")  # the csv module kept the last text column
    with pytest.raises(CorpusError, match=r"twice\.csv line 1: column\(s\) named twice: text"):
        load_table(path)


def test_csv_ragged_row(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("user_id,text\nu1,hi\nu2,hi,extra\n")
    with pytest.raises(CorpusError, match=r"r\.csv line 3"):
        load_table(path)


def test_a_quote_left_open_is_refused_naming_its_line_and_quoted_newlines_still_load(tmp_path):
    """csv lets a quoted field run over lines: a text's stray quote merged the rows up to the next quote into one
    record without a word. A quoted field of several lines that hold no delimiter is still one text."""
    path = tmp_path / "q.csv"
    path.write_text('text,user_id\nfine,u1\n"open quote,u2\nnext,u3\nend",u4\nlast,u5\n')
    with pytest.raises(CorpusError, match=r"q\.csv line 3: a quoted field runs from here to line 5"):
        load_table(path)
    # one column: no delimiter to see, but the quote that closes it is followed by more text (a review: 3 rows)
    path.write_text('text\nok\n"bad\nx\ny\n"z\nw\n')
    with pytest.raises(CorpusError, match=r"q\.csv line 3: ',' expected after '\"' \(in the row starting there"):
        load_table(path)
    # lines ended by CR alone (old Mac files) are counted as lines
    path.write_text('text,user_id\r"a\rb",u1\rok,u2\r"open,u3\rnext,u4\rend",u5\r', newline="")
    with pytest.raises(CorpusError, match=r"q\.csv line 5: a quoted field runs from here to line 7"):
        load_table(path)
    path.write_text('text,user_id\n"a text\nover two lines",u1\n"say ""hi"", then go",u2\n')
    assert [r.text for r in load_table(path)] == ["a text over two lines", 'say "hi", then go']


def test_non_utf8(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"text\nfine\ncaf\xe9\n")
    with pytest.raises(CorpusError, match=r"latin\.csv line 3: not valid UTF-8"):
        load_table(path)


@pytest.mark.parametrize("content", ["", "\n\n", "text\n", "text\n  \n"])
def test_empty_tables(tmp_path, content):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    with pytest.raises(CorpusError, match=r"empty\.csv"):
        load_table(path)


def test_empty_jsonl(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(CorpusError, match=r"empty\.jsonl: file is empty"):
        load_table(path)


# --- Dispatch ----------------------------------------------------------------------------------------------------


def test_load_corpus_dispatch(tmp_path):
    air = write_lines(tmp_path / "train_data.json", DIALOGUES)
    txt = tmp_path / "e.txt"
    txt.write_text("one\ntwo\n")
    table = write_lines(tmp_path / "t.jsonl", [{"text": "x", "user_id": 1}])
    assert load_corpus(DataConfig(corpus=str(air)))[0].user_id == "Jason Lee"
    assert [r.user_id for r in load_corpus(DataConfig(corpus=str(txt)))] == ["line-1", "line-2"]
    assert load_corpus(DataConfig(corpus=str(table)))[0].user_id == "1"
    # An explicit format overrides the extension.
    assert load_corpus(DataConfig(corpus=str(txt), corpus_format="europarl"))[1].text == "two"


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(CorpusError, match=r"corpus file not found: .*nope\.jsonl"):
        load_corpus(DataConfig(corpus=str(missing)))


def test_a_folder_is_named_as_a_folder(tmp_path):
    # it was "cannot tell the format of .../corp from its extension; name it .json ..." (a CLI audit)
    for name in ("corp", "corp.csv"):
        (tmp_path / name).mkdir()
        with pytest.raises(CorpusError, match=f"corpus path is a directory, not a file: .*{name}$"):
            load_corpus(DataConfig(corpus=str(tmp_path / name)))


def test_unknown_extension_names_the_setting_that_reads_it(tmp_path):
    """Europarl's own files are named like europarl-v7.de-en.en; the message said "set corpus_format", which no
    flag sets: it now gives the config file's exact setting, and that setting reads the file."""
    path = tmp_path / "europarl-v7.de-en.en"
    path.write_text("Resumption of the session\nI declare resumed the session\n")
    with pytest.raises(CorpusError, match="cannot tell the format") as err:
        load_corpus(DataConfig(corpus=str(path)))
    setting = json.loads(re.search(r"--config FILE\.json holding (\{.*\}\})", str(err.value)).group(1))
    assert [r.text for r in load_corpus(DataConfig(corpus=str(path), **setting["data"]))] == [
        "Resumption of the session", "I declare resumed the session"]


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "expected the chitchat layout, a JSON object of conversations, got list"),
    ('{"c1": {"messages": [["hi"]]}}', "conversation 'c1' is not in the chitchat layout"),
    ('{"c1": {"turns": []}}', "conversation 'c1' is not in the chitchat layout"),
    ("not json", "not valid JSON (Expecting value)"),
])
def test_a_file_read_in_the_chitchat_layout_that_is_not_is_one_line(tmp_path, content, message):
    """corpus_format chitchat on a user's file: another layout was a raw AttributeError or TypeError traceback,
    and a file that is not JSON an error naming no file (a review)."""
    path = tmp_path / "mine.json"
    path.write_text(content)
    with pytest.raises(CorpusError) as err:
        load_corpus(DataConfig(corpus=str(path), corpus_format="chitchat"))
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value) and "\n" not in str(err.value)


def test_a_misspelt_corpus_name_is_named_as_such():
    # it was "cannot tell the format of chitchatt from its extension"
    with pytest.raises(CorpusError, match="unknown corpus 'chitchatt': neither 'chitchat' nor an existing file"):
        load_corpus(DataConfig(corpus="chitchatt"))


# --- In-process cache --------------------------------------------------------------------------------------------


def test_cache_shares_records_reloads_an_edited_file_and_stays_bounded(tmp_path):
    from core.data import clear_cache, load_prepared, load_records

    path = tmp_path / "t.jsonl"
    rows = [{"text": f"sentence number {i} has quite a few words here", "user_id": i % 20} for i in range(200)]
    write_lines(path, rows)
    sizes = {"private_train": 10, "private_valid": 2, "private_test": 2, "public_train": 5, "public_valid": 2}
    cfg = DataConfig(corpus=str(path), **sizes)
    clear_cache()
    records = load_records(cfg)
    assert load_records(DataConfig(corpus=str(path), min_words=3)) is records  # one load for every size
    before = load_prepared(cfg, 0)
    assert load_prepared(cfg, 0) is before

    write_lines(path, rows[:100])  # edited on disk: a new size, so loaded again rather than served stale
    assert len(load_records(cfg)) == 100
    assert load_prepared(cfg, 0) is not before and load_prepared(cfg, 0).public_pool + \
        load_prepared(cfg, 0).private_pool < before.public_pool + before.private_pool

    # A long-lived process (the dashboard) previews many seeds; the oldest fall out instead of piling up.
    first = load_prepared(cfg, 0)
    for seed in range(1, 20):
        load_prepared(cfg, seed)
    assert load_prepared(cfg, 0) is not first
    assert load_prepared(cfg, 0).private_train == first.private_train  # same data, prepared again
    clear_cache()
