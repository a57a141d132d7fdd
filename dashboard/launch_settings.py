"""The Launch page's settings: kept per session, written to the URL on every change and read back from a link
(st.query_params), and turned into one RunConfig per chosen method."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.config import (
    ABLATIONS,
    MAX_SEED,
    METHODS,
    PRESETS,
    ConfigError,
    RunConfig,
    fixed_epsilon,
    parse_filter,
    parse_number,
    preset_config,
)
from dashboard.widgets import LAST_PRESET, as_shown

LAUNCH_DEFAULTS: dict[str, Any] = {
    "methods": ["seqpate"],
    "eps": "3",
    "delta": "1e-6",
    "teachers": None,  # None: the preset's teacher count
    "filter_kind": "preset",  # preset (its own filter), top-p or top-k
    "top_p": 0.95,
    "top_k": 50,
    "partition": "random",
    "ablation": "none",
    "preset": "quick",
    "seed": 0,
}
_SHADOW = "_launch_settings"
COUNT_SETTINGS = ("teachers", "top_k", "seed")  # whole numbers, typed in count_input boxes
MAX_LAUNCH_COUNT = 10**9  # teachers and k: far above any corpus here, and a bound for the box and the URL
TOP_P_DECIMALS = 3  # the top-p box shows (and so launches) p to 3 decimals
_CARRIED = "_launch_carried_preset"  # the last preset chosen elsewhere that Launch has followed


def remember_preset(key: str) -> None:
    """A preset chosen on Launch: the other pages open on it (Launch follows theirs: init_launch_settings)."""
    st.session_state[LAST_PRESET] = st.session_state[_CARRIED] = st.session_state[key]


def build_launch_config(method: str, preset: str, epsilon: Any, delta: Any, teachers: int | None, filter_spec: str,
                        partition: str, ablation: str, seed: int) -> RunConfig:
    """The config the Launch page would start for one method (ConfigError if the engine refuses it).
    teachers None and filter_spec "" keep the preset's.

    SeqPATE settings (teachers, filter, partition, ablation) go only into SeqPATE runs, and epsilon and delta only
    into methods that take them (not the non-private references), so the configs of the other methods stay those of
    the preset and remain comparable.
    """
    overrides: dict[str, Any] = {"method": method, "seed": int(seed)}
    if fixed_epsilon(method) is None:
        overrides.update(privacy__epsilon=parse_number(epsilon, "epsilon"),
                         privacy__delta=parse_number(delta, "delta", allow_inf=False))
    if method == "seqpate":  # the other methods read no filter: one SeqPATE cannot use refuses nothing else
        if filter_spec:
            kind, value = parse_filter(filter_spec)
            if kind == "top-k" and value > MAX_LAUNCH_COUNT:
                raise ConfigError(f"top-k must be at most {MAX_LAUNCH_COUNT:,}, got {value:,}")
        if teachers is not None and teachers > MAX_LAUNCH_COUNT:
            raise ConfigError(f"teachers must be at most {MAX_LAUNCH_COUNT:,}, got {int(teachers):,}")
        overrides.update(seqpate__partition=partition, seqpate__ablation=ablation)
        if filter_spec:
            overrides["seqpate__filter"] = filter_spec
        if teachers is not None:
            overrides["seqpate__teachers"] = int(teachers)
    return preset_config(preset, **overrides)


def empty_boxes(settings: dict[str, Any]) -> list[str]:
    """The Launch boxes emptied, by label, whose number a run needs: the seed, and, where SeqPATE is chosen (no
    other method reads a filter; its boxes are greyed out then), the k or p of the filter kind chosen. An empty
    teachers box is the preset's count."""
    seqpate = "seqpate" in settings["methods"]
    needed = {"Seed": "seed", "k": "top_k" if seqpate and settings["filter_kind"] == "top-k" else None,
              "p": "top_p" if seqpate and settings["filter_kind"] == "top-p" else None}
    return [label for label, name in needed.items() if name is not None and settings[name] is None]


def launch_filter_spec(settings: dict[str, Any]) -> str:
    """'top-k:50' / 'top-p:0.95', or '' for the preset's own filter (also where no kind is chosen)."""
    if settings["filter_kind"] == "top-k" and settings["top_k"] is not None:  # None: an emptied box (empty_boxes)
        return f"top-k:{int(settings['top_k'])}"
    if settings["filter_kind"] == "top-p" and settings["top_p"] is not None:
        return f"top-p:{float(settings['top_p'])!r}"  # repr: :g kept 6 digits (0.9999999 became 1, no filtering)
    return ""


def settings_to_query(settings: dict[str, Any]) -> dict[str, str]:
    """The URL form: methods comma-separated, the filter as 'top-p:0.95', teachers and filter empty for the
    preset's."""
    return {
        "methods": ",".join(settings["methods"]),
        "eps": str(settings["eps"]),
        "delta": str(settings["delta"]),
        "teachers": "" if settings["teachers"] is None else str(int(settings["teachers"])),
        "filter": launch_filter_spec(settings),
        "partition": settings["partition"],
        "ablation": settings["ablation"],
        "preset": settings["preset"],
        "seed": "" if settings["seed"] is None else str(int(settings["seed"])),
    }


def settings_from_query(query: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Launch settings from URL parameters; unusable values are ignored and reported (one line each)."""
    settings = {k: (list(v) if isinstance(v, list) else v) for k, v in LAUNCH_DEFAULTS.items()}
    ignored: list[str] = []

    def get(name: str) -> str | None:
        value = query.get(name)
        if isinstance(value, list):
            value = value[-1] if value else None
        return None if value is None else str(value)

    if (raw := get("methods")) is not None:
        chosen = [m.strip() for m in raw.split(",") if m.strip()]
        good = [m for m in chosen if m in METHODS]
        ignored += [f"methods={m} (no such method)" for m in chosen if m not in METHODS]
        if good or not chosen:  # an empty list is a link to the page with nothing chosen yet
            settings["methods"] = list(dict.fromkeys(good))
    for name in ("eps", "delta"):
        if (raw := get(name)) is not None and not raw.strip():
            ignored.append(f"{name}= (empty: {LAUNCH_DEFAULTS[name]} kept)")  # a link's, or a box left empty
        elif raw is not None:
            if len(raw.strip()) <= 40:
                settings[name] = raw.strip()  # validated (with a clear error) like anything typed
            else:  # cutting it would launch another number than the link's
                ignored.append(f"{name}={raw.strip()[:20]}… (over 40 characters)")
    if (raw := get("teachers")) is not None and raw.strip():
        try:
            value = int(raw)
            if not 1 <= value <= MAX_LAUNCH_COUNT:
                raise ValueError
            settings["teachers"] = value
        except ValueError:
            ignored.append(f"teachers={raw} (not a whole number from 1 to {MAX_LAUNCH_COUNT:,})")
    if (raw := get("filter")) is not None and raw.strip() == "preset":
        settings["filter_kind"] = "preset"
    elif raw is not None and raw.strip():
        try:
            kind, value = parse_filter(raw.strip())
            if kind == "top-p" and as_shown(value, TOP_P_DECIMALS) != value:
                raise ConfigError("more digits than the top-p box shows")  # it would launch the rounded p
            if kind == "top-k" and value > MAX_LAUNCH_COUNT:
                raise ConfigError("more than the k box takes")
            settings["filter_kind"] = kind
            settings["top_p" if kind == "top-p" else "top_k"] = value
        except ConfigError as exc:
            ignored.append(f"filter={raw} ({exc})")
    for name, options in (("partition", ("random", "by-user")), ("ablation", ABLATIONS), ("preset", tuple(PRESETS))):
        if (raw := get(name)) is not None:
            if raw in options:
                settings[name] = raw
            else:
                ignored.append(f"{name}={raw} (not one of {', '.join(options)})")
    if (raw := get("seed")) is not None and not raw.strip():  # a box left empty (a link copied then), as ε's
        ignored.append(f"seed= (empty: {LAUNCH_DEFAULTS['seed']} kept)")
    elif raw is not None:
        try:
            seed = int(raw)
        except ValueError:
            seed = -1
        if 0 <= seed <= MAX_SEED:  # the Seed box's range
            settings["seed"] = seed
        else:
            ignored.append(f"seed={raw} (not a whole number from 0 to {MAX_SEED:,})")
    known = settings_to_query(settings)  # the parameters this page writes; any other one would vanish unseen
    unknown = [name for name in query if name not in known]  # named, their values not echoed
    if unknown:
        what = "not a Launch setting" if len(unknown) == 1 else "not Launch settings"
        ignored.append(f"{', '.join(unknown)} ({what}; these are {', '.join(known)})")
    return settings, ignored


WIDGET_PREFIX = "launch_"  # the Launch widgets' keys: launch_preset, launch_top_k, ...


def init_launch_settings() -> list[str]:
    """Seed the Launch widgets' session state: from this session's last settings, else from the URL.

    Returns the URL parameters that were ignored (only on the first load of a session)."""
    ignored: list[str] = []
    last = st.session_state.get(LAST_PRESET)  # the preset last chosen on a page, which the other pages open on
    if _SHADOW not in st.session_state:
        query = st.query_params.to_dict()
        settings, ignored = settings_from_query(query)
        st.session_state[_SHADOW] = settings
        if "preset" in query:  # a link's preset wins over one chosen earlier in the session
            st.session_state[_CARRIED] = last
    if last in PRESETS and last != st.session_state.get(_CARRIED):  # chosen elsewhere since: followed
        st.session_state[_SHADOW]["preset"] = st.session_state[WIDGET_PREFIX + "preset"] = last
        st.session_state[_CARRIED] = last
    for name, value in st.session_state[_SHADOW].items():
        if WIDGET_PREFIX + name not in st.session_state:
            if name in COUNT_SETTINGS and value is not None:
                value = float(value)  # their boxes are count_input's float boxes
            st.session_state[WIDGET_PREFIX + name] = list(value) if isinstance(value, list) else value
    return ignored


def save_launch_settings() -> dict[str, Any]:
    """Read the widgets' values, remember them for this session and write them to the URL."""
    settings = {name: st.session_state.get(WIDGET_PREFIX + name, default) for name, default in LAUNCH_DEFAULTS.items()}
    for name in COUNT_SETTINGS:
        if settings[name] is not None:
            settings[name] = int(as_shown(settings[name], 0))  # the whole number its count_input box shows
    if settings["top_p"] is not None:  # None: an emptied box (a count box may be empty as well)
        settings["top_p"] = as_shown(settings["top_p"], TOP_P_DECIMALS)  # the p its box shows
    st.session_state[_SHADOW] = settings
    query = settings_to_query(settings)
    current = st.query_params.to_dict()
    # a bare /launch showing the defaults stays bare: Streamlit pushes a browser history entry for each new query
    # string, so writing them on arrival made Back take two presses to leave the page
    if current != query and (current or query != settings_to_query(LAUNCH_DEFAULTS)):
        st.query_params.from_dict(query)
    return settings


def synth_job_configs(generators: list[str], epsilon_text: str, preset: str, seed: int) -> list[dict[str, Any]]:
    """The config.json bodies of synthetic-data runs, one per generator: what `python -m core synth --generator G
    --epsilon E --preset P --seed S` writes (core.runs.jobs.launch takes them; `core job` rebuilds the run from
    them). A bad setting is a ConfigError; the labelled data are read once (a few seconds), so a data problem shows
    before a job starts."""
    import argparse
    from dataclasses import replace

    from core.synth.command import config_from_args
    from core.synth.job import prepare_job

    if not generators:
        raise ConfigError("choose at least one generator")
    flags = [argparse.Namespace(config=None, generator=g, epsilon=epsilon_text, preset=preset, seed=seed, corpus=None)
             for g in generators]
    settings = [config_from_args(f) for f in flags]  # every setting checked before the data are read
    job = prepare_job(*settings[0])  # the data do not depend on the generator
    return [replace(job, cfg=cfg).config_dict() for cfg, _ in settings]
