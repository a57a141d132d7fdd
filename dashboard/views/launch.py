"""Launch: choose methods and privacy settings, see the noise they imply at once, start background jobs."""

import json
import math

import streamlit as st

from core.config import (
    ABLATIONS,
    LAPLACE_ABLATIONS,
    METHODS,
    PRESETS,
    ConfigError,
    check_delta_range,
    check_epsilon_range,
    device_refusal,
    device_setting,
    dpsgd_batch_size,
    fixed_epsilon,
    parse_number,
    preset_value,
)
from core.runs import jobs
from dashboard import estimate, launch_settings, loading, privacy_math, tables, widgets, wording

st.title("Launch runs")
st.caption("Each selected method becomes one background job (`python -m core job`); jobs queue and keep running "
           "when you reload or close the browser. The settings live in the URL: copy it to share them.")

ignored = launch_settings.init_launch_settings()
if ignored:
    st.warning("Ignored URL parameter(s): " + ", ".join(ignored))
if problem := jobs.max_jobs_problem():
    st.warning(problem)

# px: two fields side by side in the settings column of a wide page, one under the other on a narrow one (equal
# columns cut "Partition: random" to "ran" and broke "Candidate filter" mid-word at 900 px)
FIELD_WIDTH = 170


left, right = st.columns([1, 1], gap="large")
with left:
    st.multiselect("Method(s)", METHODS, key="launch_methods", format_func=wording.method_label,
                   help="Launching several methods queues one job per method.")
    chosen = st.session_state.get("launch_methods") or []
    # Pub-GPT and Pri-GPT take no epsilon: their privacy is fixed by the data they read (0 or inf)
    no_epsilon = bool(chosen) and all(fixed_epsilon(m) is not None for m in chosen)
    unused = " (not used by the chosen methods)" if no_epsilon else ""
    pair = widgets.wrapping_row()
    pair.text_input("ε (epsilon)", key="launch_eps", disabled=no_epsilon, width=FIELD_WIDTH,
                    help="target privacy loss; a positive number or inf" + unused)
    pair.text_input("δ (delta)", key="launch_delta", disabled=no_epsilon, width=FIELD_WIDTH,
                    help="e.g. 1e-6 (paper, App. G)" + unused)
    pair = widgets.wrapping_row()
    pair.selectbox("Preset", list(PRESETS), key="launch_preset", on_change=launch_settings.remember_preset,
                   args=("launch_preset",), width=FIELD_WIDTH,
                   help="tiny: seconds to minutes; quick: minutes (default, unless another page had a preset "
                        "chosen); paper: the whole corpus")
    # the Launch boxes check no range themselves: the config does, and its error disables the button
    widgets.count_input(pair, "Seed", min_value=None, key="launch_seed", width=FIELD_WIDTH)
    no_seqpate = "seqpate" not in chosen  # greyed out, as ε and δ are for methods that take none
    with st.container(border=True):
        st.markdown("**SeqPATE settings** (used by SeqPATE runs only"
                    + ("; choose SeqPATE to set them)" if no_seqpate else ")"))
        preset_for_help = st.session_state.get("launch_preset", "quick")
        default_teachers = preset_value(preset_for_help, "seqpate", "teachers")
        pair = widgets.wrapping_row()
        widgets.count_input(pair, "Teachers", optional=True, min_value=None, key="launch_teachers", disabled=no_seqpate,
                            placeholder=f"preset {default_teachers}", width=FIELD_WIDTH)
        pair.selectbox("Partition", ["random", "by-user"], key="launch_partition", disabled=no_seqpate,
                       width=FIELD_WIDTH,
                       help="by-user keeps each user's sentences in as few teachers as possible (App. F); it needs "
                            "many more users than teachers: quick's private set has 649 users, so its phrase runs "
                            "use 100 teachers")
        pair = widgets.wrapping_row()
        default_filter = preset_value(preset_for_help, "seqpate", "filter")
        # labels that do not change with the preset: a radio whose labels change is a new widget, and Streamlit
        # drops its choice when the preset changes (none shown selected, while top-p launched)
        pair.radio("Candidate filter", ["preset", "top-p", "top-k"], key="launch_filter_kind", horizontal=True,
                   disabled=no_seqpate, width="content",
                   format_func=lambda kind: "the preset's" if kind == "preset" else kind,
                   help="the student's own candidate set (public information) on which teachers are queried")
        if st.session_state.get("launch_filter_kind") == "preset":
            pair.caption(f"{preset_for_help}'s filter: {default_filter}", width=FIELD_WIDTH)
        kind = st.session_state.get("launch_filter_kind")
        # shown for one kind only, so kept for the session: a k typed, then Calculator and back, came back as the
        # default 50 (the value seeded before the box was first drawn outlived the box's own)
        if kind == "top-k":
            widgets.count_input(pair, "k", min_value=None, key="launch_top_k", disabled=no_seqpate, width=FIELD_WIDTH,
                                persist_state="session")
        elif kind == "top-p":
            widgets.float_input(pair, "p", decimals=launch_settings.TOP_P_DECIMALS, step=0.01, key="launch_top_p",
                                disabled=no_seqpate, width=FIELD_WIDTH, persist_state="session")
        st.selectbox("Ablation", ABLATIONS, key="launch_ablation", disabled=no_seqpate,
                     help="Table 3 of the paper: " + "; ".join(f"{name}: {what}"
                                                               for name, what in wording.ABLATION_MEANINGS.items()))

settings = launch_settings.save_launch_settings()
filter_spec = launch_settings.launch_filter_spec(settings)

configs = {}
errors = []
device_problem = device_refusal()  # jobs inherit SEQPATE_DEVICE from where the dashboard started
if device_problem:
    errors.append(f"{device_problem}: it is set where the dashboard started, and its jobs would fail. Restart the "
                  "dashboard without it, or with cpu, or with cuda on a machine with a GPU.")
if not settings["methods"]:
    errors.append("choose at least one method")
if empty := launch_settings.empty_boxes(settings):  # each box says so beneath it too
    errors.append(f"{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty: type a number")
for method in settings["methods"] if not empty else []:
    try:
        configs[method] = launch_settings.build_launch_config(
            method, settings["preset"], settings["eps"], settings["delta"], settings["teachers"], filter_spec,
            settings["partition"], settings["ablation"], settings["seed"],
        )
    except ConfigError as exc:
        errors.append(f"{wording.method_label(method)}: {exc}")

def seqpate_noise_box(cfg, eps: float, delta: float) -> list[str]:
    """The noise SeqPATE's config implies (Gaussian, or Laplace for its ablations), how it compares with the
    teachers' average, and a by-user partition's spread; returns the problems found (an impossible partition)."""
    problems: list[str] = []
    sp = cfg.seqpate
    with st.container(border=True):
        st.markdown("**SeqPATE noise** (calibrated before the first query)")
        if math.isinf(eps):
            st.warning("ε = ∞: no noise at all; the run is labelled non-private.")
        laplace = sp.ablation in LAPLACE_ABLATIONS
        row = widgets.wrapping_row()
        if laplace:
            with st.spinner("PLD accountant…"):
                scale = privacy_math.seqpate_laplace_scale(eps, delta, sp.query_budget)
            widgets.metric(row, "Laplace scale b", f"{scale:.4g}",
                           help="the -gaussian and -all ablations add Laplace noise of scale b to each entry: density "
                          "e^(-|x|/b) / (2b)")
            widgets.metric(row, "b / L1 sensitivity", f"{scale / 2:.4g}",
                           help="one teacher changes the sum by 2 in L1")
            widgets.metric(row, "b / M", f"{scale / sp.teachers:.4g}",
                           help=f"noise relative to the average of the M = {sp.teachers} teacher distributions")
        else:
            noise = privacy_math.seqpate_noise(eps, delta, sp.query_budget)
            widgets.metric(row, "noise multiplier z", f"{noise['z']:.4g}", help="std / L2 sensitivity")
            widgets.metric(row, "noise std σ", f"{noise['std']:.4g}",
                           help="σ = z·√2: one teacher changes the sum by √2")
            widgets.metric(row, "σ / M", f"{noise['std'] / sp.teachers:.4g}",
                           help=f"noise relative to the average of the M = {sp.teachers} teacher distributions")
        widgets.metric(row, "query budget Q", f"{sp.query_budget:,}",
                       help=f"from preset {cfg.preset}")
        # the noise std on the average distribution (a Laplace scale b has std √2·b)
        relative = (scale * math.sqrt(2) if laplace else noise["std"]) / sp.teachers if math.isfinite(eps) else 0.0
        if relative > 1:  # as the Calculator says: the teachers' average cannot stand out of this noise
            st.warning(f"Noise-dominated: the noise std on the teachers' average distribution is {relative:.4g}, "
                       "while a probability is at most 1: each answer the student gets is mostly noise, so what it "
                       "learns comes from the pseudo data, and its results barely move with ε. "
                       "More teachers, a larger ε or a smaller Q lower it.", icon=":material/warning:")
        if sp.partition == "by-user":
            try:
                split = privacy_math.by_user_partition(json.dumps(cfg.to_dict()["data"]), cfg.seed, sp.teachers)
            except (ValueError, OSError) as exc:  # e.g. more teachers than the paper preset's sentences
                problems.append(f"SeqPATE: {exc}")
            else:
                counts = split["histogram"]
                st.caption(f"By-user partition: {counts['1']:,} of {split['users']:,} private users in one "
                           f"teacher, {counts['mean']:.2f} teachers per user on average (Table 5; the run "
                           "records the same).")
                if split["note"]:
                    st.warning(split["note"], icon=":material/warning:")
        st.caption(f"{sp.teachers} teacher{'s' if sp.teachers != 1 else ''}, filter {sp.filter}, partition "
                   f"{sp.partition}, ablation {sp.ablation}; student λ {sp.kd_lambda:g}, lr {sp.student_lr:g} (preset "
                   f"{cfg.preset}). Querying stops after Q releases; accountant: "
                   + ("PLD (Laplace releases)." if laplace else "exact Gaussian composition."))
        if sp.filter in ("top-p:1", "top-p:1.0"):
            st.caption("top-p 1 keeps every token: no candidate filtering, the teachers are queried (and the "
                       "noise added) on the whole vocabulary.")
        elif sp.filter == "top-k:1":
            st.caption("top-k 1 keeps one candidate: the teachers' answer renormalised over it is always 1, so "
                       "the KL term teaches nothing while the queries still spend the budget (Table 4's top-k 1 "
                       "row measures the student without its teachers).")
    return problems


def dpsgd_noise_box(configs: dict, methods: list[str], eps: float, delta: float) -> None:
    """The noise multiplier, sampling rate and steps each DP-SGD method's run will calibrate."""
    with st.container(border=True):
        st.markdown("**DP-SGD noise** (calibrated before training, as each run will)")
        for method in methods:  # each its own batch: NoisySGD-GC+pseudo samples ghost clipping's large one
            cfg = configs[method]
            n, batch, epochs = cfg.data.private_train, dpsgd_batch_size(cfg), cfg.dpsgd.epochs
            if n is None:
                st.caption(f"{wording.method_label(method)}: preset paper uses the whole corpus, so the run "
                           "calibrates once the data is loaded.")
                continue
            q, steps = privacy_math.poisson_shape(n, batch, epochs)
            with st.spinner("PLD accountant…"):
                z = privacy_math.dpsgd_noise(eps, delta, q, steps)
            adp_note = (" (the smallest noise any batch gets, the one accounted: ADP's base σ is this divided by "
                        "the smallest batch weight, and each batch gets σ times its weight)")
            st.caption(wording.method_label(method) + (adp_note if method == "adp" else ""))
            row = widgets.wrapping_row()
            widgets.metric(row, "noise multiplier", f"{z:.4g}")
            widgets.metric(row, "sampling rate q", f"{q:.4g}",
                           help=f"1 / ceil(N / batch): expected batch {batch:,}, N {n:,}")
            widgets.metric(row, "steps", f"{steps:,}",
                           help=f"{epochs} epochs of int(1 / q) Poisson batches, as opacus draws them")


with right:
    st.subheader("What these settings mean")
    try:
        eps = parse_number(settings["eps"], "epsilon")
        delta = parse_number(settings["delta"], "delta", allow_inf=False)
        check_epsilon_range(eps)
        check_delta_range(delta)
        valid_privacy = True
    except ConfigError:
        eps = delta = None
        valid_privacy = False
    takes_epsilon = [m for m in settings["methods"] if fixed_epsilon(m) is None]
    if valid_privacy and takes_epsilon:
        st.markdown(wording.epsilon_reading(eps, delta, seqpate="seqpate" in settings["methods"]))
        if "adp" in settings["methods"] and math.isfinite(eps):  # a heuristic's ε (at ∞ it is simply not private)
            st.warning(wording.HEURISTIC_PRIVACY["adp"], icon=":material/warning:")
    elif takes_epsilon:
        st.caption("Shown once ε and δ are valid (see the error below).")
    if "seqpate" in configs:
        errors += seqpate_noise_box(configs["seqpate"], eps, delta)
    dpsgd = [m for m in configs if m in wording.DPSGD_METHODS]
    if dpsgd and valid_privacy and math.isinf(eps):  # as SeqPATE's box says at ε = ∞
        st.warning(f"ε = ∞: {', '.join(wording.method_label(m) for m in dpsgd)} add no noise at all; the runs are "
                   "labelled non-private.")
    elif dpsgd and valid_privacy:
        dpsgd_noise_box(configs, dpsgd, eps, delta)
    fixed = [m for m in settings["methods"] if fixed_epsilon(m) is not None]
    if fixed:
        its, they = ("its", "it reads") if len(fixed) == 1 else ("their", "they read")
        st.caption("ε and δ are not used by " + ", ".join(wording.method_label(m) for m in fixed) +
                   f": {its} privacy is fixed by the data {they} (public only: ε = 0; private without noise: "
                   "ε = ∞).")

for message in errors:
    st.error(message, icon=":material/error:")

# one listing of the runs for the two notes below (settings already run; how long), only where they show
infos = loading.list_infos() if configs and not errors else []
if configs and not errors:  # a second click, or settings a shipped run has: say so before computing them again
    runs = loading.runs_frame(infos)
    for method, cfg in configs.items():
        same = loading.runs_with_settings(runs, cfg.to_dict())
        if not same.empty:
            st.info(f"{wording.method_label(method)}: these settings have been run already: "
                    f"{loading.copies_listed(same)}. Launching adds another copy.", icon=":material/content_copy:")


def how_long(run_configs: dict, records: list[dict]) -> str:
    """How long finished runs (records) of these methods, preset and settings took (estimate.past_durations), their
    base model aside, and how long training that took (estimate.base_training), in one line."""
    parts = []
    for method, cfg in run_configs.items():
        target = cfg.privacy.epsilon if fixed_epsilon(method) is None else None
        wanted = {"preset": cfg.preset, "method": method, "epsilon_target": target,
                  "variant": loading.variant_label(loading.variant_settings(cfg.to_dict()))}
        past = estimate.past_durations(wanted, records)
        if not past:
            parts.append(f"{wording.method_label(method)}: no finished {cfg.preset} run to go by")
            continue
        run_id, took, its_eps = past[0]
        other_eps = f" at ε {wording.fmt_eps(its_eps)}" if target is not None and its_eps != target else ""
        # the others at that ε too: one run's time alone read as exact (quick's SeqPATE took 10m 27s to 12m 16s)
        times = [t for _, t, e in past if e == its_eps]
        low, high = estimate.fmt_duration(min(times)), estimate.fmt_duration(max(times))
        spread = f" (the {len(times)} such runs took {low} to {high})" if low != high else ""
        parts.append(f"{wording.method_label(method)}: about {estimate.fmt_duration(took)}, as {run_id}{other_eps} "
                     f"took{spread}")
    base = estimate.base_training(next(iter(run_configs.values())).preset, records)
    size = (f" (about {estimate.fmt_duration(base[1])}, the median of the {base[0]} finished run(s) that trained one)"
            if base else "")
    return ("How long, the base model aside: " + "; ".join(parts) + ". Where this machine has no base model for "
            f"this preset and seed yet (a fresh clone's first run), training one comes on top{size}, as does time "
            "waiting for other jobs; anything else busy on this machine's cores (another job, pages drawing "
            "charts) slows it down.")


n_jobs = len(configs)
if configs and not errors:
    st.caption(how_long(configs, loading.run_records(infos)))  # cached: the frame above read the same records
label = f"Launch {n_jobs} job{'s' if n_jobs != 1 else ''}" if n_jobs else "Launch"
if st.button(label, type="primary", disabled=bool(errors) or not configs, key="launch_button"):
    if errors or not configs:
        st.error("Nothing launched: fix the settings above first.")
    else:
        launched, failed, copies = [], [], []
        shipped = runs[runs["source"] == "cached"]
        for method, cfg in configs.items():
            of_shipped = not loading.runs_with_settings(shipped, cfg.to_dict()).empty
            try:
                launched.append(jobs.launch(cfg.to_dict()).run_id)
            except Exception as exc:  # noqa: BLE001 (shown to the user, the other jobs still go)
                failed.append(f"{wording.method_label(method)}: could not launch: {exc}")
            else:
                copies += [launched[-1]] if of_shipped else []
        if copies:  # the results pages show the shipped run of the same settings first: show the new one instead
            tables.show_made_here_in_place()
        st.session_state["launch_last"], st.session_state["launch_failed"] = launched, failed
        st.session_state["launch_in_place"] = copies
        st.rerun()  # drawn again, so the note on runs with these settings names the jobs just queued

for message in st.session_state.get("launch_failed", []):
    st.error(message, icon=":material/error:")
if st.session_state.get("launch_last"):
    ids = st.session_state["launch_last"]
    threads = jobs.launched_job_threads()
    where = "" if device_problem else (" on the GPU (`SEQPATE_DEVICE=cuda`)" if device_setting() == "cuda"
                                       else " on the CPU")
    in_place = st.session_state.get("launch_in_place") or []  # the jobs at a shipped run's settings
    st.success(f"Queued {len(ids)} job(s): " + ", ".join(f"`{i}`" for i in ids) + f". Jobs run "
               f"{jobs.max_parallel_jobs()} at a time (`SEQPATE_MAX_JOBS`), each with {threads} torch thread(s)"
               f"{where}; the others wait queued."
               + (f" Once done, the results pages show {', '.join(f'`{i}`' for i in in_place)} in place of the "
                  f"shipped run{'s' if len(in_place) > 1 else ''} of the same settings (\"{tables.MADE_HERE_TOGGLE}\" "
                  "is on, for every run made here; switch it off there to see the shipped ones)." if in_place else ""))
    st.page_link("views/runs.py", label="Watch them on the Runs page", icon=":material/list:")

with st.expander("Resolved config of the first method"):
    if configs:
        st.json(next(iter(configs.values())).to_dict(), expanded=False)
    else:
        st.caption("no valid config")
