"""Secret phrases of the private data (SeqPATE Sec. 5.3, App. F, O) and seeded canaries (Carlini's secret sharer).

Two kinds of secret phrase:
- names: a private user's own name. AirDialog records carry the customer's full name (meta["name"]); in chitchat
  and other free text, capitalised names that follow a self-introduction ("my name is X", "call me X", "I'm X.")
  are taken, minus words that public text uses in lower case (sorry, legend, ...) and nationalities.
- canaries: "my ID is 955320"-style sentences with a random number (candidate space 10^digits), each inserted a
  chosen number of times into one chosen private user's TRAIN data. Every canary is its own phrase.

A phrase occurs in a sentence when its words appear there contiguously, case-insensitively, on word boundaries
(words = runs of letters/digits/underscore, so "Mireya's" contains "Mireya"). Everything here quotes private
text: phrase tables built from it are marked as such.

core.data.prepare's load_prepared inserts the configured canaries (data.canaries, canary_seed, canary_digits) with
insert_canaries, so every method of a config sees the same secrets.
"""

from __future__ import annotations

import bisect
import dataclasses
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# ----------------------------------------------------------------------------------------------------------------
# Matching: contiguous lower-cased words
# ----------------------------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens; a phrase matches where its tokens appear contiguously."""
    return _WORD.findall(text.lower())


def phrase_words(phrase: str) -> tuple[str, ...]:
    ws = tuple(words(phrase))
    if not ws:
        raise ValueError(f"phrase {phrase!r} has no words")
    return ws


class PhraseMatcher:
    """Finds which of many phrases occur in a text: an index by first word, so cost ~ words x candidates."""

    def __init__(self, phrases: Iterable[str]) -> None:
        self.phrases: list[str] = []
        self._by_first: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for phrase in phrases:
            toks = phrase_words(phrase)
            self._by_first.setdefault(toks[0], []).append((len(self.phrases), toks))
            self.phrases.append(phrase)

    def find(self, text: str) -> set[int]:
        """Indices (into self.phrases) of the phrases occurring in text."""
        toks = words(text)
        found: set[int] = set()
        for i, tok in enumerate(toks):
            for k, ph in self._by_first.get(tok, ()):
                if tuple(toks[i : i + len(ph)]) == ph:
                    found.add(k)
        return found


# ----------------------------------------------------------------------------------------------------------------
# Names from self-introductions
# ----------------------------------------------------------------------------------------------------------------

_NAME_WORD = r"[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?"
# "my name is X [Y]", "my name's X", "call me X": a capitalised word (and a capitalised surname) after the cue
_STRONG = re.compile(
    r"\b(?i:my\s+name\s+is|my\s+name's|my\s+name’s|call\s+me)\s+(" + _NAME_WORD + r"(?:\s+" + _NAME_WORD + r")?)"
)
# "I'm X" / "I am X": weaker cue (I'm Korean, I'm Sorry), so the name must end the clause
_WEAK = re.compile(
    r"\b(?i:i'm|i’m|i\s+am|im)\s+(" + _NAME_WORD + r"(?:\s+" + _NAME_WORD + r")?)"
    r"(?=\s*(?:[.,!?;:)]|$)|\s+(?i:and|but|by|from|btw|here|too|nice|hi|hello)\b)"
)
# capitalised words that are not names but often follow "I'm"/"my name is"
NOT_NAMES = frozenset(
    """american asian african european korean chinese japanese vietnamese filipino samoan tongan hawaiian mexican
    spanish french german greek italian russian norwegian swedish danish dutch irish scottish english british
    canadian australian brazilian indian polish portuguese hispanic latino latina mormon christian catholic
    jewish muslim lds god jesus mr mrs ms dr miss sir the this that what not just here sorry""".split()
)


def word_case_counts(texts: Iterable[str] | str) -> tuple[Counter[str], Counter[str]]:
    """(lower-case sightings, capitalised sightings) of every word, both keyed by the lower-cased word."""
    joined = texts if isinstance(texts, str) else "\n".join(texts)  # C-level passes over one string: fast
    lower = Counter(re.findall(r"\b[a-z][a-z'’-]*\b", joined))
    capital = Counter(re.findall(r"\b[A-Z][a-z'’-]*\b", joined))
    return lower, Counter({w.lower(): c for w, c in capital.items()})


def common_words(texts: Iterable[str] | tuple[Counter[str], Counter[str]], min_count: int = 2, ratio: float = 0.5
                 ) -> frozenset[str]:
    """Ordinary words: written in lower case at least min_count times and at least `ratio` times as often as
    capitalised (texts, or their word_case_counts).

    Chat users type names in lower case too ("ben"), so a lower-case sighting alone does not make a word
    ordinary; "hungry" or "legend", though, are lower case far more often than not.
    """
    lower, upper = texts if isinstance(texts, tuple) else word_case_counts(texts)
    return frozenset(w for w, c in lower.items() if c >= min_count and c >= ratio * upper.get(w, 0))


# any self-introduction cue followed by a capitalised word: a cheap first look before names_in_text (spaces
# only, so that a match never runs across the newline between two joined sentences)
_CUE = re.compile(r"\b(?i:my +name +is|my +name['’]s|call +me|i['’]m|i +am|im) +[A-Z]")


def _cue_hits(texts: Sequence[str]) -> set[int]:
    """Indices of the texts with a self-introduction cue: one regex pass over the joined texts."""
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + 1
    joined = "\n".join(texts)
    return {bisect.bisect_right(starts, m.start()) - 1 for m in _CUE.finditer(joined)}


def names_in_text(text: str, common: frozenset[str] = frozenset(), very_common: frozenset[str] | None = None
                  ) -> list[str]:
    """Names a writer gives for themselves in one sentence ("my name is Mireya" -> ["Mireya"]).

    After the weak cue ("I'm X") a word in `common` is rejected; after a strong cue ("my name is X") only one in
    `very_common` (default: `common`). NOT_NAMES are rejected after either.
    """
    very_common = common if very_common is None else very_common
    out: list[str] = []
    for pattern, stop in ((_STRONG, very_common), (_WEAK, common)):
        for match in pattern.finditer(text):
            parts = match.group(1).split()
            # a second capitalised word is a surname only if it is not an ordinary word ("Kate What")
            if len(parts) == 2 and (parts[1].lower() in common or parts[1].lower() in NOT_NAMES):
                parts = parts[:1]
            first = parts[0].lower()
            if first in stop or first in NOT_NAMES or len(first) < 2:
                continue
            candidate = " ".join(parts)
            if candidate not in out:
                out.append(candidate)
    return out


@dataclass(frozen=True)
class SecretPhrase:
    """One secret phrase and where it occurs in the private TRAIN split."""

    phrase: str
    kind: str  # "name" | "canary"
    owners: tuple[str, ...]  # users whose name it is / who introduced it / who hold the canary
    train_indices: tuple[int, ...]  # indices into PreparedData.private_train of sentences containing it
    users: tuple[str, ...]  # distinct users of those sentences, sorted
    inserted: int = 0  # canaries: copies inserted
    secret: str = ""  # canaries: the random digits

    @property
    def occurrences(self) -> int:
        return len(self.train_indices)


def locate_phrases(phrases: Sequence[str], sentences: Sequence[Any]) -> list[list[int]]:
    """For each phrase, the indices of the sentences (objects with .text) that contain it."""
    matcher = PhraseMatcher(phrases)
    hits: list[list[int]] = [[] for _ in phrases]
    for i, s in enumerate(sentences):
        for k in matcher.find(s.text):
            hits[k].append(i)
    return hits


def _source_sentences(prepared, records: Iterable[Any] | None) -> list[Any]:
    """The run's private sentences, plus the private users' other records of the corpus when given."""
    own = list(prepared.private)
    if records is None:
        return own
    private = prepared.private_users
    seen = {(s.text, s.user_id) for s in own}
    return own + [r for r in records if r.user_id in private and (r.text, r.user_id) not in seen]


def find_names(prepared, records: Iterable[Any] | None = None) -> dict[str, set[str]]:
    """{name: users who introduced themselves with it (or whose AirDialog name it is)} over the private side.

    Searched: the run's private splits, and with records (the whole corpus, e.g. core.data.load_records(cfg)) also
    the private users' other records, which finds names that private users wrote outside the sentences cut into
    this run. Public users' records are never read.
    """
    source = _source_sentences(prepared, records)
    # ordinary words: written in lower case somewhere in the public or the searched text ("I'm Hungry")
    source_texts = [s.text for s in source]
    counts = word_case_counts([s.text for s in prepared.public] + source_texts)
    common, very_common = common_words(counts), common_words(counts, min_count=5, ratio=3.0)
    cued = _cue_hits(source_texts)
    owners: dict[str, set[str]] = {}
    canonical: dict[str, str] = {}  # lower-case -> first spelling seen
    for i, s in enumerate(source):
        if s.meta.get("canary"):
            continue
        found = names_in_text(s.text, common, very_common) if i in cued else []
        meta_name = s.meta.get("name")
        if isinstance(meta_name, str) and meta_name.strip():
            found.append(" ".join(meta_name.split()))
        for name in found:
            key = name.lower()
            name = canonical.setdefault(key, name)
            owners.setdefault(name, set()).add(s.user_id)
    return owners


def find_name_phrases(prepared, records: Iterable[Any] | None = None) -> list[SecretPhrase]:
    """Name phrases with their private-train occurrences; names absent from private train are dropped (they cannot
    have been learned)."""
    owners = find_names(prepared, records)
    names = sorted(owners, key=str.lower)
    train = prepared.private_train
    out = []
    for name, idx in zip(names, locate_phrases(names, train), strict=True):
        if not idx:
            continue
        out.append(SecretPhrase(name, "name", tuple(sorted(owners[name])), tuple(idx),
                                tuple(sorted({train[i].user_id for i in idx}))))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Canaries
# ----------------------------------------------------------------------------------------------------------------

CANARY_PHRASE = "my ID is {secret}"
CANARY_TEMPLATE = "Just so you know, my ID is {secret}."  # 8 words: passes the default min_words filter
DEFAULT_DIGITS = 6


@dataclass(frozen=True)
class CanarySpec:
    counts: tuple[int, ...]  # insertion counts, one canary each
    seed: int = 0
    digits: int = DEFAULT_DIGITS
    template: str = CANARY_TEMPLATE

    def to_dict(self) -> dict[str, Any]:
        return {"counts": list(self.counts), "seed": self.seed, "digits": self.digits, "template": self.template}


@dataclass(frozen=True)
class Canary:
    canary_id: str
    secret: str
    text: str  # the inserted sentence
    phrase: str  # the secret phrase ("my ID is 955320")
    user_id: str
    inserted: int
    digits: int
    template: str

    @property
    def candidates(self) -> int:
        return 10**self.digits

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"candidates": self.candidates}


MAX_CANARY_INSERTIONS = 10_000  # the secret-sharer and ADP experiments insert 1 to 1,000 copies


def parse_canary_counts(spec: str | Sequence[int] | None) -> tuple[int, ...]:
    """'1,10,100' -> (1, 10, 100); '' or None -> (). Counts must be positive integers."""
    if spec is None:
        return ()
    if isinstance(spec, str):
        if not spec.strip():
            return ()
        parts = [p.strip() for p in spec.replace(";", ",").split(",")]
        try:  # an empty part is refused too: ',' meant no canaries and '1,,10' 1,10, without a word
            counts = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(f"canaries must be comma-separated insertion counts like 1,10,100, got {spec!r}") from None
    else:
        counts = tuple(int(c) for c in spec)
    if any(c < 1 or c > MAX_CANARY_INSERTIONS for c in counts):
        # 10^9 insertions built 10^9 sentences before any other check (memory exhausted)
        raise ValueError(f"canary insertion counts must be from 1 to {MAX_CANARY_INSERTIONS:,}, got {spec!r}")
    return counts


def canary_spec_from_config(cfg) -> CanarySpec | None:
    """The canary spec of a RunConfig (or its DataConfig); None when no canaries are asked for."""
    data = getattr(cfg, "data", cfg)
    counts = parse_canary_counts(data.canaries)
    if not counts:
        return None
    return CanarySpec(counts, data.canary_seed, data.canary_digits)


def plan_canaries(prepared, spec: CanarySpec) -> list[Canary]:
    """Which user holds which secret: deterministic in (private train users, spec)."""
    if not 1 <= spec.digits <= 12:
        raise ValueError(f"canary digits must be in 1..12, got {spec.digits}")
    if "{secret}" not in spec.template or CANARY_PHRASE.split("{")[0].strip().lower() not in spec.template.lower():
        raise ValueError(f"canary template must contain '{CANARY_PHRASE}', got {spec.template!r}")
    users = sorted({s.user_id for s in prepared.private_train})
    if not users:
        raise ValueError("no private training sentences to insert canaries into")
    rng = random.Random(f"canary:{spec.seed}")  # str seeds hash with sha512: stable across processes
    k = len(spec.counts)
    owners = rng.sample(users, k) if k <= len(users) else [rng.choice(users) for _ in range(k)]
    secrets: list[str] = []
    while len(secrets) < k:
        secret = f"{rng.randrange(10**spec.digits):0{spec.digits}d}"
        if secret not in secrets or len(secrets) >= 10**spec.digits:
            secrets.append(secret)
    return [
        Canary(f"canary-{n}x" if spec.counts.count(n) == 1 else f"canary-{n}x-{i}", secret,
               spec.template.format(secret=secret), CANARY_PHRASE.format(secret=secret), user, n, spec.digits,
               spec.template)
        for i, (n, secret, user) in enumerate(zip(spec.counts, secrets, owners, strict=True))
    ]


def insert_canaries(prepared, spec: CanarySpec | str | Sequence[int] | None, seed: int = 0,
                    digits: int = DEFAULT_DIGITS, template: str = CANARY_TEMPLATE):
    """PreparedData with each canary's sentence appended `inserted` times to private_train, as its owner's data.

    spec: a CanarySpec, or insertion counts ('1,10,100'); empty -> prepared returned unchanged. The copies are
    appended after the existing sentences (whose indices stay put), each with meta {"canary": id, "secret",
    "inserted", "digits", "template", "copy"}, so later stages (teacher partition by user, user batches) treat
    them as the owner's sentences and the audit can read the canaries back with canaries_in().
    """
    if not isinstance(spec, CanarySpec):
        counts = parse_canary_counts(spec)
        if not counts:
            return prepared
        spec = CanarySpec(counts, seed, digits, template)
    if not spec.counts:
        return prepared
    return insert_canary_list(prepared, plan_canaries(prepared, spec))


def insert_canary_list(prepared, canaries: Sequence[Canary]):
    """Append each canary's sentence `inserted` times to private_train as its owner's data (see insert_canaries);
    also restores the canaries a run recorded (canaries.json) into freshly prepared data."""
    if not canaries:
        return prepared
    if canaries_in(prepared):
        raise ValueError("this data already holds canaries")
    from core.data.prepare import Sentence  # here, not at the top: prepare may import this module

    extra = []
    for c in canaries:
        meta = {"canary": c.canary_id, "secret": c.secret, "inserted": c.inserted, "digits": c.digits,
                "template": c.template}
        extra.extend(Sentence(c.text, c.user_id, {**meta, "copy": j}) for j in range(c.inserted))
    return dataclasses.replace(prepared, private_train=tuple(prepared.private_train) + tuple(extra))


def canary_from_dict(d: dict[str, Any]) -> Canary:
    names = {f.name for f in dataclasses.fields(Canary)}
    return Canary(**{k: v for k, v in d.items() if k in names})


def canaries_in(prepared) -> list[Canary]:
    """The canaries inserted into prepared.private_train, read back from the sentences' meta."""
    seen: dict[str, Canary] = {}
    for s in prepared.private_train:
        cid = s.meta.get("canary") if s.meta else None
        if not cid or cid in seen:
            continue
        m = s.meta
        seen[cid] = Canary(cid, m["secret"], s.text, CANARY_PHRASE.format(secret=m["secret"]), s.user_id,
                           int(m["inserted"]), int(m["digits"]), m["template"])
    return list(seen.values())


def find_canary_phrases(prepared) -> list[SecretPhrase]:
    canaries = canaries_in(prepared)
    train = prepared.private_train
    hits = locate_phrases([c.phrase for c in canaries], train)
    return [
        SecretPhrase(c.phrase, "canary", (c.user_id,), tuple(idx), tuple(sorted({train[i].user_id for i in idx})),
                     inserted=c.inserted, secret=c.secret)
        for c, idx in zip(canaries, hits, strict=True)
    ]


def secret_phrases(prepared, records: Iterable[Any] | None = None) -> list[SecretPhrase]:
    """Every secret phrase present in private train: names (sorted) then canaries (in insertion order)."""
    return find_name_phrases(prepared, records) + find_canary_phrases(prepared)


__all__ = [
    "CANARY_PHRASE",
    "CANARY_TEMPLATE",
    "Canary",
    "CanarySpec",
    "PhraseMatcher",
    "SecretPhrase",
    "canaries_in",
    "canary_from_dict",
    "canary_spec_from_config",
    "common_words",
    "find_canary_phrases",
    "find_name_phrases",
    "find_names",
    "insert_canaries",
    "insert_canary_list",
    "locate_phrases",
    "names_in_text",
    "parse_canary_counts",
    "plan_canaries",
    "secret_phrases",
    "words",
]
