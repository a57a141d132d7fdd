"""Paper-style preparation (SeqPATE App. E) with a USER-level public/private split.

records -> keep those with >= min_words words -> users split into public (volunteers, ~public_fraction of the
sentences) and private -> each side shuffled and cut into valid/test/train. No user is on both sides, so
nothing a private user wrote can reach the public model, the tokenizer or the pseudo data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.config import DataConfig
from core.data.corpora import CHITCHAT, Record, corpus_format, corpus_path, load_corpus

# Overshoot allowed when a user joins the public side, as a share of all sentences: the share lands within about
# this much of public_fraction even though a few users wrote ~20% of chitchat.
SPLIT_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    user_id: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False)  # hash on text + user only: dicts are unhashable

    @property
    def n_words(self) -> int:
        return word_count(self.text)


@dataclass(frozen=True)
class PreparedData:
    public_train: tuple[Sentence, ...]
    public_valid: tuple[Sentence, ...]
    private_train: tuple[Sentence, ...]
    private_valid: tuple[Sentence, ...]
    private_test: tuple[Sentence, ...]
    public_users: frozenset[str]
    private_users: frozenset[str]
    public_pool: int = 0  # sentences available on each side after filtering, before the cut into sizes
    private_pool: int = 0

    @property
    def splits(self) -> dict[str, tuple[Sentence, ...]]:
        return {
            "public_train": self.public_train,
            "public_valid": self.public_valid,
            "private_train": self.private_train,
            "private_valid": self.private_valid,
            "private_test": self.private_test,
        }

    @property
    def sizes(self) -> dict[str, int]:
        return {name: len(s) for name, s in self.splits.items()}

    @property
    def public(self) -> tuple[Sentence, ...]:
        return self.public_train + self.public_valid

    @property
    def private(self) -> tuple[Sentence, ...]:
        return self.private_train + self.private_valid + self.private_test


# ----------------------------------------------------------------------------------------------------------------
# Small pure pieces
# ----------------------------------------------------------------------------------------------------------------


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def word_count(text: str) -> int:
    return len(text.split())


def filter_records(records: Iterable[Record], min_words: int) -> list[Record]:
    """Records with at least min_words whitespace words (token truncation happens later, at tokenisation)."""
    return [r for r in records if word_count(r.text) >= min_words]


def split_prefix(text: str, n_words: int) -> tuple[str, str]:
    """('a b c d', 'e f ...'): the first n words joined by single spaces, and the rest."""
    words = text.split()
    return " ".join(words[:n_words]), " ".join(words[n_words:])


def split_users(
    records: Sequence[Record], public_fraction: float, seed: int, tolerance: float = SPLIT_TOLERANCE
) -> tuple[frozenset[str], frozenset[str]]:
    """(public users, private users): users in seeded random order join the public side until it holds about
    public_fraction of the sentences; a user who would overshoot by more than tolerance (share of all
    sentences) is skipped, so one heavy user cannot push the share far off."""
    counts = Counter(r.user_id for r in records)
    users = sorted(counts)  # sorted first: set/hash order differs between processes
    random.Random(seed).shuffle(users)
    total = sum(counts.values())
    # At least one sentence of slack, so that a tiny corpus of one-sentence users still gets a public side.
    target, slack = public_fraction * total, max(tolerance * total, 1.0)
    public: set[str] = set()
    size = 0
    for user in users:
        if size >= target:
            break
        if size + counts[user] <= target + slack:
            public.add(user)
            size += counts[user]
    return frozenset(public), frozenset(users) - public


def _shuffled(records: Iterable[Record], seed: int, side: str) -> list[Sentence]:
    sentences = [Sentence(r.text, r.user_id, r.meta) for r in records]
    random.Random(f"{seed}:{side}").shuffle(sentences)  # str seeds are hashed with sha512: stable everywhere
    return sentences


def smaller_sizes(sizes: list[tuple[str, int | None]], available: int) -> dict[str, int]:
    """The fixed sizes scaled down in proportion to fit `available` sentences, each at least 1, leaving a fifth
    for a slot that takes the rest (None); {} where even that does not fit."""
    fixed = {name: n for name, n in sizes if n is not None}
    rest = len(fixed) < len(sizes)
    if sum(fixed.values()) == 0:  # nothing fixed to scale down: only the rest is short (an empty side)
        return {}
    budget = available * (0.8 if rest else 1.0)
    smaller = {name: max(1, int(n * budget / sum(fixed.values()))) for name, n in fixed.items()}
    return smaller if sum(smaller.values()) + rest <= available else {}


def _shortfall(side: str, sentences: list[Sentence], sizes: list[tuple[str, int | None]],
               n_users: int) -> tuple[str, dict[str, int]] | None:
    """Where a side holds fewer sentences than its fixed sizes ask for: what is wrong, and smaller sizes that fit
    ({} where even one sentence a split does not). None where they fit."""
    asked = sum(n for _, n in sizes if n is not None)
    rest = [name for name, n in sizes if n is None]  # a split that takes the rest needs one sentence at least
    if asked + len(rest) <= len(sentences):
        return None
    wanted = " + ".join([f"{side}_{name} {n}" for name, n in sizes if n is not None]
                        + [f"{side}_{name} at least 1" for name in rest])
    asked += len(rest)
    smaller = {f"{side}_{name}": n for name, n in smaller_sizes(sizes, len(sentences)).items()}
    return (f"the {side} side has only {plural(len(sentences), 'sentence')} ({plural(n_users, 'user')}) but "
            f"{wanted} = {asked} were asked for", smaller)


def check_sizes(shortfalls: list[tuple[str, dict[str, int]] | None]) -> None:
    """Refuse sizes a side cannot fill, naming every side short of sentences at once, with one config of sizes
    that fit all of them (one side's at a time sent the user round in a loop: fixing the public side's sizes
    with the first message's config brought back the private side's refusal, and the reverse)."""
    short = [s for s in shortfalls if s is not None]
    if not short:
        return
    message = "; ".join(text for text, _ in short)
    if all(smaller for _, smaller in short):  # the sizes are the preset's: a smaller corpus sets its own
        sizes = {name: n for _, smaller in short for name, n in smaller.items()}
        message += "; a smaller corpus sets smaller sizes with --config FILE.json holding " + json.dumps({"data": sizes})
    else:
        message += "; too few to give each split at least one sentence: the corpus is too small for this bench"
    raise ValueError(message)


def _cut(side: str, sentences: list[Sentence], sizes: list[tuple[str, int | None]]) -> dict[str, tuple[Sentence, ...]]:
    """Consecutive slices in the order given (sizes that fit: check_sizes); None takes all that is left (and must
    leave something)."""
    out, start = {}, 0
    for name, n in sizes:
        stop = len(sentences) if n is None else start + n
        if n is None and stop == start:
            raise ValueError(f"the {side} side has no sentences left for {side}_{name} ({len(sentences)} in all)")
        out[name], start = tuple(sentences[start:stop]), stop
    return out


# ----------------------------------------------------------------------------------------------------------------
# The pipeline
# ----------------------------------------------------------------------------------------------------------------


def prepare(records: Sequence[Record], cfg: DataConfig, seed: int) -> PreparedData:
    """Filter, split by user, shuffle each side and cut into the sizes of cfg; deterministic in (records, cfg, seed)."""
    kept = filter_records(records, cfg.min_words)
    if not kept:
        raise ValueError(f"no sentence has {cfg.min_words} or more words ({len(records)} records)")
    public_users, private_users = split_users(kept, cfg.public_fraction, seed)
    public = _shuffled((r for r in kept if r.user_id in public_users), seed, "public")
    private = _shuffled((r for r in kept if r.user_id in private_users), seed, "private")
    # Held-out splits first, so that growing a train size never changes the valid/test sentences.
    public_sizes = [("valid", cfg.public_valid), ("train", cfg.public_train)]
    private_sizes = [("valid", cfg.private_valid), ("test", cfg.private_test), ("train", cfg.private_train)]
    check_sizes([_shortfall("public", public, public_sizes, len(public_users)),
                 _shortfall("private", private, private_sizes, len(private_users))])
    pub, pri = _cut("public", public, public_sizes), _cut("private", private, private_sizes)
    return PreparedData(
        public_train=pub["train"],
        public_valid=pub["valid"],
        private_train=pri["train"],
        private_valid=pri["valid"],
        private_test=pri["test"],
        public_users=public_users,
        private_users=private_users,
        public_pool=len(public),
        private_pool=len(private),
    )


# In-process caches: loading chitchat takes ~1-2 s, preparing it well under a second more. Bounded, since the dashboard
# is a long-lived process that prepares data for every (sizes, seed) a user previews; a few entries cover one run.
_CACHE_ENTRIES = 8


def _source_key(cfg: DataConfig) -> tuple:
    """Identifies the corpus on disk, so that an edited file is loaded again rather than served stale."""
    fmt = corpus_format(cfg)
    path = corpus_path(cfg)
    try:
        stat = path.stat()
    except OSError:
        return (cfg.corpus, fmt)  # load_corpus will raise the clear "not found" error
    return (cfg.corpus, fmt, stat.st_mtime_ns, stat.st_size)


# sha256 of the dataset.json that chitchat-dataset 0.3 to 0.9 bundle (pyproject admits >= 0.3)
BUNDLED_CHITCHAT_SHA256 = "d2a5d0bf6acf354fef51f3af39cbece2220d3b8f6086b658c3d335105798312a"


def corpus_digest(cfg: DataConfig) -> str | None:
    """sha256 of a corpus file's bytes (None for a file that cannot be read): what the public base model's cache
    key needs, as an edited file can move users between the public and private sides. The built-in chitchat gives
    None while it is the file every admitted release bundled (the key it always had), its digest once a release
    ships another file: a base cached on the old split could have trained on users the new one makes private."""
    path = corpus_path(cfg)
    try:
        stat = path.stat()
        digest = _file_sha256(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return None  # load_corpus raises the clear error
    return None if cfg.corpus == CHITCHAT and digest == BUNDLED_CHITCHAT_SHA256 else digest


@functools.lru_cache(maxsize=_CACHE_ENTRIES)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:  # mtime and size: read again once the file changes
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


@functools.lru_cache(maxsize=_CACHE_ENTRIES)
def _cached_records(corpus: str, corpus_format: str, source_key: tuple) -> list[Record]:
    return load_corpus(DataConfig(corpus=corpus, corpus_format=corpus_format))  # reads only these two fields


def load_records(cfg: DataConfig) -> list[Record]:
    """load_corpus with an in-process cache shared by every size and seed; do not mutate the returned list."""
    return _cached_records(cfg.corpus, cfg.corpus_format, _source_key(cfg))


@functools.lru_cache(maxsize=_CACHE_ENTRIES)
def _cached_prepared(cfg: DataConfig, seed: int, source_key: tuple) -> PreparedData:
    from core.data.secrets import insert_canaries  # secrets imports prepare lazily, so import it here

    records = load_records(cfg)
    try:
        prepared = prepare(records, cfg, seed)
    except ValueError as exc:  # a file too small for the sizes asked: name the file, as load_corpus's errors do
        if cfg.corpus == CHITCHAT:
            raise
        raise ValueError(f"{cfg.corpus}: {exc}") from None
    return insert_canaries(prepared, cfg.canaries, cfg.canary_seed, cfg.canary_digits)


def load_prepared(cfg: DataConfig, seed: int) -> PreparedData:
    """prepare(load_records(cfg), cfg, seed) with the configured canaries, cached in this process."""
    return _cached_prepared(cfg, seed, _source_key(cfg))


def clear_cache() -> None:
    _cached_records.cache_clear()
    _file_sha256.cache_clear()
    _cached_prepared.cache_clear()


# ----------------------------------------------------------------------------------------------------------------
# Statistics (JSON-able)
# ----------------------------------------------------------------------------------------------------------------


def corpus_stats(records: Sequence[Record], min_words: int = 8) -> dict[str, int]:
    """Before any split: distinct users, records, and records with at least min_words words."""
    return {
        "users": len({r.user_id for r in records}),
        "records": len(records),
        "records_min_words": sum(word_count(r.text) >= min_words for r in records),
    }


def _side_stats(users: frozenset[str], pool: int, splits: dict[str, tuple[Sentence, ...]]) -> dict[str, Any]:
    chosen = [s for split in splits.values() for s in split]
    return {
        "users": len(users),  # users assigned to this side
        "users_in_splits": len({s.user_id for s in chosen}),  # of those, users with a chosen sentence
        "pool": pool,  # sentences available on this side
        "sentences": len(chosen),
        "words": sum(s.n_words for s in chosen),
        "splits": {name: len(split) for name, split in splits.items()},
    }


def data_stats(prepared: PreparedData) -> dict[str, Any]:
    p = prepared
    public_ids = {s.user_id for s in p.public} | p.public_users
    private_ids = {s.user_id for s in p.private} | p.private_users
    pool = p.public_pool + p.private_pool
    return {
        "public": _side_stats(p.public_users, p.public_pool, {"train": p.public_train, "valid": p.public_valid}),
        "private": _side_stats(
            p.private_users,
            p.private_pool,
            {"train": p.private_train, "valid": p.private_valid, "test": p.private_test},
        ),
        "public_share": p.public_pool / pool if pool else 0.0,  # of the filtered sentences, before the cut
        "disjoint_users": public_ids.isdisjoint(private_ids),
    }
