"""Pri-GPT-blacklist (SeqPATE App. P): private names, numbers and months blocked; public words kept."""

from core.baselines.blacklist import PLACEHOLDER, apply_blacklist, build_blacklist

PRIVATE = [
    "I talked to Zorblat yesterday and he said hi.",
    "My number is 555-1234 and I moved here in March 2019.",
    "Paris was lovely, said Zorblat. We should go to Paris again!",
]
PUBLIC = ["We went to Paris last summer", "yesterday I said hi to my neighbour"]


def test_blacklist_holds_private_only_items():
    blacklist = build_blacklist(PRIVATE, PUBLIC)
    assert {"Zorblat", "555-1234", "March", "2019"} <= blacklist
    assert "Paris" not in blacklist  # in public text: allowed
    assert "My" not in blacklist and "We" not in blacklist  # sentence-initial capitals are not names


def test_apply_blacklist_replaces_names_and_keeps_public_words():
    blacklist = build_blacklist(PRIVATE, PUBLIC)
    out = apply_blacklist("yesterday Zorblat went to Paris, call 555-1234", blacklist)
    assert out == f"yesterday {PLACEHOLDER} went to Paris, call {PLACEHOLDER}"
    assert apply_blacklist("Zorblatian is a different word", blacklist) == "Zorblatian is a different word"
