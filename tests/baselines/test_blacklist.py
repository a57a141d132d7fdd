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
    assert {"Zorblat", "555-1234", "March", "2019"} <= blacklist.items
    assert "Paris" not in blacklist.items  # in public text: allowed
    assert "My" not in blacklist.items and "We" not in blacklist.items  # sentence-initial capitals are not names


def test_apply_blacklist_replaces_names_and_keeps_public_words():
    blacklist = build_blacklist(PRIVATE, PUBLIC)
    out = apply_blacklist("yesterday Zorblat went to Paris, call 555-1234", blacklist)
    assert out == f"yesterday {PLACEHOLDER} went to Paris, call {PLACEHOLDER}"
    assert apply_blacklist("Zorblatian is a different word", blacklist) == "Zorblatian is a different word"


def test_private_users_names_are_blocked_in_any_case_even_where_public_text_uses_them():
    """App. P's blacklist holds "the user name". Found only as capitalised words absent from public text, a
    private user called Ben or Sailor was never blocked where a public user shares the name or public text says
    "sailor" (5 of quick's 13 secret names), nor any name written in lower case, which R_name still counts. Whole
    names only, as R_name counts them: the words of "Sailor Moon" alone stay (an AirDialog "Mark Young" would
    otherwise blank "young" everywhere)."""
    public = [*PUBLIC, "Ben said the sailor was late", "my friend ben"]
    private = ["hi my name is Ben and I sail", "call me Sailor Moon please", "I saw Zorblat today in May"]
    blacklist = build_blacklist(private, public, names=["Ben", "Sailor Moon"])
    out = apply_blacklist("ben met BEN and Ben's sailor friend moon with sailor  MOON, then Zorblat; zorblat may come "
                          "in May", blacklist)
    assert out == (f"{PLACEHOLDER} met {PLACEHOLDER} and {PLACEHOLDER}'s sailor friend moon with {PLACEHOLDER}, "
                   f"then {PLACEHOLDER}; zorblat may come in {PLACEHOLDER}")  # other items as written: not "may"
    assert apply_blacklist("Benjamin and Paris", blacklist) == "Benjamin and Paris"  # whole words only
    assert build_blacklist(private, public).names is None  # without names: the items alone
