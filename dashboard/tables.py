"""Tables and notes built from run frames (loading.runs_frame rows) for the result pages: the headline comparison,
the privacy statement cards, and which runs stand for which when a run made here shares a shipped run's settings.

Pure functions of the frames, but for the toggle that puts the runs made here in place of their shipped copies
(made_here_in_place, show_made_here_in_place, made_here_or_shipped), which keeps its choice in the session like the
other shared pickers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from core.config import PRESETS, fixed_epsilon, heuristic_reason, preset_value
from core.runs.store import plainest_first
from core.runs.values import as_float, as_int, as_str
from dashboard.loading import at_defaults, lowest_seed_first, same_seed, seeds_of
from dashboard.widgets import opened_link_value, remember_shared
from dashboard.wording import (
    HEURISTIC_PRIVACY,
    fmt_delta,
    fmt_eps,
    is_nan,
    is_synth_method,
    method_label,
    method_order,
    present,
    privacy_kind,
)

UNIT_TEXT = {
    "sample": "one training sentence (sample level)",
    "user": "all sentences of one user (user level)",
    "none": "nothing (no noise)",
}


def epsilon_group(row: pd.Series) -> float | None:
    """The ε runs are grouped by: the target asked for (runs of one target, e.g. 3, are accounted at 2.9990705981
    in one seed and 2.9990707263 in another), the accounted ε for references and runs without a target."""
    eps = row.get("epsilon")
    if privacy_kind(eps) in ("public-only", "not-private"):
        return eps
    target = row.get("epsilon_target")
    return target if target is not None and not is_nan(target) else eps


def distinct_configs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run config: several sweep plans share a run (e.g. SeqPATE at ε 3), and a copy is not a seed.
    Configs that differ only in fields their method never reads (core.config.effective_config) are copies too.

    The copy kept is the newest run made here, else the shipped copy of the plainest name (store.plainest_first:
    tiny-seqpate-eps3, not -ablationnone), as in REPORT.md (core.runs.report.load_rows). Copies trained at other
    times can differ in the last bits and so in their sampled completions, or more where the base model was
    retrained (the shipped runs' bases predate seeding): replaced_shipped_copies names the shipped runs a run made
    here stands in for."""
    if df.empty or "effective_hash" not in df:
        return df
    hashed = df[df["effective_hash"].notna()]
    local = hashed["source"] != "cached" if "source" in hashed else pd.Series(False, index=hashed.index)
    by_time = [name for name in ("created", "run_id") if name in hashed]
    newest_here = hashed[local].sort_values(by_time, ascending=False, kind="stable", na_position="last")
    shipped = hashed[~local].sort_values("run_id", key=lambda ids: ids.map(plainest_first), kind="stable")
    first = pd.concat([newest_here, shipped]).drop_duplicates(subset="effective_hash")
    return pd.concat([first, df[df["effective_hash"].isna()]]).sort_index()


def replaced_shipped_copies(df: pd.DataFrame) -> dict[str, list[str]]:
    """Run made here -> the shipped runs of its config it stands in for on the pages (distinct_configs)."""
    if df.empty or "effective_hash" not in df or "source" not in df:
        return {}
    kept = distinct_configs(df)
    replaced = {}
    for row in kept[kept["source"] != "cached"].to_dict("records"):
        same = df[(df["effective_hash"] == row["effective_hash"]) & (df["source"] == "cached")]
        if not same.empty:
            replaced[row["run_id"]] = sorted(same["run_id"])
    return replaced


def side_by_side_defaults(pool: pd.DataFrame) -> list[str]:
    """The runs a side-by-side view opens on (one preset's runs in pool): one per method, at the preset's defaults
    and, for a method that takes an epsilon, at the preset's epsilon (not a control such as epsilon inf), all of the
    lowest seed, SeqPATE first. Among copies of one config, the one distinct_configs keeps, as on the Overview."""
    if pool.empty:
        return []
    records = {r["run_id"]: r for r in distinct_configs(pool).to_dict("records")}
    at_defaults = {i: r for i, r in records.items() if not r.get("variant")} or records
    lowest = at_defaults[lowest_seed_first(list(at_defaults), at_defaults)[0]]
    candidates = [i for i, r in at_defaults.items() if same_seed(r, lowest)]

    def preference(run_id: str) -> tuple:
        r = records[run_id]
        target = preset_value(r["preset"], "privacy", "epsilon") if r["preset"] in PRESETS else None
        off_target = fixed_epsilon(r["method"]) is None and r.get("epsilon_target") != target
        return off_target, run_id  # then the copy or run whose id sorts first

    chosen: dict[str, str] = {}
    for run_id in sorted(candidates, key=preference):
        chosen.setdefault(records[run_id]["method"], run_id)
    return sorted(chosen.values(),
                  key=lambda i: (records[i]["method"] != "seqpate", method_order(records[i]["method"])))


def histogram_candidates(records: Mapping[str, Mapping[str, Any]], run_id: str) -> list[str]:
    """Runs (in records' order, newest first) the Phrases histogram may add beside run_id: of its preset, seed and
    data (another seed splits the users anew, another corpus holds other users: their runs hold other names), of
    another method, with phrases that can sit on a log axis (ε neither 0 nor ∞)."""
    me = records[run_id]
    return [i for i, r in records.items() if r["preset"] == me["preset"] and same_seed(r, me)
            and r.get("setup") == me.get("setup")
            and r["method"] != me["method"] and present(r["epsilon"]) and 0 < r["epsilon"] < math.inf]


def histogram_defaults(records: Mapping[str, Mapping[str, Any]], run_id: str, kinds: set[str],
                       kinds_of: Mapping[str, set[str]]) -> list[str]:
    """The Phrases histogram's default runs: run_id and up to three of kinds_of's runs (histogram_candidates, with
    the phrase kinds each holds), one per method, the closest in kind first: holding every kind of phrase run_id
    holds (its canaries too), the same privacy target (phrase-avg or sample), the same target ε, at the preset's
    defaults rather than a variant; then the newest."""
    me = records[run_id]
    order = list(kinds_of)

    def unlike(i: str) -> tuple[bool, bool, bool, bool]:
        r = records[i]
        return (not kinds <= kinds_of[i], r["privacy_target"] != me["privacy_target"],
                r["epsilon_target"] != me["epsilon_target"], bool(r["variant"]) and r["privacy_target"] == "sample")

    best: dict[str, str] = {}
    for i in order:  # newest first: on a tie the latest run of the method stays
        if records[i]["method"] not in best or unlike(i) < unlike(best[records[i]["method"]]):
            best[records[i]["method"]] = i
    return [run_id] + sorted(best.values(), key=lambda i: (unlike(i), order.index(i)))[:3]


def headline_table(df: pd.DataFrame, include_variants: bool = False) -> pd.DataFrame:
    """Method, setting, accounted ε, δ, PPL, BLEU-4 (means over seeds), R_name, runs: one row per configuration
    (and preset: a `preset` column leads when the frame holds several).

    Runs at their preset's defaults only, unless include_variants (then each variant is its own row, named by the
    settings that differ: a phrase-level target or another filter is never averaged with the default). Synthetic-data
    runs are left out, and a run shared by several sweep plans counts once."""
    columns = ["Method", "setting", "ε", "ε is", "δ", "PPL", "BLEU-4", "R_name", "runs", "run ids"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    main = distinct_configs(df[~df["method"].map(is_synth_method)])
    if len(seeds_of(main)) > 1:
        columns.insert(columns.index("runs") + 1, "seeds")
    main = (main if include_variants else at_defaults(main)).copy()
    if main.empty:
        return pd.DataFrame(columns=columns)
    several_presets = main["preset"].nunique() > 1
    if several_presets:
        columns = ["preset", *columns]
    main["setting"] = main["variant_shown"].fillna("") if "variant_shown" in main else main["variant"].fillna("")
    main["eps_key"] = main.apply(epsilon_group, axis=1)
    rows = []
    groups = main.groupby(["preset", "method", "setting", "eps_key"], dropna=False, sort=False)
    for (preset, method, setting, _key), group in groups:
        rows.append({
            "preset": preset,
            "Method": method_label(method),
            "setting": setting,
            "ε": float(group["epsilon"].max()) if group["epsilon"].notna().any() else None,
            "ε is": epsilon_kind(group),
            "δ": fmt_delta(group["delta"].max()) if group["delta"].notna().any() else "–",
            "PPL": group["ppl"].mean(),
            "BLEU-4": group["bleu4"].mean(),
            "R_name": group["r_name"].mean() if group["r_name"].notna().any() else None,
            "runs": len(group),
            "seeds": ", ".join(str(x) for x in seeds_of(group)),
            "run ids": ", ".join(sorted(group["run_id"])),
            "_order": (str(preset), method_order(method), setting, _key if _key is not None else -1.0),
        })
    rows.sort(key=lambda r: r.pop("_order"))
    table = pd.DataFrame(rows, columns=columns)
    if table["R_name"].isna().all():
        table = table.drop(columns=["R_name"])
    if (table["ε is"] == "").all():
        table = table.drop(columns=["ε is"])
    return table


def heuristic_runs(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether its ε is a heuristic (noise chosen from the private data: ADP, a phrase-avg target)."""
    # zipped columns, not to_dict: its first use imports a pandas module during a visitor's page load
    targets = runs["privacy_target"] if "privacy_target" in runs else pd.Series(None, index=runs.index)
    return pd.Series([bool(heuristic_reason(method, target, epsilon))
                      for method, target, epsilon in zip(runs["method"], targets, runs["epsilon"], strict=True)],
                     index=runs.index, dtype=bool)


def measured_runs(runs: pd.DataFrame) -> pd.Series:
    """Per run, whether its ε is a measurement (made before its noise had a stream of its own)."""
    if "shared_streams" not in runs:
        return pd.Series(False, index=runs.index)
    return runs["shared_streams"].fillna(False).astype(bool)


def epsilon_kind(runs: pd.DataFrame) -> str:
    """What the ε of these runs is where it is not a DP guarantee, as their statements say: "heuristic",
    "measurement", both, or "" (a guarantee, or no private data or no noise: ε says so itself)."""
    return ", ".join(kind for kind, flags in (("heuristic", heuristic_runs(runs)), ("measurement", measured_runs(runs)))
                     if flags.any())


def leak_scope(frame: pd.DataFrame) -> str:
    """How much the name leak rate of these runs can show, in words: how many private names it looks for and how
    many test references hold one ("" when no run recorded it). A 0% over 4 names, none of them in a reference,
    says little (Pri-GPT, trained with no protection, leaks none there either)."""
    def span(column: str) -> str:
        values = sorted({int(v) for v in frame.get(column, pd.Series(dtype=float)).dropna()})
        return "" if not values else f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,}-{values[-1]:,}"

    names, references = span("r_name_names"), span("r_name_references")
    if not names:
        return ""
    return (f"it looks for {names} private users' names that occur in the training data, and {references or '?'} "
            "of the test sentences' true continuations hold one: at this scale a rate of 0 says little")


def shown_run_ids(table: pd.DataFrame) -> set[str]:
    """The run ids a headline table's rows stand for (its comma-separated "run ids" column)."""
    return {i.strip() for ids in table.get("run ids", []) for i in str(ids).split(",") if i.strip()}


def replaced_copies_note(pool: pd.DataFrame, table: pd.DataFrame) -> str:
    """Which rows of a headline table (built from pool) show a run made here in place of a shipped copy, or ""."""
    return stand_in_note(pool, shown_run_ids(table))


def run_result(record: Mapping[str, Any]) -> str:
    """A run's test perplexity as Compare names it ("PPL 909.34"), or why it has none ("running, no PPL")."""
    ppl = as_float(record.get("ppl"))
    if ppl is not None and math.isfinite(ppl):
        return f"PPL {ppl:,.2f}"  # as the run details above print it (1,033.24)
    if is_synth_method(record.get("method")):
        return "synthetic data, no PPL (its accuracy: Synthetic data page)"
    return f"{record['state']}, no PPL" if isinstance(record.get("state"), str) else "no PPL"


def base_model_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """For Compare: why two runs (records) may differ by more than their configs, or "". Runs record their base
    model's weights digest since 2026-11-25; the shipped text runs' bases were trained before seeding and record
    none, and a fresh clone trains its own, so a run made here and a shipped one stand on other base models unless
    both digests are recorded and equal. Runs that computed on different devices (the record's device) are named
    too."""
    def digest(record: Mapping[str, Any]) -> str | None:
        return as_str(record.get("base_weights"))

    named = f"A ({run_result(a)}) and B ({run_result(b)})"
    devices = [as_str(record.get("device")) for record in (a, b)]
    differ = None not in devices and devices[0] != devices[1]
    where = (f"computed on different devices (A on {devices[0]}, B on {devices[1]}: SEQPATE_DEVICE), where float "
             "rounding and random draws differ, which training amplifies")
    on_devices = f" They also {where}." if differ else ""
    both = digest(a) and digest(b)
    if both and digest(a) != digest(b):
        return (f"{named} were trained from different base models (their weights digests {digest(a)} and {digest(b)} "
                f"differ), so their results can differ by more than their configs.{on_devices}")
    if bool(digest(a)) != bool(digest(b)) and a.get("source") == b.get("source"):
        # two shipped runs (ADP's canary runs, made 2026-11-27, beside the older shipped ones), or two made here
        one, other = ("A", "B") if digest(a) else ("B", "A")
        state = as_str((b if digest(a) else a).get("state"))
        # a cancelled or failed run wrote no metrics.json, where the digest is: not a run of before 2026-11-25
        why = (f"{other} did not finish ({state}) and records none" if state not in (None, "done") else
               f"{other} was made before digests were recorded (2026-11-25), on the base model of its day")
        return (f"{named}: only {one} records its base model's weights digest ({digest(a) or digest(b)}); {why}, so "
                f"the two may stand on other base models and differ by more than their configs.{on_devices}")
    if not both and a.get("source") != b.get("source"):
        return (f"{named}: one was made on this machine, the other is a shipped run, and they do not both record "
                "their base model's weights digest. A run made here trains from this machine's base model (under "
                "`$SEQPATE_CACHE`), not from the shipped runs' (trained before seeding, they cannot be remade), so "
                f"the two can differ by more than their configs.{on_devices}")
    return f"{named} {where}, so their results can differ by more than their configs." if differ else ""


def stand_in_note(pool: pd.DataFrame, shown: set[str]) -> str:
    """Which of the shown runs are runs made here standing in for shipped copies of their settings, with both
    perplexities, or "". A fresh clone retrains the base model, and the shipped runs' bases (trained before
    seeding) cannot be remade, so such a run can differ from its copy by more than the methods differ. A pair whose
    base models' weights digests are both recorded and equal is left out: same base, same settings."""
    # keyed by (shipped, id): a shipped run and a run made here in a folder of its name are told apart (list_infos
    # lists them under two ids; a caller's pool may not have been built by it)
    rows = {(row.get("source") == "cached", row["run_id"]): row for row in pool.to_dict("records")}

    def named(run_id: str, shipped: bool) -> str:
        value = rows.get((shipped, run_id), {}).get("ppl")
        return f"{run_id} (PPL {value:,.2f})" if isinstance(value, (int, float)) and math.isfinite(value) else run_id

    def digest(run_id: str, shipped: bool) -> str | None:
        return as_str(rows.get((shipped, run_id), {}).get("base_weights"))

    pairs = []
    for run, shipped in replaced_shipped_copies(pool).items():
        other_base = [s for s in shipped if digest(run, False) is None or digest(run, False) != digest(s, True)]
        if run in shown and other_base:
            known = digest(run, False) is not None and all(digest(s, True) is not None for s in other_base)
            pairs.append(f"{named(run, False)} replaces {', '.join(named(s, True) for s in other_base)}"
                         + (" (another base model: their weights digests differ)" if known else ""))
    if not pairs:
        return ""
    return ("Runs made here replace shipped runs of the same settings and seed in this view: " + "; ".join(pairs)
            + ". A run made here trained on this machine's base model (under `$SEQPATE_CACHE`, `.cache/` by "
            "default), not on the shipped runs' (trained before seeding, they cannot be remade), so it can differ "
            "from them by more than the methods differ: compare it only with other runs made here, or switch off "
            f"\"{MADE_HERE_TOGGLE}\" above to see the runs REPORT.md quotes.")


_LAST_MADE_HERE = "_last_made_here_in_place"
MADE_HERE_TOGGLE = "Runs made here in place of their shipped copies"


def made_here_copies(pool: pd.DataFrame) -> pd.Series:
    """Which runs of pool were made here with the settings of a shipped run in pool (a boolean mask)."""
    if pool.empty or "source" not in pool or "effective_hash" not in pool:
        return pd.Series(False, index=pool.index)
    made_here = pool["source"] != "cached"
    return made_here & pool["effective_hash"].isin(set(pool.loc[~made_here, "effective_hash"].dropna()))


def made_here_in_place() -> bool:
    """Whether the reader switched on MADE_HERE_TOGGLE on a page that shows it (the choice is kept across pages)."""
    return bool(st.session_state.get(_LAST_MADE_HERE))


# the keys of MADE_HERE_TOGGLE on the pages that show it (made_here_or_shipped)
MADE_HERE_KEYS = ("overview_made_here", "pu_made_here", "synth_made_here", "export_made_here")


def show_made_here_in_place() -> None:
    """Switch MADE_HERE_TOGGLE on for the pages to come (Launch does, for a run just launched at a shipped run's
    settings: an instructor's run, launched in class, was hidden behind the shipped one on every results page). The
    toggle's value in the link the session opened with is spent: met later, it would switch it back off."""
    st.session_state[_LAST_MADE_HERE] = True
    for key in MADE_HERE_KEYS:
        opened_link_value(key)


def shown_pool(pool: pd.DataFrame, in_place: bool) -> pd.DataFrame:
    """pool as the Overview shows it, for a page without the toggle: the shipped runs, not the copies made here,
    unless in_place (made_here_in_place)."""
    return pool if in_place else pool[~made_here_copies(pool)]


def shipped_first_defaults(pool: pd.DataFrame) -> list[str]:
    """side_by_side_defaults of the runs the Overview shows (shown_pool)."""
    return side_by_side_defaults(shown_pool(pool, made_here_in_place()))


def made_here_or_shipped(pool: pd.DataFrame, key: str) -> pd.DataFrame:
    """pool without the runs made here at the settings of a shipped run, so that the pages show the shipped runs
    REPORT.md quotes, trained on the shipped base models; or, when the reader asks (a toggle shown only where there
    are such runs, kept across pages), pool as it is, the newest copy made here standing in for the shipped ones
    (stand_in_note says which). Runs made here at settings no shipped run has are shown either way.

    Shipped first: a run made on a fresh clone trains on another base model, and one such run among the shipped
    ones turned tiny's flat teacher curve into a peak and made every ablation look like an improvement."""
    copies = made_here_copies(pool)
    if not copies.any():
        return pool
    names = ", ".join(sorted(pool.loc[copies, "run_id"]))
    # bound to the URL, so a reload or a shared link keeps the choice; seeded through session state, not `value`
    # (Streamlit drops a bound parameter equal to the default): the link's choice, else the one made on any page
    linked = opened_link_value(key)
    if linked is not None:
        st.session_state[_LAST_MADE_HERE] = linked.lower() == "true"
    st.session_state[key] = bool(st.session_state.get(_LAST_MADE_HERE))
    in_place = st.toggle(MADE_HERE_TOGGLE, key=key, bind="query-params",
                         on_change=remember_shared, args=(key, _LAST_MADE_HERE),
                         help=f"Runs made on this machine with the settings of shipped runs: {names}. Off: the "
                              "shipped runs (those REPORT.md quotes). On: the newest run made here in their place.")
    if in_place:
        return pool
    # a box, not a caption: a grey line is easily missed by someone looking for the run they launched
    st.info(f"Hidden here: {names}, made on this machine with the settings of shipped runs, which are shown "
            f"instead (a run made here trains on this machine's base model, not the shipped runs'). Switch on "
            f"\"{MADE_HERE_TOGGLE}\" to see them in their place.", icon=":material/visibility_off:")
    return pool[~copies]


def shipped_copies_note(pool: pd.DataFrame, table: pd.DataFrame) -> str:
    """Which rows of a headline table (built from pool) stand for shipped runs of the same settings under other
    names (one per sweep plan that needed them; distinct_configs counts them once), or "": a reader looking for a
    run id by its plan's name finds where it went."""
    if pool.empty or "effective_hash" not in pool or "source" not in pool:
        return ""
    pairs = []
    for run_id in sorted(shown_run_ids(table)):
        row = pool[pool["run_id"] == run_id]
        if row.empty or row.iloc[0]["source"] != "cached" or not present(row.iloc[0]["effective_hash"]):
            continue  # a run made here: replaced_copies_note names the shipped runs it stands in for
        same = pool[(pool["effective_hash"] == row.iloc[0]["effective_hash"]) & (pool["run_id"] != run_id)
                    & (pool["source"] == "cached")]
        if not same.empty:
            pairs.append(f"{run_id} also as {', '.join(sorted(same['run_id']))}")
    if not pairs:
        return ""
    return ("Some settings ship under several names, one per sweep plan that needed them, and count once: "
            + "; ".join(pairs) + ". Each row shows the plainest (shortest) name; the copies were trained separately, so their "
            "numbers can differ slightly (thread counts, base models trained before seeding: \"Reproducing a run\" in "
            "the README).")


def seed_mix_note(table: pd.DataFrame) -> str:
    """A warning when the rows of a headline table average different seeds, or "" when they do not."""
    if "seeds" not in table or table["seeds"].nunique() < 2:
        return ""
    usual = table["seeds"].value_counts().idxmax()
    others = []
    for row in table[table["seeds"] != usual].to_dict("records"):
        name = row["Method"] + (f" ({row['setting']})" if row["setting"] else "")
        others.append(f"{name} at ε {fmt_eps(row['ε'])}: seed{'s' * (',' in row['seeds'])} {row['seeds']}")
    return (f"These rows average different seeds: most average seeds {usual}, but {'; '.join(others)}. Another seed "
            "is another user split and base model, so compare rows of the same seeds, or pick one seed above.")


# A run calibrated for the average name-phrase ε (privacy target phrase-avg, the paper's Table 2) picks its noise
# from how many teachers or sentences hold each name, which is private and moves with one sentence.
PHRASE_TARGET_HEURISTIC = ("Calibrated to an average name-phrase ε (the paper's Table 2): the noise level is chosen "
                           "from how many teachers or sentences hold each name, private counts no accountant covers, "
                           "so the ε shown is a heuristic, not a DP guarantee (statement.md).")
# Synthetic-data runs take the paper's delta = 1/|train| (their statement.md says why it is weak).
WEAK_DELTA = ("δ = 1/|train|, the paper's setting, is a weak δ: publishing one random training sentence outright "
              "meets it (the usual advice is well below 1/n).")


def privacy_cards(df: pd.DataFrame) -> list[dict[str, Any]]:
    """One privacy statement per method: unit protected, ε values, δ, accountant, non-private labels.

    A method with DP runs is described by those runs; its ε = ∞ runs (no noise, kept for reference) are counted
    in a note instead of turning the whole card into "not private". So are runs calibrated to the average
    name-phrase ε (privacy target phrase-avg), whose ε per sentence follows from that target, unless the method
    has no other runs. A run shared by several sweep plans counts once."""
    cards = []
    if df.empty:
        return cards
    df = distinct_configs(df)
    for method in sorted(df["method"].dropna().unique(), key=lambda m: (method_order(m), m)):
        rows = df[df["method"] == method]
        phrase_target = rows.get("privacy_target", pd.Series("sample", index=rows.index)).fillna("sample") != "sample"
        only_phrase_target = bool(phrase_target.all())
        if only_phrase_target:
            phrase_target[:] = False  # nothing else to describe the method by
        by_phrase, main = rows[phrase_target], rows[~phrase_target]
        kinds_of_rows = main["epsilon"].map(privacy_kind)
        kinds = set(kinds_of_rows) or {"unknown"}
        kind = next((k for k in ("private", "not-private", "public-only") if k in kinds), "unknown")
        described = main[kinds_of_rows == kind] if kind != "unknown" else main
        eps_values = sorted({float(e) for e in described["epsilon"].dropna()})
        units = sorted({str(u) for u in described["unit"].dropna()})
        accountants = sorted({str(a) for a in described["accountant"].dropna()})
        deltas = sorted({float(d) for d in described["delta"].dropna()})
        unit_text = "; ".join(UNIT_TEXT.get(u, u) for u in units) or "–"
        if kind == "public-only":
            unit_text = "everything private: no private data is used"
        elif kind == "not-private":
            unit_text = "nothing: private data without noise"
        notes = []
        unprotected = int((kinds_of_rows == "not-private").sum()) if kind == "private" else 0
        if unprotected:
            notes.append(f"also {unprotected} run(s) at ε = ∞ (no noise), kept as a non-private reference")
        if len(by_phrase):  # one pair per run: the same target gives another sentence ε under other settings
            pairs = sorted(zip(by_phrase["epsilon_target"], by_phrase["epsilon"], strict=True))
            notes.append(f"also {len(by_phrase)} run(s) calibrated to an average name-phrase ε (→ their ε per "
                         f"training sentence): {', '.join(f'{fmt_eps(t)} → {fmt_eps(e)}' for t, e in pairs)} "
                         "(Phrases page), a heuristic: their noise is chosen from private name counts")
        caveat = HEURISTIC_PRIVACY.get(method) or (WEAK_DELTA if is_synth_method(method) and kind == "private" else "")
        if not caveat and only_phrase_target:
            caveat = PHRASE_TARGET_HEURISTIC
        shared = int(described.get("shared_streams", pd.Series(False, index=described.index)).fillna(False)
                     .astype(bool).sum()) if kind == "private" else 0
        if shared:  # core.config.shared_noise_streams
            caveat = " ".join(filter(None, [caveat, (
                # "of these 7" beside the card's "Runs: 11" read as a contradiction: these are the runs its ε lists
                f"{shared} of the {len(described)} runs whose ε is listed were made before the noise had a random "
                "stream of its own "
                "(2026-11-27) and replayed numbers drawn elsewhere in the run: their ε is a measurement at their "
                "noise level, not a proven bound (see their statements).")]))
        cards.append({
            "method": method,
            "label": method_label(method),
            "kind": kind,
            "epsilon": ", ".join(dict.fromkeys(fmt_eps(e) for e in eps_values)) or "–",
            "delta": ", ".join(dict.fromkeys(fmt_delta(d) for d in deltas)) or "–",
            "unit": unit_text,
            "accountant": "; ".join(accountants) or "–",
            "runs": len(rows),
            "caveat": caveat,
            "note": "; ".join(notes),
        })
    return cards


# ----------------------------------------------------------------------------------------------------------------
# Canary exposure (Carlini et al. 2019): how far a model prefers an inserted number to the others it could have been
# ----------------------------------------------------------------------------------------------------------------


def exposure_table(metrics: Mapping[str, Any] | None, phrases: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per canary of a run (metrics.json's exposure_detail), with its phrase ε from phrases.csv (matched on
    the copies inserted) and the most exposure a canary can have, log2 of its candidates."""
    detail = [d for d in ((metrics or {}).get("exposure_detail") or []) if isinstance(d, Mapping)]
    eps_of = {as_float(r.get("inserted")): as_float(r.get("epsilon")) for r in phrases if r.get("kind") == "canary"}
    rows = []
    for d in detail:
        candidates, scored = as_int(d.get("candidates")), as_int(d.get("scored"))
        if candidates is None or candidates < 1:
            ranked = ""
        elif d.get("method") == "exact":
            ranked = f"all {candidates:,} candidates"
        else:
            ranked = f"{scored:,} sampled of {candidates:,}" if scored is not None else f"sampled of {candidates:,}"
        rows.append({
            "copies inserted": as_int(d.get("inserted")),
            "phrase ε": eps_of.get(as_float(d.get("inserted"))),
            "exposure (bits)": as_float(d.get("exposure")),
            # two decimals, as REPORT.md gives them (one read "0.2 to 0.2" for 0.21 to 0.24)
            "95% interval": (f"{low:.2f} to {high:.2f}" if (low := as_float(d.get("exposure_low"))) is not None
                             and (high := as_float(d.get("exposure_high"))) is not None else ""),
            "most possible": math.log2(candidates) if candidates and candidates > 0 else None,
            "ranked by": ranked,
        })
    return pd.DataFrame(rows)


def exposure_comparison(runs: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> pd.DataFrame:
    """Exposure per copies inserted (columns "1×", "10×", ...) of runs given as (record, metrics), one row each,
    ordered by method then ε; runs without an exposure are left out."""
    rows = []
    for record, metrics in runs:
        exposure = (metrics or {}).get("exposure")
        if not isinstance(exposure, Mapping) or not exposure:
            continue
        row = {"run": record["run_id"], "method": method_label(record["method"]), "run ε": record["epsilon"],
               "_order": (method_order(record["method"]), as_float(record["epsilon"]) or 0.0)}
        for copies in sorted(exposure, key=lambda k: as_float(k) or 0.0):
            row[f"{copies}×"] = as_float(exposure[copies])
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)
