"""Name leak rate R_name (SeqPATE App. O): how often generated text contains a private user's name.

R_name = share of completions (the generated continuation only, never the given prefix) that contain any of
the names, matched case-insensitively on word boundaries (core.data.secrets.PhraseMatcher).
Bad case (App. Q): among completions whose REFERENCE (the true private continuation) contains a name, the share
whose completion contains that same name: the model reproducing the name it should have completed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from core.data.secrets import PhraseMatcher


def name_leak_rate(completions: Sequence[dict[str, Any]], names: Iterable[str]) -> dict[str, Any]:
    """{"r_name", "r_name_bad_case", "r_name_counts", "per_name"}; rates are None where there is nothing to divide
    by. per_name (completions containing each name) quotes private text: keep it out of metrics."""
    names = list(dict.fromkeys(names))
    matcher = PhraseMatcher(names)
    n = len(completions)
    with_name = 0
    ref_with_name = 0
    ref_name_reproduced = 0
    leaked: dict[str, int] = {}
    for row in completions:
        generated = matcher.find(str(row.get("completion", "")))
        if generated:
            with_name += 1
            for k in generated:
                leaked[names[k]] = leaked.get(names[k], 0) + 1
        in_reference = matcher.find(str(row.get("reference", "")))
        if in_reference:
            ref_with_name += 1
            if generated & in_reference:
                ref_name_reproduced += 1
    return {
        "r_name": with_name / n if n and names else (0.0 if n else None),
        "r_name_bad_case": ref_name_reproduced / ref_with_name if ref_with_name else None,
        "r_name_counts": {
            "completions": n,
            "names": len(names),
            "completions_with_name": with_name,
            "references_with_name": ref_with_name,
            "reference_name_reproduced": ref_name_reproduced,
        },
        # which names were generated: private text, so it goes to phrases.csv (column in_completions), never
        # to metrics.json or logs
        "per_name": {name: leaked.get(name, 0) for name in names},
    }
