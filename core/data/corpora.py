"""Corpus loaders: every format becomes a list of `Record(text, user_id, meta)`.

The user id is what the user-level public/private split works on, so each loader says who "owns" a record:
chitchat: the sender; AirDialog: the customer of the dialogue; Europarl: nobody (one pseudo-user per line);
tables: the `user_id` column, else one pseudo-user per row.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from core.config import DataConfig

CHITCHAT = "chitchat"
FORMATS = ("auto", "chitchat", "airdialog", "europarl", "table")
_EXTENSIONS = {".json": "airdialog", ".txt": "europarl", ".jsonl": "table", ".csv": "table"}
_SPEAKERS = ("customer", "agent")


class CorpusError(ValueError):
    """A corpus file the loaders refuse; the message is one line naming the file (and line where known)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One utterance or sentence with the id of the user whose data it is; meta stays JSON-able."""

    text: str
    user_id: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False)  # hash on text + user only: dicts are unhashable


def normalise(text: str) -> str:
    """Collapse runs of whitespace (tabs, newlines, double spaces) into single spaces."""
    return " ".join(text.split())


# ----------------------------------------------------------------------------------------------------------------
# Reading files
# ----------------------------------------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """Whole file as text; bad UTF-8 becomes a CorpusError naming the line (1-based)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"corpus file not found: {path}") from None
    except IsADirectoryError:
        raise CorpusError(f"corpus path is a directory, not a file: {path}") from None
    try:
        return data.decode("utf-8-sig")  # -sig: tolerate the BOM that spreadsheet tools write
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise CorpusError(f"{path} line {line}: not valid UTF-8 (byte 0x{data[e.start]:02x})") from None


def text_lines(text: str) -> list[str]:
    """A text's lines, ended by "\n", "\r\n" or "\r" and nothing else (str.splitlines also ends one at U+2028,
    U+2029, U+0085 and a few control characters, which a sentence may hold)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def json_lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line of a JSON-lines file. Lines end at "\n", "\r\n" or
    "\r" (JSON escapes both inside a string) and nowhere else: str.splitlines also splits at U+2028, U+2029 and
    U+0085, which json.dumps(ensure_ascii=False) leaves raw inside a string: splitting there would refuse a valid
    file as "Unterminated string"."""
    lines = text_lines(text)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as e:  # JSONDecodeError, or an integer of more than 4300 digits
            raise CorpusError(f"{path} line {number}: not valid JSON ({getattr(e, 'msg', e)})") from None
        except RecursionError:  # e.g. thousands of nested brackets
            raise CorpusError(f"{path} line {number}: JSON nested too deeply") from None


# ----------------------------------------------------------------------------------------------------------------
# Chitchat (bundled with the chitchat-dataset package)
# ----------------------------------------------------------------------------------------------------------------


def chitchat_path() -> Path:
    return Path(str(resources.files("chitchat_dataset") / "dataset.json"))


def load_chitchat(path: Path | None = None) -> list[Record]:
    """One record per utterance (a message is a run of utterances by one sender); blank utterances dropped.

    Layout of dataset.json: {conversation_id: {"prompt": str (sometimes missing or empty), "start", "ratings",
    "messages": [[{"text", "timestamp", "sender"}, ...], ...]}}.
    """
    path = path or chitchat_path()
    try:
        data = json.loads(read_text(path))
    except ValueError as e:  # a user's file named as chitchat-format (corpus_format chitchat)
        raise CorpusError(f"{path}: not valid JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected the chitchat layout, a JSON object of conversations, got "
                          f"{type(data).__name__}")
    records = []
    conversation = None
    try:
        for conversation, conv in data.items():
            meta = {"conversation": conversation, "prompt": conv.get("prompt") or ""}
            for message in conv["messages"]:
                for utterance in message:
                    text = normalise(utterance["text"])
                    if text:
                        # The meta dict is shared by a conversation's records (saves ~40 MB); treat it as read-only.
                        records.append(Record(text, str(utterance["sender"]), meta))
    except (KeyError, TypeError, AttributeError) as e:  # a file of another layout: one line, not a traceback
        raise CorpusError(f"{path}: conversation {conversation!r} is not in the chitchat layout ({{\"messages\": "
                          f"[[{{\"text\", \"sender\"}}, ...], ...]}}): {type(e).__name__}: {e}") from None
    return records


# ----------------------------------------------------------------------------------------------------------------
# AirDialog (train_data.json / dev_data.json: one JSON object per line, or a JSON list)
# ----------------------------------------------------------------------------------------------------------------


def split_speaker(utterance: str) -> tuple[str, str]:
    """'customer: Hi.' -> ('customer', 'Hi.'); an untagged utterance gets speaker 'unknown'."""
    tag, sep, rest = utterance.partition(":")
    if sep and tag.strip().lower() in _SPEAKERS:
        return tag.strip().lower(), normalise(rest)
    return "unknown", normalise(utterance)


def _airdialog_entries(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """(where, dialogue object) pairs; `where` is 'line N' for JSON lines and 'item N' for a JSON list."""
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path} line {e.lineno}: not valid JSON ({e.msg})") from None
        except ValueError as e:  # an integer of more than 4300 digits
            raise CorpusError(f"{path}: not valid JSON ({e})") from None
        except RecursionError:
            raise CorpusError(f"{path}: JSON nested too deeply") from None
        for i, item in enumerate(items):
            yield f"item {i}", item
    else:
        for number, item in json_lines(path, text):
            yield f"line {number}", item


def _airdialog_dialogue(path: Path, where: str, item: Any) -> tuple[str, list[str]]:
    """(customer name, utterances) of one dialogue, or a CorpusError saying what is wrong with it."""
    if not isinstance(item, dict) or not isinstance(item.get("dialogue"), list):
        raise CorpusError(f"{path} {where}: expected an object with a 'dialogue' list")
    intent = item.get("intent")
    name = intent.get("name") if isinstance(intent, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise CorpusError(f"{path} {where}: no customer name in intent['name']")
    if not all(isinstance(u, str) for u in item["dialogue"]):
        raise CorpusError(f"{path} {where}: every utterance of 'dialogue' must be a string")
    return normalise(name), item["dialogue"]


def load_airdialog(path: str | Path) -> list[Record]:
    """One record per utterance; the whole dialogue (agent turns too) belongs to its customer."""
    path = Path(path)
    records = []
    for index, (where, item) in enumerate(_airdialog_entries(path, read_text(path))):
        name, dialogue = _airdialog_dialogue(path, where, item)
        for utterance in dialogue:
            speaker, text = split_speaker(utterance)
            if text:
                records.append(Record(text, name, {"dialogue": index, "speaker": speaker, "name": name}))
    if not records:
        raise CorpusError(f"{path}: no dialogues with utterances")
    return records


# ----------------------------------------------------------------------------------------------------------------
# Europarl (plain text, one sentence a line, no user ids)
# ----------------------------------------------------------------------------------------------------------------


def load_europarl(path: str | Path) -> list[Record]:
    """One record per non-blank line; user_id 'line-N' (N = line number) so a user split is a sentence split."""
    path = Path(path)
    records = []
    # a line of the file is a sentence (not str.splitlines: one holding U+2028 would be two, every later id one off)
    for number, line in enumerate(text_lines(read_text(path)), start=1):
        text = normalise(line)
        if text:
            records.append(Record(text, f"line-{number}", {"line": number}))
    if not records:
        raise CorpusError(f"{path}: no non-blank lines")
    return records


# ----------------------------------------------------------------------------------------------------------------
# Tables (.jsonl or .csv with a `text` column and an optional `user_id`)
# ----------------------------------------------------------------------------------------------------------------


def _table_record(row: dict[str, Any], n: int) -> Record | None:
    """Record for data row n (1-based); None for a blank text. Extra columns go to meta."""
    text = normalise(str(row["text"]))
    if not text:
        return None
    user = row.get("user_id")
    user_id = str(user).strip() if user is not None and str(user).strip() else f"row-{n}"
    meta = {k: v for k, v in row.items() if k not in ("text", "user_id")}
    return Record(text, user_id, meta)


def _jsonl_rows(path: Path, text: str) -> Iterator[dict[str, Any]]:
    for number, row in json_lines(path, text):
        if not isinstance(row, dict):
            raise CorpusError(f"{path} line {number}: expected a JSON object, got {type(row).__name__}")
        if not isinstance(row.get("text"), str):
            raise CorpusError(f"{path} line {number}: no 'text' string field")
        yield row


def check_csv_header(path: Path, header: list[str]) -> None:
    """A csv header names each column once: with text,user_id,text the csv module keeps the last text column."""
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise CorpusError(f"{path} line 1: column(s) named twice: {', '.join(repr(n)[1:-1] for n in repeated)}")


CSV_FIELD_LIMIT = 131_072  # the csv module's own


def shorten(text: str, limit: int = 60) -> str:
    """text cut to `limit` characters, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def csv_header(path: Path, reader: csv.DictReader, required: Sequence[str]) -> list[str]:
    """The header of a csv file being read, refused (one line) if a required column is missing or a name is
    repeated (check_csv_header)."""
    try:
        header = reader.fieldnames or []
    except csv.Error as e:  # e.g. a header cell over the csv module's field size limit
        raise CorpusError(f"{path} line 1: {e}") from None
    missing = [c for c in required if c not in header]
    if missing:
        # repr() of each name: a header cell may hold a newline, and the message must stay one line (and short: a
        # file without a header row has a text as its first "column name")
        columns = ", ".join(shorten(repr(h)[1:-1]) for h in header)
        raise CorpusError(f"{path}: no {' or '.join(repr(c) for c in missing)} column "
                          f"(columns: {columns or 'none'})")
    check_csv_header(path, header)
    return header


def csv_rows(path: Path, text: str, required: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line the row starts on, row) of a csv text with a header naming the `required` columns.

    A text's stray `"` opens a quoted field that silently swallows the rows up to the next quote into one example
    under one label. Refused in one line, naming where the row starts: a
    ragged row; a closing quote followed by more text (strict csv); and a quoted field over several lines holding
    the delimiter. A quote left open over lines without one (a one-column file) still reads as a text of several
    lines: that is what csv allows."""
    # csv's field limit (131,072 characters) would refuse one long text as "a quote left open?"; raised to this
    # file's longest line only, it still refuses a field that runs over many lines (a quote left open in a
    # one-column file), which a limit of the file's length would swallow into one text
    csv.field_size_limit(max(CSV_FIELD_LIMIT, max(map(len, text.replace("\r", "\n").split("\n"))) + 1))
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    header = csv_header(path, reader, required=required)
    end = reader.line_num  # the line the previous row ended on
    try:
        for row in reader:
            values = [v for v in row.values() if isinstance(v, str)]
            # lines inside fields, as text_lines ends them; a field's last line end is its row's where a quote
            # left open ran to the end of the file
            inner = [text_lines(v.rstrip("\r\n")) for v in values]
            start = reader.line_num - sum(len(lines) - 1 for lines in inner)
            if any("," in line for lines in inner for line in lines[1:]):
                raise CorpusError(f"{path} line {start}: a quoted field runs from here to line {reader.line_num} "
                                  "over lines that read as rows of their own: a quote left open? (a text's own "
                                  '" is written doubled, inside quotes: "say ""hi"""; a text that spans lines goes '
                                  "on one line, or in a .jsonl file)")
            if None in row or any(v is None for v in row.values()):  # DictReader's marks of a ragged row
                raise CorpusError(f"{path} line {start}: expected {len(header)} fields")
            end = reader.line_num
            yield start, row
    except csv.Error as e:
        raise CorpusError(f"{path} line {end + 1}: {e} (in the row starting there; a quote left open?)") from None


def load_table(path: str | Path) -> list[Record]:
    """.jsonl (one object a line) or .csv (header row); rows with blank text are skipped."""
    path = Path(path)
    text = read_text(path)
    if not text.strip():
        raise CorpusError(f"{path}: file is empty")
    # a table not named .csv is read as JSON lines (corpus_format table on a file of another name)
    rows = ((row for _, row in csv_rows(path, text, required=("text",))) if path.suffix.lower() == ".csv"
            else _jsonl_rows(path, text))
    records = [r for n, row in enumerate(rows, start=1) if (r := _table_record(row, n)) is not None]
    if not records:
        raise CorpusError(f"{path}: no rows with non-blank text")
    return records


# ----------------------------------------------------------------------------------------------------------------
# Dispatch
# ----------------------------------------------------------------------------------------------------------------


def corpus_format(cfg: DataConfig) -> str:
    """The concrete format a DataConfig names: 'auto' resolves by name ('chitchat') or file extension."""
    fmt = cfg.corpus_format
    if fmt not in FORMATS:
        raise CorpusError(f"unknown corpus format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    if cfg.corpus == CHITCHAT:
        return "chitchat"
    suffix = Path(cfg.corpus).suffix.lower()
    if Path(cfg.corpus).expanduser().is_dir():  # it was told to rename the folder's extension
        raise CorpusError(f"corpus path is a directory, not a file: {cfg.corpus}")
    if not suffix and not Path(cfg.corpus).exists():  # a misspelt name (chitchatt) rather than a file
        raise CorpusError(f"unknown corpus {cfg.corpus!r}: neither {CHITCHAT!r} nor an existing file")
    if suffix not in _EXTENSIONS:
        # Europarl's own files are named like europarl-v7.de-en.en: the message names the setting's exact form
        raise CorpusError(
            f"cannot tell the format of {cfg.corpus} from its extension; name it .json (AirDialog), .txt "
            f"(Europarl), .jsonl or .csv (table), or give --config FILE.json holding "
            f'{{"data": {{"corpus_format": "europarl"}}}} (or airdialog, chitchat, table)'
        )
    return _EXTENSIONS[suffix]


def corpus_path(cfg: DataConfig) -> Path:
    """The file a DataConfig's corpus names: chitchat's bundled dataset.json, or the user's file."""
    return chitchat_path() if cfg.corpus == CHITCHAT else Path(cfg.corpus).expanduser()


def load_corpus(cfg: DataConfig) -> list[Record]:
    fmt = corpus_format(cfg)
    if fmt == "chitchat" and cfg.corpus == CHITCHAT:
        return load_chitchat()
    path = corpus_path(cfg)
    if not path.is_file():
        raise CorpusError(f"corpus file not found: {path}")
    loaders = {"chitchat": load_chitchat, "airdialog": load_airdialog, "europarl": load_europarl, "table": load_table}
    return loaders[fmt](path)
