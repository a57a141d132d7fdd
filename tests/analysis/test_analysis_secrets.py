"""Secret phrases: names from self-introductions, word-boundary matching, seeded canaries."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.config import DataConfig
from core.data.prepare import PreparedData, Sentence
from core.data.secrets import (
    CANARY_TEMPLATE,
    CanarySpec,
    PhraseMatcher,
    canaries_in,
    canary_spec_from_config,
    find_canary_phrases,
    find_name_phrases,
    insert_canaries,
    names_in_text,
    parse_canary_counts,
    secret_phrases,
)
from tests.conftest import micro_config


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Hi! My name is Marshal. What is your name?", ["Marshal"]),
        ("Nice talking to you too! hope to see you at BYU, my name is Mireya by the way", ["Mireya"]),
        ("My name is Rashad Kashminibad. I'm currently chatting", ["Rashad Kashminibad"]),
        ("Oh! cool. My name is Courtney. What is yours?", ["Courtney"]),
        ("Most of my friends call me Machs, it's just a nickname.", ["Machs"]),
        ("Haha yeah I'm Juliette and my sisters genevieve.", ["Juliette"]),
        ("I'm Ty, but my friends call me BK.", ["Ty"]),
        ("I am Janet Miller.", ["Janet Miller"]),
        # not names: lower case, nationality, an ordinary word, the cue inside another phrase, no cue at all
        ("my name's brian!", []),
        ("but my name is Samoan", []),
        ("I'm Sorry, I have to go", []),
        ("I'm Korean and I love kimchi", []),
        ("His name is Scott", []),
        ("How do I even remember what my own name is?", []),
    ],
)
def test_names_in_self_introductions(text, names):
    assert names_in_text(text, common=frozenset({"sorry"})) == names


def test_phrase_matching_is_case_insensitive_on_word_boundaries():
    m = PhraseMatcher(["Mireya", "Janet Miller", "my ID is 123456"])

    def found(text: str) -> list[str]:
        return [m.phrases[k] for k in sorted(m.find(text))]

    assert found("mireya's friend") == ["Mireya"]  # possessive still contains the name
    assert found("MIREYA!") == ["Mireya"]
    assert found("Mireyas and Amireya") == []  # not inside another word
    assert found("I am janet   miller") == ["Janet Miller"]
    assert found("Janet, Miller") == ["Janet Miller"]  # words contiguous; punctuation is not a word
    assert found("Janet Millers") == []
    assert found("so, My id is 123456.") == ["my ID is 123456"]
    assert found("my ID is 1234567") == []


def _prepared(train, public=(), private_users=None):
    train = tuple(Sentence(t, u, dict(meta)) for t, u, *rest in train for meta in [rest[0] if rest else {}])
    public = tuple(Sentence(t, u) for t, u in public)
    users = frozenset(private_users or {s.user_id for s in train})
    return PreparedData(public_train=public, public_valid=(), private_train=train, private_valid=(), private_test=(),
                        public_users=frozenset(s.user_id for s in public), private_users=users)


def test_name_phrases_record_users_and_train_indices():
    data = _prepared(
        [
            ("Hi, my name is Mireya by the way", "u1"),
            ("what a day", "u2"),
            ("tell mireya I said hi", "u2"),
            ("MIREYA is here", "u1"),
            ("I am Janet Miller.", "u3", {"name": "Janet Miller"}),
            ("Janet called yesterday", "u4"),
        ],
        public=[("sorry I am late", "p1")],
    )
    by_phrase = {p.phrase: p for p in find_name_phrases(data)}
    assert set(by_phrase) == {"Mireya", "Janet Miller"}
    mireya = by_phrase["Mireya"]
    assert (mireya.kind, mireya.owners, mireya.train_indices, mireya.users) == ("name", ("u1",), (0, 2, 3), ("u1", "u2"))
    assert mireya.occurrences == 3
    assert by_phrase["Janet Miller"].train_indices == (4,) and by_phrase["Janet Miller"].owners == ("u3",)


def test_names_come_only_from_private_users_records():
    data = _prepared([("mireya and bob", "u1")], public=[("ok then", "p1")])
    records = [SimpleNamespace(text="my name is Mireya", user_id="u1", meta={}),
               SimpleNamespace(text="my name is Bob", user_id="p1", meta={})]  # a public user: not a secret
    assert [p.phrase for p in find_name_phrases(data, records)] == ["Mireya"]
    assert find_name_phrases(data, records[1:]) == []


def _users_data(n_users=6, per_user=5):
    return _prepared([(f"sentence {i} of user {u}", f"u{u}") for u in range(n_users) for i in range(per_user)])


def test_canaries_are_inserted_the_right_number_of_times_into_the_right_users():
    data = _users_data()
    out = insert_canaries(data, "1,10,100", seed=7, digits=6)
    n0 = len(data.private_train)
    assert out.private_train[:n0] == data.private_train  # existing indices do not move
    added = out.private_train[n0:]
    assert len(added) == 111
    canaries = canaries_in(out)
    assert [c.inserted for c in canaries] == [1, 10, 100]
    assert len({c.user_id for c in canaries}) == 3 and {c.user_id for c in canaries} <= data.private_users
    assert len({c.secret for c in canaries}) == 3
    for c in canaries:
        assert len(c.secret) == 6 and c.secret.isdigit() and c.candidates == 10**6
        copies = [s for s in added if s.meta["canary"] == c.canary_id]
        assert len(copies) == c.inserted
        assert all(s.user_id == c.user_id and s.text == CANARY_TEMPLATE.format(secret=c.secret) for s in copies)
    phrases = {p.secret: p for p in find_canary_phrases(out)}
    for c in canaries:
        p = phrases[c.secret]
        assert (p.kind, p.inserted, p.occurrences, p.users, p.owners) == ("canary", c.inserted, c.inserted,
                                                                          (c.user_id,), (c.user_id,))
        assert p.phrase == f"my ID is {c.secret}"
    # deterministic in (data, spec): every method of a comparison sees the same secrets in the same users
    again = canaries_in(insert_canaries(data, CanarySpec((1, 10, 100), 7, 6)))
    assert again == canaries
    assert canaries_in(insert_canaries(data, "1,10,100", seed=8)) != canaries
    assert secret_phrases(out)[-3:] == find_canary_phrases(out)


def test_no_canaries_asked_leaves_the_data_untouched():
    data = _users_data()
    assert insert_canaries(data, "", 0) is data
    assert insert_canaries(data, None, 0) is data
    assert canaries_in(data) == []
    with pytest.raises(ValueError, match="already holds canaries"):
        insert_canaries(insert_canaries(data, "1", 0), "1", 0)


def test_canary_spec_is_read_from_the_config():
    assert parse_canary_counts("1, 10,100") == (1, 10, 100)
    with pytest.raises(ValueError):
        parse_canary_counts("1,x")
    with pytest.raises(ValueError):
        parse_canary_counts("0")
    assert canary_spec_from_config(SimpleNamespace(data=DataConfig())) is None  # no canaries asked for
    spec = canary_spec_from_config(micro_config(data__canaries="1,10,100", data__canary_seed=3, data__canary_digits=4))
    assert spec == CanarySpec((1, 10, 100), 3, 4)
    assert spec.to_dict() == {"counts": [1, 10, 100], "seed": 3, "digits": 4, "template": CANARY_TEMPLATE}


def test_canaries_get_distinct_secrets_even_where_few_secrets_exist():
    """Two canaries sharing a secret would merge into one phrase: its count and exposure would be wrong. With one
    digit (10 possible secrets) four canaries still get four."""
    from core.data import prepare
    from core.data.corpora import Record
    from core.data.secrets import plan_canaries

    text = " ".join(f"w{i}" for i in range(10))
    records = [Record(f"u{u} {k} {text}", f"u{u}", {}) for u in range(40) for k in range(10)]
    p = prepare(records, DataConfig(private_train=None, private_valid=20, private_test=30, public_train=None,
                                    public_valid=10), 0)
    for seed in range(20):
        canaries = plan_canaries(p, CanarySpec((1, 1, 1, 1), seed=seed, digits=1))
        assert len({c.secret for c in canaries}) == 4, seed
