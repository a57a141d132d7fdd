"""Input widgets the pages share: the preset and seed pickers that follow the reader from page to page and
into the URL, lazy tabs, number and text boxes that use the number they show, and rows of metrics that wrap."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pandas as pd
import streamlit as st

from core.config import PRESETS, ConfigError, check_delta_range, check_epsilon_range, parse_number
from core.runs import registry
from dashboard.loading import main_preset, seeds_of
from dashboard.wording import OPTION_SEPARATOR

# The last preset and seed chosen on any page (session-wide), which the other pages' pickers open on.
LAST_PRESET = "_last_preset"  # also followed by Launch (launch_settings.init_launch_settings)
_LAST_SEED = "_last_seed"
LAST_SETUP = "_last_setup"  # also followed by Export (its report opens on a run of it)


def remember_shared(key: str, shared: str) -> None:
    st.session_state[shared] = st.session_state[key]


def preset_picker(df: pd.DataFrame, key: str) -> str | None:
    """A selectbox of the presets present in df, defaulting to the one with the most runs."""
    presets = sorted(df["preset"].dropna().unique(), key=lambda p: list(PRESETS).index(p) if p in PRESETS else 99)
    if not presets:
        return None
    return carried_picker("Preset", list(presets), main_preset(df), key, LAST_PRESET,
                          help="Runs are only comparable within one preset (same data sizes and model).")


_OPENED_LINK = "_opened_link"  # the URL's parameters when the session opened the app


def opened_link_value(key: str) -> str | None:
    """The value a link named for this page's picker `key`, once: the URL's parameters are kept as the session
    opened the app, and each is handed out one time. So a link's value is judged on opening it, and a parameter the
    page itself wrote (a seed chosen, then left behind by a preset with one seed) is never taken for a link."""
    if _OPENED_LINK not in st.session_state:
        st.session_state[_OPENED_LINK] = st.query_params.to_dict()
    return st.session_state[_OPENED_LINK].pop(key, None)


def linked_run_picker(label: str, ids: list[str], key: str, default: str, format_func: Callable[[str], str],
                      what: str, first: str | None = None) -> str:
    """A run selectbox bound to the URL, so a reload or a shared link keeps the run: `first` (a run to show now)
    where given, else the run the opening link names, else the one chosen in this session, else `default`.
    Streamlit writes the option's label to the URL, which starts with the run id (wording.OPTION_SEPARATOR); a
    link may name the id alone. Seeded through session state, not `index`: Streamlit drops a bound parameter
    equal to the default from the URL. A link naming no run of `ids` is said to be `what` is not, not dropped."""
    linked = opened_link_value(key)
    linked_id = linked.split(OPTION_SEPARATOR)[0] if linked else None
    if first in ids:
        st.session_state[key] = first
    elif linked_id in ids:
        st.session_state[key] = linked_id
    elif st.session_state.get(key) not in ids:
        st.session_state[key] = default
    run_id = st.selectbox(label, ids, key=key, bind="query-params", format_func=format_func)
    if linked is not None and linked_id not in ids:
        st.warning(f"The link's {key}={linked} is not {what} here: showing {run_id}.", icon=":material/link_off:")
    return run_id


def carried_picker(label: str, options: list, default: Any, key: str, shared: str, help: str) -> Any:
    """A selectbox bound to the URL (a choice made on the page, or named by a link, is in the URL, so a link shows
    the same runs) that opens on the choice last made on another page (session_state[shared]) where this page has
    it, else on default. A value carried from another page stays out of the URL: Streamlit writes a bound widget's
    value there only once the reader changes it, and refuses st.query_params for it."""
    last = st.session_state.get(shared)
    opening = last if last in options else default if default in options else options[0]
    linked = opened_link_value(key)  # Streamlit drops a link's value that is not an option, without a word
    choice = st.selectbox(label, options, index=options.index(opening), key=key, bind="query-params",
                          on_change=remember_shared, args=(key, shared), help=help)
    if linked is not None and linked != str(choice):
        st.warning(f"The link's {key}={linked} is not one of this page's choices "
                   f"({', '.join(str(o) for o in options)}): showing {choice}.", icon=":material/link_off:")
    if key in st.query_params:  # set by a link: no on_change is called, yet the other pages should follow it
        st.session_state[shared] = choice
    return choice


def setup_picker(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """The runs of one data set and base model (loading.setup_label), the shipped chitchat one by default; only
    asked when df holds several. A walk's AirDialog SeqPATE run (PPL 2.1) stood on the axes of tiny's chitchat
    runs (about 980): runs on another corpus completed other test sentences."""
    setups = sorted(df["setup"].dropna().unique(), key=lambda c: (c != "chitchat", c)) if "setup" in df else []
    if len(setups) < 2:
        return df
    choice = carried_picker("Data and base model", setups, setups[0], key, LAST_SETUP,
                            help="Each option is a corpus (chitchat, or a file of yours) with the settings its runs "
                                 "change from the preset's: data sizes, or the base model (model.source: a GPT-2 "
                                 "checkout). Runs of two options completed other test sentences, or started from "
                                 "other models, so their numbers do not compare: the page shows one option's runs.")
    shown = df[df["setup"] == choice]
    others = len(df) - len(shown)
    st.caption(f"This preset's runs on {choice} only: {others:,} other run{'s' if others != 1 else ''} of it "
               f"{'are' if others != 1 else 'is'} on the other options of this picker.")
    return shown


EVERY_SEED = "every seed (mean)"


def seed_picker(df: pd.DataFrame, key: str, every: bool = True) -> pd.DataFrame:
    """The runs of one seed, the lowest by default (as REPORT.md's tables), or (every=True) of every seed; only asked
    when df holds several. Another seed is another user split and base model (quick's Pub-GPT: 223.8, 198.3, 202.3),
    a spread larger than most gaps between methods, so numbers are compared within a seed unless the reader asks."""
    seeds = seeds_of(df)
    if len(seeds) < 2:  # no picker: a link's seed other than the one these runs have is named, not dropped silently
        linked = opened_link_value(key)
        if linked is not None and [str(s) for s in seeds] != [linked]:
            st.warning(f"The link's {key}={linked} is not a seed of these runs: showing "
                       + (f"seed {seeds[0]}, their only one." if seeds else "them (they record no seed)."),
                       icon=":material/link_off:")
            try:  # and out of the URL, so that a copied link does not carry it on (no widget holds it here)
                del st.query_params[key]
            except Exception:  # noqa: BLE001 (Streamlit refuses it while a widget is bound to the key: kept)
                pass
        return df
    options = [*seeds, EVERY_SEED] if every else seeds
    choice = carried_picker("Seed", options, seeds[0], key, _LAST_SEED,
                            help="Another seed splits the users anew and trains another base model: compare methods "
                                 "within one seed."
                                 + (" 'Every seed' averages the seeds each row has (see its seeds)." if every else
                                    " Another seed's runs completed other test prefixes."))
    return df if choice == EVERY_SEED else df[df["seed"] == choice]


def lazy_tabs(views: dict[str, Callable[[], None]], key: str) -> None:
    """Tabs (label -> function drawing its content) of which only the open one is built and sent.

    A first visit then loads the browser code of the first tab's elements only: plotly.js (4.7 MB) and the data grid
    cost about 1.1 s and 0.3 s of a cold load on 2 cores (benchmarks/RESULTS.md). Switching tabs reruns the page;
    the open tab is kept in the URL, so a link opens it. A closed tab's widgets are not rendered, and Streamlit
    forgets the value of a widget that is not rendered: widgets inside a tab take persist_state="page".
    """
    tabs = st.tabs(list(views), key=key, on_change="rerun", bind="query-params")
    for tab, view in zip(tabs, views.values(), strict=True):
        if tab.open:
            with tab:
                view()


def as_shown(value: float, decimals: int) -> float:
    """The number a box with format %.<decimals>f shows: JavaScript's toFixed rounds the exact binary value half
    up (2.5 -> 3, 0.125 -> 0.13), where Python's round and % round half to even."""
    if not abs(value) < 2**53:  # whole already (Decimal's 28 digits could not quantize 1e30 either)
        return value
    return float(Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


# What a number box takes at all: below 2^53 (JavaScript's exact whole numbers), above every bound a page checks.
BOX_LIMIT = 1e15


def _range_error(label: str, number: float, min_value: float | None, max_value: float | None,
                 decimals: int, typed: float | None = None) -> str | None:
    """Why a box's number is out of its range, or None; `typed`, where it differs from the number shown, is named
    too (a typed 0.001 shows as 0.00, which alone read as a number nobody typed)."""
    def shown(value: float) -> str:
        return f"{value:,.{decimals}f}"

    keeps = "whole numbers" if decimals == 0 else f"{decimals} decimals"
    got = shown(number) + (f" (you typed {typed:.15g}; the box keeps {keeps})" if typed is not None and typed != number
                           else "")
    if (min_value is not None and number < min_value) or (max_value is not None and number > max_value):
        if min_value is not None and max_value is not None:
            return f"{label} must be from {shown(min_value)} to {shown(max_value)}, got {got}"
        bound = f"at least {shown(min_value)}" if min_value is not None else f"at most {shown(max_value)}"
        return f"{label} must be {bound}, got {got}"
    return None


# px: st.metric's value font fits 7 characters ("0.09764") and a label such as "noise multiplier z" with its help
METRIC_WIDTH = 160


def wrapping_row() -> Any:
    """A row of fixed-width elements (metrics of METRIC_WIDTH, Launch's fields) that wraps on a narrow screen:
    equal st.columns kept four or five side by side at 900 px and cut the numbers the Launch page and the
    Calculator exist to show to "69…"."""
    return st.container(horizontal=True, wrap=True)


def metric(row: Any, label: str, value: str, help: str | None = None) -> None:
    """One metric of a wrapping_row; a value too long for METRIC_WIDTH (the Calculator's 10^12 queries) as wide as
    it needs, rather than cut to '1,000,00…'."""
    row.metric(label, value, help=help, width=METRIC_WIDTH if len(value) <= 8 else "content")


def float_input(where: Any, label: str, *, key: str, decimals: int = 2, min_value: float | None = None,
                max_value: float | None = None, optional: bool = False, **kwargs: Any) -> float | None:
    """st.number_input whose value is the number it shows: Streamlit shows a float box through its format but
    returns what was typed, so a typed ε 0.015 showed 0.01 and was used as 0.015, and top-p 0.999 showed 1.00.

    The range is checked here, not by the box: given min/max, Streamlit's box turns red at a number outside them
    and keeps the last one without a word (a typed 0 teachers launched the preset's 10). A number outside
    [min_value, max_value] is named in an error under the box and read as None; the box itself only refuses what
    no page could use (beyond ±BOX_LIMIT, e.g. 1e400).

    An emptied box reads None, with an error under it unless `optional` (Launch's teachers: empty is the preset's)
    or disabled.
    Streamlit hands back a box's default for an empty one (its min_value where none is given: a cleared σ read
    -10^15, a cleared Q silently the default 2,000), so the default `value` goes in through session state."""
    default = kwargs.pop("value", None)
    if key not in st.session_state and default is not None:
        st.session_state[key] = default
    number = where.number_input(label, format=f"%.{decimals}f", min_value=-BOX_LIMIT, max_value=BOX_LIMIT,
                                value=None, key=key, **kwargs)
    if number is None:
        if not optional and not kwargs.get("disabled"):  # a greyed-out box is read by nothing (Launch's k, p)
            where.error(f"{label} is empty: type a number", icon=":material/error:")
        return None
    typed, number = number, as_shown(number, decimals)
    if problem := _range_error(label, number, min_value, max_value, decimals, typed):
        where.error(problem, icon=":material/error:")
        return None
    return number


def count_input(where: Any, label: str, *, key: str, min_value: int | None = 1, max_value: int | None = None,
                step: int = 1, **kwargs: Any) -> int | None:
    """st.number_input for a whole number that reads what was typed. Streamlit parses a whole-number box with
    parseInt, so a typed 1e9 became 1 (the Calculator then answered for one query, and 1e3 teachers launched one);
    a float box that shows no decimals reads 1e9 as 10^9. Its value is the whole number it shows; one outside
    [min_value, max_value], or none (an emptied box), is named under the box and read as None (float_input)."""
    if kwargs.get("value") is not None:
        kwargs["value"] = float(kwargs["value"])
    number = float_input(where, label, key=key, decimals=0,
                         min_value=None if min_value is None else float(min_value),
                         max_value=None if max_value is None else float(max_value), step=float(step), **kwargs)
    return None if number is None else int(number)


def epsilon_input(where: Any, label: str = "ε", *, key: str, default: str = "3", **kwargs: Any) -> float | None:
    """ε typed as text, as on the Launch page, with the engine's range (MIN_EPSILON to MAX_EPSILON); None (with
    the reason shown) when it is not usable. A number box of 2 decimals turned a typed 0.005 into 0.01 and 2.345
    into 2.35, so the Calculator answered for another ε than Launch did."""
    text = where.text_input(label, value=default, key=key, **kwargs)
    try:
        epsilon = parse_number(text, "ε")
        check_epsilon_range(epsilon, "ε")
    except ConfigError as err:
        where.error(str(err))
        return None
    if math.isinf(epsilon):  # in range for a run (no noise), but nothing for a calculator to compute
        where.error("ε = ∞ means no noise: there is nothing to calculate.")
        return None
    return epsilon


def delta_input(where: Any, label: str = "δ", *, key: str, default: str = "1e-6", **kwargs: Any) -> float | None:
    """δ typed as text, as on the Launch page ('1e-6'), checked against the range the engine honours; None (with
    the reason shown) when it is not usable. A number box showed 1.26e-7 as 1.3e-7 and its steppers jumped."""
    text = where.text_input(label, value=default, key=key, **kwargs)
    try:
        delta = parse_number(text, "δ", allow_inf=False)
        check_delta_range(delta, "δ")
    except ConfigError as err:
        where.error(str(err))
        return None
    return delta


def no_runs(what: str = "finished runs") -> None:
    st.info(f"No {what} yet. Start one on the Launch page, or put finished runs in "
            f"`{registry.cached_root()}`.", icon=":material/hourglass_empty:")


def csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode("utf-8")
