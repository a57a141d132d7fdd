"""Pri-GPT-blacklist (SeqPATE App. P): Pri-GPT whose generated sentences have blacklisted words replaced.

The blacklist holds the sensitive items found in the private train set: capitalised words that are not
sentence-initial and do not occur in public text (names, places), digit strings (numbers, dates, IDs) and
month names, matched as written; and, as App. P's holds "the user name", every private user's name that
core.data.secrets finds (the names R_name counts), matched whole and in any case, as R_name matches them. It is a
heuristic filter with no formal guarantee: it only covers these types, only the items that were found, and it
cannot say how strong the protection is (App. P).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.baselines.reference import pri_gpt
from core.workspace import MethodResult, Workspace

PLACEHOLDER = "<BLOCKED>"
MONTHS = frozenset(
    "January February March April May June July August September October November December".split()
    + "Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
# words, keeping inner apostrophes/hyphens and digit groups such as 12/05/2021 or 555-1234 together
WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-/.:][A-Za-z0-9]+)*")
SENTENCE_END = re.compile(r"[.!?]")


def words(text: str) -> list[str]:
    return WORD.findall(text)


def public_vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """Lower-cased words of public text: the allow-list."""
    return frozenset(w.lower() for t in texts for w in words(t))


def sensitive_items(text: str, public_vocab: frozenset[str]) -> set[str]:
    """Blacklist candidates in one sentence (see the module docstring)."""
    found: set[str] = set()
    prev_end = 0
    for match in WORD.finditer(text):
        w = match.group()
        # sentence-initial: the first word, or the first after . ! or ?
        sentence_start = prev_end == 0 or bool(SENTENCE_END.search(text[prev_end : match.start()]))
        prev_end = match.end()
        if any(c.isdigit() for c in w) or w in MONTHS:
            found.add(w)
        elif w[0].isupper() and not sentence_start and w.lower() not in public_vocab and w != "I":
            found.add(w)
    return found


@dataclass(frozen=True)
class Blacklist:
    items: frozenset[str]  # words matched exactly: "May" the month, not "may" the verb
    names: re.Pattern | None = None  # the private users' names, whole, in any case (name_pattern)


def name_pattern(names: Iterable[str]) -> re.Pattern | None:
    """Each name as R_name's matcher finds it: its words contiguous, in any case, on word boundaries (so
    "Mireya's" holds "Mireya"). Whole names only: blocking each word of "Mark Young" would blank "young"."""
    spelled = sorted({r"\W+".join(map(re.escape, re.findall(r"\w+", name))) for name in names}, key=len, reverse=True)
    spelled = [p for p in spelled if p]
    return re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)", re.IGNORECASE) if spelled else None


def build_blacklist(private_texts: Iterable[str], public_texts: Iterable[str], names: Iterable[str] = ()
                    ) -> Blacklist:
    """names: the private users' names, blocked even where public text uses their words (a public user called
    Ben does not make the private Ben's name public)."""
    vocab = public_vocabulary(public_texts)
    return Blacklist(frozenset(item for t in private_texts for item in sensitive_items(t, vocab)), name_pattern(names))


def apply_blacklist(text: str, blacklist: Blacklist) -> str:
    """Replace every private user's name, then every whole word on the list, by PLACEHOLDER."""
    if blacklist.names is not None:
        text = blacklist.names.sub(PLACEHOLDER, text)
    return WORD.sub(lambda m: PLACEHOLDER if m.group() in blacklist.items else m.group(), text)


def pri_gpt_blacklist(ws: Workspace) -> MethodResult:
    from core.analysis.audit import load_private_records
    from core.data.secrets import find_names

    names = find_names(ws.data, load_private_records(ws.cfg))
    blacklist = build_blacklist((s.text for s in ws.data.private_train), (s.text for s in ws.data.public_train),
                                names)
    ws.log("blacklist", ws.method_progress(0.0),
           message=f"{len(blacklist.items)} blacklisted items and {len(names)} private users' names")
    base = pri_gpt(ws)
    privacy = {
        "epsilon": float("inf"),
        "delta": 0.0,
        "accountant": "none (blacklist filtering gives no formal guarantee)",
        "unit": "none",
        "events": [],
        "note": ("Pri-GPT (fine-tuned on private data without protection) whose completions have blacklisted "
                 "words (names and places absent from public text, digit strings, months found in the private "
                 "train set, and the private users' names in any case) replaced by " + PLACEHOLDER + ". Only the "
                 "listed types and items are filtered; the model itself still memorises private data and the "
                 "strength of the protection cannot be measured."),
    }
    metrics = {"postprocess": "blacklist", "blacklist_size": len(blacklist.items), "blacklist_names": len(names)}
    # the pipeline applies the filter to every completion before scoring
    return MethodResult(base.model, privacy, metrics, postprocess=functools.partial(apply_blacklist, blacklist=blacklist))
