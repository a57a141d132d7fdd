"""Runs: every live and cached run with progress; cancel, delete, rerun; log tail; compare two configs."""

import time

import pandas as pd
import streamlit as st

from core.config import ConfigError, effective_hash
from core.runs import RunError, jobs
from core.runs.store import RunDir
from core.runs.values import as_str  # a record's text field, or None (pandas 3 holds a missing one as NaN)
from dashboard import estimate, loading, tables, widgets, wording

DP_SGD_PROGRESS_NOTE = ("DP-SGD and ADP log no loss of their private training: a batch's loss is computed from "
                        "private sentences without noise, so no epsilon would cover it.")
PUBLIC_LOSSES_NOTE = " Losses shown come from public stages (base model, pseudo-data warm-up)."
SYNTH_PROGRESS_NOTE = ("A synthetic-data run logs its DP fine-tuning loss per epoch, averaged over private batches "
                       "without noise: outside its ε, as its privacy statement (statement.md) says.")
NO_STUDENT_LOSS_NOTE = ("This run logged no student loss: SeqPATE runs made before 2026-11-26, the shipped ones among "
                        "them, logged only the warm-up's; runs made since log their student's loss per epoch.")
FLASH_SECONDS = 20  # how long a note on a cancel, delete or rerun stays (the table refreshes every 2 s meanwhile)

st.title("Runs")

infos = loading.list_infos()
active = any(info.state in loading.ACTIVE_STATES and info.source == "live" for info in infos)


def live_runs(run_infos) -> tuple[tuple[str, str | None], ...]:
    return tuple((info.run_id, info.state) for info in run_infos if info.source == "live")


def live_states(df) -> list[tuple[str, str]]:
    """(run id, state) of the runs made here, in the runs frame's terms."""
    live = df[df["source"] == "live"]
    return sorted(zip(live["run_id"], live["state"], strict=True))


STATES_AT_LOAD = live_states(loading.runs_frame(infos)) if active else []  # run_records is cached: no extra read


@st.fragment(run_every=5)
def watch_while_idle(shown: tuple) -> None:
    """With no job queued or running the table is not polled; a job launched elsewhere (another tab, the command
    line) or a run deleted there reloads the page, which then polls while the job runs."""
    if live_runs(loading.list_infos()) != shown:
        st.rerun()


def confirmed(question: str, yes: str, key: str) -> bool:
    """Ask before a delete or a rerun: True once `yes` is clicked; "Keep" (or another run) drops the question."""
    st.warning(question)
    buttons = st.container(horizontal=True)  # as wide as their labels: columns cut "Yes, delete" to "Yes,…" at 900 px
    y, n = buttons.empty(), buttons.empty()
    if n.button("Keep", key=f"{key}_no"):
        st.session_state.pop("runs_confirm", None)
        st.rerun()
    if y.button(yes, key=f"{key}_yes", type="primary"):
        st.session_state.pop("runs_confirm", None)
        return True
    return False


def flash(message: str) -> None:
    """A note on how a cancel, delete or rerun went, shown for FLASH_SECONDS: shown once, it was gone at the next
    2 s refresh while a job runs, and a rerun starts one."""
    st.session_state["runs_flash"] = (message, time.monotonic())


def act(action, run, done: str, failed: str) -> None:
    """A confirmed cancel or delete; the page reloads and says how it went."""
    try:
        action(run)
        flash(done)
    except (RunError, OSError) as exc:  # OSError: a folder that cannot be written (its cancel marker failed unseen)
        flash(f"{failed}: {exc}")
    st.rerun()


def how_it_went(record: dict) -> str:
    """How the run to be rerun went, as a sentence for the question (a cancelled run did not "take" 34 s)."""
    took = estimate.fmt_duration(record["elapsed_s"]) if wording.present(record["elapsed_s"]) else None
    state, stage = record["state"], as_str(record["stage"]) or "?"
    if state == "done":
        return f" The original took {took}." if took else ""
    if state in ("failed", "cancelled"):
        return f" The original {'failed' if state == 'failed' else 'was cancelled'} at stage {stage}" + (
            f" after {took}." if took else ".")
    if state == "running":
        return f" The original is still running (stage {stage}{f', {took} so far' if took else ''})."
    return f" The original is still {state}." if state else ""


@st.fragment(run_every=2 if active else None)
def live_view() -> None:
    df = loading.runs_frame()
    if df.empty:
        widgets.no_runs("runs")
        return
    still_active = bool(((df["state"].isin(loading.ACTIVE_STATES)) & (df["source"] == "live")).any())
    if active and live_states(df) != STATES_AT_LOAD:
        # a job started, ended or appeared: a full rerun brings the rest of the page (Compare's runs and their
        # numbers) up to date, and stops the polling once the last job has ended
        st.rerun()
    view = filtered_runs(df)
    runs_table(view, df, still_active)

    st.subheader("Run details")
    records = {r["run_id"]: r for r in df.to_dict("records")}
    ids = list(view["run_id"])
    if not ids:  # details of a run the filters hide would look like a match
        st.caption("No run matches the filters above.")
        return
    run_id = chosen_run(ids, records)
    record = records[run_id]
    if (st.session_state.get("runs_confirm") or (None, run_id))[1] != run_id:
        st.session_state.pop("runs_confirm", None)  # a question about another run is dropped, not kept for later
    run = loading.get_run(run_id)
    run_summary(record, run)
    run_actions(record, run)
    log_and_progress(record, run)


def filtered_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The runs the Source, State and Search filters keep."""
    # a row that wraps: in three columns at 900 px the Source pills were cut to "sh" (and a multiselect's chips
    # to "l ×", hence pills)
    row = widgets.wrapping_row()
    sources = row.pills("Source", ["live", "cached"], selection_mode="multi", default=["live", "cached"],
                        format_func=wording.SOURCE_NAMES.get, key="runs_sources", width="content") or []
    states = row.multiselect("State", ["queued", "running", "done", "failed", "cancelled"], key="runs_states",
                             placeholder="all states", width=200)
    search = row.text_input("Search", key="runs_search", placeholder="run id or method", width=240).strip()
    view = df[df["source"].isin(sources)]
    if states:
        view = view[view["state"].isin(states)]
    if search:  # the id, the method's name or the label the table shows ("Adaptive DP" as well as adp)
        needle = search.lower()
        methods = view["method"].fillna("")
        view = view[view["run_id"].str.lower().str.contains(needle, regex=False)
                    | methods.str.lower().str.contains(needle, regex=False)
                    | methods.map(wording.method_label).str.lower().str.contains(needle, regex=False)]
    return view


def runs_table(view: pd.DataFrame, df: pd.DataFrame, still_active: bool) -> None:
    """The table of the runs shown, and a caption counting them by state."""
    # what a watcher looks for first on the left: where the run is (at 1024 px, a projector's, only the first six
    # columns show)
    table = pd.DataFrame({
        "run": view["run_id"],
        "state": view["state"],
        "progress": view["progress"].round(2),  # whole percents, as the run details show
        # only a run still to finish has time remaining: a finished one's is blank, not "0.0 min"
        "remaining": (view["remaining_s"] / 60).where(view["state"].isin(loading.ACTIVE_STATES)),
        "method": view["method"].map(wording.method_label),
        "preset": view["preset"],
        "seed": view["seed"],
        "ε": view["epsilon"],  # a number, so that the column sorts as one
        "δ": view["delta"].map(wording.fmt_delta),
        "elapsed": view["elapsed_s"] / 60,  # minutes as numbers, so that the columns sort as numbers
        "stage": view["stage"],
        "source": view["source"].map(wording.SOURCE_NAMES).fillna(view["source"]),
        "created": view["created"].fillna("").str.slice(0, 19).str.replace("T", " "),
        "error": view["error"].fillna(""),
    })
    if not table["error"].astype(bool).any():  # the widest column, mostly empty: the table fits the page without it
        table = table.drop(columns="error")
    if view["setup"].nunique() > 1:  # runs on a corpus or base model of the user's own among chitchat's
        table.insert(table.columns.get_loc("seed"), "data and model", view["setup"])
    # widths in pixels: the ten columns up to "elapsed" fit the 940 px a 1400 px window leaves the table (Streamlit
    # sized them to their content); a run id cut short is whole in its tooltip, and stays in view when the table
    # scrolls sideways (pinned)
    st.dataframe(table, hide_index=True, width="stretch", placeholder="", column_config={  # a missing value is blank
        "run": st.column_config.TextColumn(width=200, pinned=True),
        "method": st.column_config.TextColumn(width=120),
        "preset": st.column_config.TextColumn(width=60),
        "data and model": st.column_config.TextColumn(width=120, help="the corpus, and any data size or base-model "
                                                      "setting changed from the preset: runs are compared within one"),
        "seed": st.column_config.NumberColumn(width=50),
        "ε": st.column_config.NumberColumn(format="%.3g", width=60, help="accounted ε (a run not yet finished: the ε "
                                           "it is calibrated for; a cancelled or failed run that recorded no "
                                           "privacy events: blank, its config is under its details); Infinity: not "
                                           "private"),
        "δ": st.column_config.TextColumn(width=65, help="δ of the (ε, δ) guarantee (0: no δ term; –: none at ε = ∞); "
                                         "the synthetic-data runs' is 1/|train|, as in their paper"),
        "state": st.column_config.TextColumn(width=80),
        "progress": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="percent", width=110),
        "elapsed": st.column_config.NumberColumn(format="%.1f min", width=85),
        "remaining": st.column_config.NumberColumn(format="%.1f min", width=90, help="estimated: paced on a finished "
                                                   "run of the same method and preset where there is one (the run's "
                                                   "details name it and say why), else from the progress so far"),
        "source": st.column_config.TextColumn(width=85),
    })
    counts = view["state"].value_counts().to_dict()  # of the rows shown, as the table
    shown = [f"{len(view):,} of {len(df):,} runs shown"] if len(view) < len(df) else []
    st.caption(" · ".join(shown + [f"{state}: {n}" for state, n in counts.items()]) +
               ("  —  refreshing every 2 s while jobs run" if still_active else ""))



def chosen_run(ids: list[str], records: dict[str, dict]) -> str:
    """The run whose details show: a run just launched by Rerun, else the one chosen (or named by the URL, where
    Streamlit writes the option's label, which starts with the run id: its state and progress move on), else the
    first active one."""
    default = next((i for i in ids if records[i]["state"] in loading.ACTIVE_STATES), ids[0])
    return widgets.linked_run_picker("Run", ids, "runs_selected", default,
                                     lambda i: wording.run_option_label(records[i], live=True), "a run",
                                     first=st.session_state.pop("runs_select_next", None))


def run_summary(record: dict, run: RunDir) -> None:
    """State, progress, times; a failed run's error and traceback, a finished run's guarantee and statement."""
    row = widgets.wrapping_row()  # wraps on a narrow page (equal columns cut 'running' to 'run…')
    # the stage under the state, in small type: stage names ("private-finetune", a method's name) are long
    row.metric("state", record["state"], delta=f"stage: {(as_str(record['stage']) or '–')}", delta_color="off",
               delta_arrow="off", width=widgets.METRIC_WIDTH)
    widgets.metric(row, "progress", f"{record['progress']:.0%}")
    computed_on = {"cpu": "on the CPU", "cuda": "on the GPU"}.get(record.get("device") or "")
    row.metric("elapsed", estimate.fmt_duration(record["elapsed_s"]), delta=computed_on, delta_color="off",
               delta_arrow="off", width=widgets.METRIC_WIDTH)
    # blank once it ended, as in the table
    remaining = record["remaining_s"] if record["state"] in loading.ACTIVE_STATES else None
    widgets.metric(row, "remaining (est.)", estimate.fmt_duration(remaining), help=estimate.estimate_help(record))
    if record["state"] == "failed":
        st.error(f"Failed at stage {(as_str(record['stage']) or '?')}: "
                 f"{(as_str(record['error']) or 'no error recorded')}",
                 icon=":material/error:")
        trace = run.read_text("traceback.txt")
        if trace:
            with st.expander("Traceback"):
                st.code(trace, language="text")
    elif record["state"] == "done" and record["has_privacy"]:
        if wording.is_synth_method(record["method"]):  # no PPL or BLEU: the classifier trained on its synthetic set
            m = loading.read_shown(run, "metrics") or {}
            utility = (f"  ·  accuracy on real test text {wording.fmt_num(m.get('accuracy_synthetic'), 3)} "
                       f"(real train data: {wording.fmt_num(m.get('accuracy_real'), 3)})  ·  Synthetic data page")
        else:
            utility = f"  ·  PPL {wording.fmt_num(record['ppl'])}  ·  BLEU-4 {wording.fmt_num(record['bleu4'])}"
        st.caption(wording.privacy_statement(record["epsilon"], record["delta"], record["unit"], record["method"],
                                             record["privacy_target"], bool(record["shared_streams"]),
                                             record["epsilon_target"]) + utility)
        statement = run.read_text("statement.md")
        if statement:  # the audit's plain-language statement: relation, what stays public, what is released outside ε
            with st.expander("Privacy statement (statement.md)"):
                st.markdown(wording.statement_body(statement))



def run_actions(record: dict, run: RunDir) -> None:
    """Cancel, Delete and Rerun, each asked to confirm, and the note an action leaves for FLASH_SECONDS."""
    run_id = record["run_id"]
    actions = st.container(horizontal=True)  # buttons as wide as their labels (columns cut them to 'Ca…')
    is_live = record["source"] == "live"
    if actions.button("Cancel", key="runs_cancel", disabled=not (is_live and record["state"] in loading.ACTIVE_STATES),
                 help="stop a queued or running job (live runs only)"):
        st.session_state["runs_confirm"] = ("cancel", run_id)
    if st.session_state.get("runs_confirm") == ("cancel", run_id):
        lost = (f" Its work so far ({estimate.fmt_duration(record['elapsed_s'])}, at stage {(as_str(record['stage']) or '?')}) is lost: a "
                "rerun starts from the beginning." if record["state"] == "running" else "")
        if record["state"] not in loading.ACTIVE_STATES:  # it ended while the question was open
            st.session_state.pop("runs_confirm", None)
        elif confirmed(f"Cancel `{run_id}`?{lost}", "Yes, cancel", "runs_cancel"):
            act(jobs.cancel, run, done=f"cancelled {run_id}", failed="could not cancel")
    if actions.button("Delete", key="runs_delete", disabled=not (is_live and record["state"] in ("done", "failed",
                                                                                               "cancelled")),
                 help="remove a finished live run folder (cached runs are never deleted)"):
        st.session_state["runs_confirm"] = ("delete", run_id)
    if actions.button("Rerun", key="runs_rerun", help="launch a new job with the same config"):
        st.session_state["runs_confirm"] = ("rerun", run_id)
    if st.session_state.get("runs_confirm") == ("delete", run_id) and confirmed(
            f"Delete `{run_id}` and all its files?", "Yes, delete", "runs_delete"):
        act(jobs.delete, run, done=f"deleted {run_id}", failed="could not delete")
    if st.session_state.get("runs_confirm") == ("rerun", run_id):
        elsewhere = (" A rerun trains from this machine's public base model (trained first where none is cached for "
                     "its preset and seed), not the shipped run's, so its numbers can differ."
                     if record["source"] == "cached" else "")
        if confirmed(f"Launch a new {wording.method_label(record['method'])} job on preset {record['preset']} with the "
                     f"config of `{run_id}`?{how_it_went(record)}{elsewhere}", "Yes, rerun", "runs_rerun"):
            try:
                if wording.is_synth_method(record["method"]):  # its config.json as `core synth --config` reads it
                    from core.synth.command import job_from_run_config

                    new = jobs.launch(job_from_run_config(run).config_dict())
                else:
                    new = jobs.launch(loading.validated_config(loading.run_config_dict(run)).to_dict())
                flash(f"launched {new.run_id} with the config of {run_id}")
                st.session_state["runs_select_next"] = new.run_id
            except (ConfigError, RunError, OSError, ValueError) as exc:
                flash(f"could not rerun: {exc}")
            st.rerun()
    message, since = st.session_state.get("runs_flash") or ("", 0.0)
    if message and time.monotonic() - since < FLASH_SECONDS:
        (st.error if message.startswith("could not") else st.info)(message)
    elif message:
        st.session_state.pop("runs_flash")



def logged_student_without_loss(progress: list[dict]) -> bool:
    """A run of the format before 2026-11-26: student lines (per epoch: queries spent, answered positions), none
    with a loss (a run of today with no student epochs logs no student line at all)."""
    student = [row for row in progress if row.get("stage") == "student"]
    return bool(student) and not any("loss" in row for row in student)


def log_and_progress(record: dict, run: RunDir) -> None:
    """The log's tail and, on request, the run's training curves."""
    synth = wording.is_synth_method(record["method"])
    tail = run.log_tail(40)
    with st.expander("Log tail (last 40 lines)", expanded=record["state"] in loading.ACTIVE_STATES + ("failed",)):
        st.code(tail or "(no log: cached runs and runs started from the command line keep none)", language="text")
    if st.toggle("Show training progress (loss, ε spent)", key="runs_show_progress"):
        # plotly figures: built only when asked for
        from dashboard import charts

        progress = loading.read_shown(run, "progress") or []
        figure = charts.run_progress_figure(progress)
        if figure is None:
            # a DP-SGD run's private training logs none (the note below): "yet" would promise lines that never come
            waiting = record["state"] in loading.ACTIVE_STATES and record["method"] not in wording.DPSGD_METHODS
            st.caption("No loss or ε lines in progress.jsonl yet." if waiting
                       else "This run has logged no loss or ε lines in progress.jsonl.")
        else:
            st.plotly_chart(charts.readable(figure), width="stretch", key="runs_progress_chart")
        if record["method"] in wording.DPSGD_METHODS:
            st.caption(DP_SGD_PROGRESS_NOTE + (PUBLIC_LOSSES_NOTE if figure is not None else ""))
        elif synth:
            st.caption(SYNTH_PROGRESS_NOTE)
        elif record["method"] == "seqpate" and logged_student_without_loss(progress):
            st.caption(NO_STUDENT_LOSS_NOTE)


live_view()
if not active:
    watch_while_idle(live_runs(infos))

st.subheader("Compare two configs")
all_ids = [info.run_id for info in infos]
if len(all_ids) < 2:
    st.caption("Needs at least two runs.")
else:
    a, b = st.columns(2)
    compared = loading.run_records(infos)  # in the order of all_ids

    def partner_of(run_a: str) -> str:
        return all_ids[loading.compare_partner(compared, all_ids.index(run_a))]

    def follow_a() -> None:  # a new run A brings its partner as B (a B chosen by hand stays until A changes)
        st.session_state["runs_cmp_b"] = partner_of(st.session_state["runs_cmp_a"])

    # defaults through the session state only: a box given an index as well warns when follow_a has set it
    if st.session_state.get("runs_cmp_a") not in all_ids:  # first load, or run A deleted: B follows the new A
        st.session_state["runs_cmp_a"] = all_ids[0]
        st.session_state["runs_cmp_b"] = partner_of(all_ids[0])
    if st.session_state.get("runs_cmp_b") not in all_ids:
        st.session_state["runs_cmp_b"] = partner_of(st.session_state["runs_cmp_a"])
    id_a = a.selectbox("Run A", all_ids, key="runs_cmp_a", on_change=follow_a)
    id_b = b.selectbox("Run B", all_ids, key="runs_cmp_b",
                       help="Follows run A: the newest run of A's preset and seed (its test sentences are A's) and "
                            "kind (text or synthetic data), preferring for a run made here the shipped run of its "
                            "config, then a finished one, then one of A's method. Choose any other run here.")
    if id_a == id_b:  # e.g. after a delete moved both boxes to the same run
        st.info("Run A and run B are the same run: choose two different runs.")
        st.stop()
    run_a, run_b = loading.get_run(id_a), loading.get_run(id_b)
    record_a, record_b = compared[all_ids.index(id_a)], compared[all_ids.index(id_b)]
    st.markdown(f"**A**: {tables.run_result(record_a)}  ·  **B**: {tables.run_result(record_b)}")
    comparison = loading.perplexity_comparison(run_a, run_b)
    if comparison is not None:
        comparable, sentence = comparison
        (st.info if comparable else st.caption)(f"Test perplexity: {sentence}")
    config_a, config_b = loading.run_config_dict(run_a), loading.run_config_dict(run_b)
    note = tables.base_model_note(record_a, record_b)
    same_settings = effective_hash(config_a) == effective_hash(config_b)
    if note and same_settings:  # copies whose results may still differ
        st.warning(note, icon=":material/warning:")
    diff = loading.config_diff(config_a, config_b)
    if diff.empty:  # green only where nothing else tells the two apart (a projected page hid the warning's reason)
        if note:  # a statement, not an expression: Streamlit's magic wrote an expression's value on the page
            st.info("Same config, but the base models may differ (above).")
        else:
            st.success("Same config.")
    else:
        if same_settings:  # the method is part of the effective config
            finished = record_a["state"] == record_b["state"] == "done"  # the result pages show finished runs only
            # says how many fields: "these fields" above the caption's "4 differing field(s)" read as a contradiction
            which = "the field that differs (below) is one" if len(diff) == 1 else \
                f"the {len(diff)} fields that differ (below) are ones"
            st.success(f"Same run settings: {which} {wording.method_label(config_a.get('method'))} never reads"
                       + (", so the pages treat the two runs as copies (one row: the shipped one, or with \"Runs "
                          "made here in place of their shipped copies\" on, the newest finished run made here)."
                          if finished else "."))
        st.caption(f"{len(diff)} field{' differs' if len(diff) == 1 else 's differ'} (below); equal fields are "
                   "hidden."
                   # the gap between two results is not the fields' alone where the base models differ too
                   + (f" Not the fields alone: {note}" if note and not same_settings else ""))
        if not diff["never read by"].astype(bool).any():
            diff = diff.drop(columns="never read by")
        st.dataframe(diff, hide_index=True, width="stretch", column_config={"never read by": st.column_config.TextColumn(
            help="the run(s) whose method never reads this field: a difference that did not shape that run")})
