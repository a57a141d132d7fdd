"""Synthetic data: DP conditional generation of labelled text (seed 004), utility, memorisation, embeddings."""

import csv
import io
import json
import math

import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import streamlit as st

from core.config import ConfigError, device_refusal
from core.runs import jobs
from core.runs.store import RunDir
from core.runs.values import as_dict, as_float, as_int
from core.synth.config import SYNTH_PRESETS, synth_other_settings
from dashboard import charts, launch_settings, loading, tables, widgets, wording
from dashboard.charts import LAYOUT

GENERATORS = {"filter": "conditional prompting + filter", "pplm": "PPLM, head on frozen model",
              "multitask": "multitask + PPLM (paper)"}
# the model whose embeddings each generator's separability measures (core.synth.run.evaluate): filter and pplm
# fine-tune the LM on the LM loss only, then train their discriminator head on it frozen (core.synth.train)
# short headers: a header sizes its column, and at 1,280 px the longer ones pushed multitask's numbers off the table
EMBEDDING_MODELS = {"filter": "filter: frozen model", "pplm": "PPLM: same frozen model",
                    "multitask": "multitask: joint model"}
EMBEDDING_MODEL_HELP = {"filter": "the model fine-tuned on the LM loss alone; its discriminator head is trained on it "
                                  "frozen",
                        "pplm": "the same frozen (LM-only) model as filter's: equal at the same ε and seed",
                        "multitask": "the model fine-tuned on the LM and discriminator losses together"}


def synth_command(generator: str, epsilon_text: str, preset: str, seed: int | None) -> str:
    """The `python -m core synth` line that makes the run this form launches for one generator."""
    seed_flag = f" --seed {seed}" if seed else ""
    name = f"synth-{preset}-{generator}-eps{epsilon_text.strip()}" + (f"-seed{seed}" if seed else "")
    return (f"python -m core synth --generator {generator} --epsilon {epsilon_text.strip()} --preset {preset}"
            f"{seed_flag} --run-dir runs/{name}")

# What the run releases beyond the model and its samples (its statement.md lists the same)
OUTSIDE_EPSILON = ("ε covers the fine-tuned model and the samples only. The accuracies and the separability above and "
                   "the UMAP below (a point and the true label of every private test text) are computed from the "
                   "private data without noise: they are outside ε, as are the n-gram ratios of the memorisation "
                   "tab.")

st.title("Synthetic data")
st.caption("DP conditional text generation for a labelled data set (the paper \"Differentially private conditional "
           "text generation for synthetic data\"): a conditional LM is fine-tuned "
           "with DP-Adam on \"BOS label SEP text\", then generates a synthetic data set per label. Utility is the "
           "accuracy of a classifier trained on the synthetic set and tested on REAL held-out data.")


@st.cache_data(show_spinner=False, max_entries=256)
def read_lines(signature: tuple, path: str, source: str, name: str) -> tuple[list[dict], int]:
    """The rows of a finished run's JSON-lines file, and how many lines did not read as a JSON object."""
    text = RunDir(path, source=source).read_text(name) or ""
    rows, bad = [], 0
    for line in text.splitlines():
        if not line.strip():  # as core.runs.store.read_jsonl: a blank line is no row, not a damaged one
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


@st.cache_data(show_spinner=False, max_entries=256)
def read_points(signature: tuple, path: str, source: str) -> tuple[pd.DataFrame, int]:
    """The embedding plot's points (x, y, label), and how many rows lacked a numeric x and y or a label."""
    text = RunDir(path, source=source).read_text("embeddings.csv") or ""
    frame = pd.DataFrame(list(csv.DictReader(io.StringIO(text))), columns=["x", "y", "label"])
    frame = frame.assign(x=pd.to_numeric(frame["x"], errors="coerce"), y=pd.to_numeric(frame["y"], errors="coerce"))
    whole = frame[["x", "y"]].notna().all(axis=1) & frame["label"].notna() & frame["label"].astype(str).ne("")
    return frame[whole].reset_index(drop=True), int((~whole).sum())


def run_file(run_id: str, name: str):
    """A synthetic run's samples.jsonl rows or embeddings.csv points; a damaged line is left out and counted in a
    warning (it had been skipped without a word, and a garbled coordinate failed the page)."""
    run = loading.get_run(run_id)
    signature = loading.file_signature(run.path, (name,))
    if name == "embeddings.csv":
        content, bad = read_points(signature, str(run.path), run.source)
    else:
        content, bad = read_lines(signature, str(run.path), run.source, name)
    if bad:
        st.warning(f"{run_id}: {bad:,} line{'s' * (bad != 1)} of {name} did not read and "
                   f"{'are' if bad != 1 else 'is'} left out.", icon=":material/error:")
    return content


def as_printed(value: float | None, decimals: int = 3) -> float | None:
    """The number REPORT.md and the README print for value (Python's format: correctly rounded, a tie to even),
    which a table's own format then shows unchanged: that format rounds a tie up (0.3125 to 0.313, where they read
    0.312), and numpy's round scales first (0.2375, stored a hair below, to 0.238, where they read 0.237)."""
    return float(f"{value:.{decimals}f}") if wording.present(value) and math.isfinite(value) else value


def eps_label(eps: float | None) -> str:
    return "∞ (not private)" if eps is not None and math.isinf(eps) else wording.fmt_eps(eps)


def launch_form(all_runs: pd.DataFrame, expanded: bool) -> None:
    """Synthetic-data runs launched as background jobs, one per generator, as the Launch page launches the others
    (the Runs page follows them; those of all_runs queued or running are named); the command line does the same
    with `python -m core synth`."""
    with st.expander("Launch synthetic-data runs", expanded=expanded, icon=":material/rocket_launch:"):
        # Enter in a field only applies it, as on Launch: launching private training takes the button
        with st.form("synth_launch_form", enter_to_submit=False):
            chosen = st.multiselect("Generator(s)", list(GENERATORS), default=["multitask"], key="synth_launch_gen",
                                    format_func=lambda g: f"{g}: {GENERATORS[g]}")
            row = widgets.wrapping_row()
            eps_text = row.text_input("ε (epsilon)", value="3", key="synth_launch_eps", width=170,
                                      help="a positive number or inf (no noise: not private); δ is 1/|train|, the "
                                           "paper's setting")
            preset_choice = row.selectbox("Preset", list(SYNTH_PRESETS), key="synth_launch_preset", width=170,
                                          help="tiny: about a minute a run; quick: 3-4 minutes; the first run of a "
                                               "preset and seed trains its public base model first (tiny: under a "
                                               "minute, quick: 5-9 minutes)")
            seed = widgets.count_input(row, "Seed", value=0, min_value=0, key="synth_launch_seed", width=170)
            submitted = st.form_submit_button("Launch", disabled=device_problem is not None)
        if device_problem:  # jobs inherit SEQPATE_DEVICE from where the dashboard started, as on Launch
            st.error(f"Nothing can be launched: {device_problem}.", icon=":material/error:")
        # the form's values as last applied (a form hands them over on Launch): the lines that make those runs
        if seed is not None:  # an emptied seed box says so under it: no line for a seed not given
            commands = [synth_command(g, eps_text, preset_choice, seed) for g in chosen or ["multitask"]]
            st.caption("Or from the command line, one run per generator: " + "; ".join(f"`{c}`" for c in commands)
                       + ".")
        if submitted and seed is not None:
            launched, failed, copies = [], [], []
            try:
                with st.spinner("Reading the labelled data…"):
                    configs = launch_settings.synth_job_configs(chosen, eps_text, preset_choice, seed)
            except (ConfigError, OSError, ValueError) as exc:
                failed.append(f"Nothing launched: {exc}")
            else:
                for config in configs:
                    same = loading.runs_with_settings(all_runs, config)  # read before this launch
                    try:
                        launched.append(jobs.launch(config).run_id)
                    except Exception as exc:  # noqa: BLE001 (shown to the user, the other jobs still go)
                        failed.append(f"{config['method']}: could not launch: {exc}")
                        continue
                    if not same.empty:  # as Launch says before launching; a form says it once submitted
                        copies.append(f"{config['method']}: these settings had been run already: "
                                      f"{loading.copies_listed(same)}; `{launched[-1]}` is another copy.")
            st.session_state["synth_launch_last"], st.session_state["synth_launch_failed"] = launched, failed
            st.session_state["synth_launch_copies"] = copies
        for message in st.session_state.get("synth_launch_failed", []):
            st.error(message, icon=":material/error:")
        if ids := st.session_state.get("synth_launch_last"):
            st.success(f"Queued {len(ids)} job(s): " + ", ".join(f"`{i}`" for i in ids) + f". Jobs run "
                       f"{jobs.max_parallel_jobs()} at a time (`SEQPATE_MAX_JOBS`); a finished run shows here (one "
                       f"with a shipped run's settings in its place once \"{tables.MADE_HERE_TOGGLE}\" is on).",
                       icon=":material/check:")
        for message in st.session_state.get("synth_launch_copies", []) if ids else []:
            st.info(message, icon=":material/content_copy:")
        active = all_runs[all_runs["state"].isin(loading.ACTIVE_STATES)
                          & all_runs["method"].map(wording.is_synth_method)] if not all_runs.empty else all_runs
        if not active.empty:
            st.caption("Queued or running: " + ", ".join(f"`{r.run_id}` ({r.state})" for r in active.itertuples()))
        if ids or not active.empty:
            st.page_link("views/runs.py", label="Watch them on the Runs page", icon=":material/list:")


device_problem = device_refusal()
all_runs = loading.runs_frame()  # read once: the form names the active ones, the page shows the finished ones
df = loading.finished_frame(all_runs)
synth = df[df["method"].map(wording.is_synth_method)] if not df.empty else df
launch_form(all_runs, expanded=synth.empty)
if synth.empty:
    st.info("No synthetic-data runs yet: launch one above (about a minute on the tiny preset), then reload this "
            "page once it has finished.", icon=":material/hourglass_empty:")
    st.stop()

preset = widgets.preset_picker(synth, key="synth_preset")
# one seed at a time, as on the other pages: a cell averaging seeds 0-2 beside one of seed 0 alone compared two
# different things (filter and PPLM share one model, yet their separability columns differed)
runs = widgets.seed_picker(synth[synth["preset"] == preset], key="synth_seed")
# as on the Overview: the shipped runs unless the reader puts the copies made here in their place (one toggle for
# every page), and one run per config, so that a copy is never averaged with the run it copies
runs = tables.distinct_configs(tables.made_here_or_shipped(runs, key="synth_made_here"))
rows = []
label_counts = set()  # number of labels of each run's data set: chance level = 1 / that
size_matched: dict[str, dict] = {}  # run -> its n-gram shares at the real test set's size (metrics.json)
for record in runs.to_dict("records"):
    run = loading.get_run(record["run_id"])
    m = loading.read_shown(run, "metrics") or {}
    # a run on other data or settings than its preset's (a user's csv): never averaged into the preset's cells
    other = synth_other_settings(loading.run_config_dict(run))
    matched = as_dict(m.get("ngram_ratios_size_matched"))
    if as_dict(matched.get("ratios")) and as_int(matched.get("texts")) and as_int(matched.get("draws")):
        size_matched[record["run_id"]] = matched
    if (m.get("data") or {}).get("labels") and not other:
        label_counts.add(len(m["data"]["labels"]))
    grams = m.get("ngram_ratios") or {}
    rows.append({
        "run": record["run_id"], "generator": record["method"].removeprefix("synth-"), "seed": record["seed"],
        "other settings": ", ".join(f"{k.removeprefix('synth.')} {v}" for k, v in other.items()),
        "ε target": record["epsilon_target"], "ε": record["epsilon"], "δ": record["delta"],
        # numbers only (as_float): a garbled metrics.json shows a blank, not a broken page
        "accuracy (synthetic)": as_float(m.get("accuracy_synthetic")),
        "accuracy (real)": as_float(m.get("accuracy_real")),
        "label agreement": as_float(m.get("synthetic_label_agreement")),
        "separability": as_float(m.get("separability")),
        "discriminator": as_float(m.get("discriminator_test_accuracy")),
        "LM test loss": as_float(m.get("lm_test_loss")),
        **{f"{n}-gram": as_float(grams.get(str(n))) if isinstance(grams, dict) else None for n in range(3, 8)},
        "samples": as_int(m.get("n_synthetic")),
        "test texts": as_int(as_dict(m.get("data")).get("test")),
        "passed filter": as_int(as_dict(m.get("generation")).get("accepted"))
        if record["method"] == "synth-filter" else None,
    })
every_run = pd.DataFrame(rows)
table = every_run[every_run["other settings"] == ""]  # the runs at the preset's settings, which the tables compare
set_aside = every_run[every_run["other settings"] != ""]
if not set_aside.empty:
    st.info(f"Set aside from the tables and the chart (settings other than {preset}'s: another data set, say): "
            + "; ".join(f"{r} ({o})" for r, o in zip(set_aside["run"], set_aside["other settings"], strict=True))
            + ". They are under Every run and One run.", icon=":material/call_split:")


NONE_AT_PRESET = ("No run here at {preset}'s settings to compare: every run of this preset and seed is set aside "
                  "above. One run shows each of them.")
EPSILON_INDEX = st.column_config.TextColumn("ε", width="medium")  # the tables' ε rows, "real train data" below


def pivot(value: str) -> pd.DataFrame:
    grid = table.pivot_table(index="ε target", columns="generator", values=value, aggfunc="mean")
    grid = grid.reindex(columns=[g for g in GENERATORS if g in grid.columns])
    grid = grid.sort_index(ascending=False)
    grid.index = pd.Index([eps_label(e) for e in grid.index], name="ε")
    return grid.map(as_printed)  # to 3 decimals as REPORT.md and the README print them


def show_every_run() -> None:
    """Every run of this preset and seed, those set aside from the tables included, with all its figures."""
    with st.expander("Every run", expanded=False):
        every = every_run.sort_values(["generator", "ε target", "seed"])
        every = every.assign(**{"ε target": every["ε target"].map(eps_label), "ε": every["ε"].map(eps_label),
                                "δ": every["δ"].map(wording.fmt_delta)})
        numbers = ["accuracy (synthetic)", "accuracy (real)", "label agreement", "separability", "discriminator",
                   "LM test loss", *(f"{n}-gram" for n in range(3, 8))]
        every = every.assign(**{name: every[name].map(as_printed) for name in numbers})  # as the tables above
        column_help = {
            "accuracy (real)": "the same classifier trained on the real train set",
            "label agreement": "share of synthetic samples whose label the real-data classifier predicts",
            "discriminator": "the run's discriminator head's accuracy on the real test texts",
            "LM test loss": "the fine-tuned language model's loss on the real test texts",
            "passed filter": "filter runs: samples the discriminator scored above its threshold",
            # over all samples: it falls as a set grows, so it does not compare with the real test texts' share
            **{f"{n}-gram": f"share of the run's distinct {n}-grams found in the train set, over all its samples; "
                            "the Memorisation tab compares it with the real test texts at their size"
               for n in range(3, 8)},
        }
        st.dataframe(every, hide_index=True, width="stretch", placeholder="",  # a filter count only for filter runs
                     column_config={"run": st.column_config.TextColumn(width="large"),
                                    "ε target": st.column_config.TextColumn(width="medium"),
                                    "ε": st.column_config.TextColumn(width="medium"),
                                    **{name: st.column_config.NumberColumn(format="%.3f", help=column_help.get(name))
                                       for name in numbers},
                                    "passed filter": st.column_config.NumberColumn(help=column_help["passed filter"])})


def show_accuracy() -> None:
    """The synthetic-data classifier's accuracy and the embeddings' separability per generator and ε."""
    if table.empty:
        st.info(NONE_AT_PRESET.format(preset=preset))
        show_every_run()
        return
    deltas = list(dict.fromkeys(wording.fmt_delta(d) for d in sorted(table["δ"].dropna()) if d > 0))
    groups = table.groupby(["generator", "ε target"])
    averaged = [f"{generator} at ε = {eps_label(eps)} averages seeds {', '.join(str(x) for x in sorted(group['seed']))}"
                for (generator, eps), group in groups if len(group) > 1]
    # beside means over seeds, the cells of one run say so (a single seed's cell reads as a mean otherwise)
    one_run = [f"{generator} at ε = {eps_label(eps)} in seed {group['seed'].iloc[0]}"
               for (generator, eps), group in groups if len(group) == 1]
    if averaged and one_run:
        averaged.append(f"the other cells hold one run each: {', '.join(one_run)}")
    st.caption("Classifier: TF-IDF + logistic regression trained on each synthetic set, tested on the real test set; "
               "the last row trains it on the real train set. Cells average the runs of one setting"
               + (f" ({'; '.join(averaged)})" if averaged else "") + ". "
               + (f"δ = 1/|train| as in the paper: {', '.join(deltas)}; a weak δ (publishing one random "
                  "training text outright meets it), where the usual advice is δ well below 1/|train|."
                  if deltas else ""))
    accuracy = pivot("accuracy (synthetic)")
    original = table["accuracy (real)"].dropna()
    if not original.empty:
        accuracy.loc["real train data"] = as_printed(float(original.mean()))
    # "–": no run of that generator at that ε (a cell read "None"); the ε labels in full ("∞ (not private)")
    st.dataframe(accuracy, width="stretch", placeholder="–",
                 column_config={"_index": EPSILON_INDEX,
                                **{g: st.column_config.NumberColumn(GENERATORS[g], format="%.3f") for g in GENERATORS}})
    chance = ", ".join(f"{1 / n:.3f} ({n} labels)" for n in sorted(label_counts))
    if chance:
        st.caption(f"Chance level (1 / number of labels): {chance}. A classifier that guesses scores this on "
                   "average, in accuracy and in separability alike.")
    st.markdown("**Embedding separability** (random-forest accuracy on mean embeddings of the real test texts, paper "
                "Fig. 2). Each column measures the model its generator samples from: filter and PPLM share one "
                "frozen (LM-only) model, fine-tuned on the LM loss alone before their discriminator head is trained "
                "on top of it, so at the same ε and seed their columns are equal; multitask's model is fine-tuned "
                "on the LM and discriminator losses together. Cells average the same runs as the accuracy table"
                + (f" ({'; '.join(averaged)})." if averaged else "."))
    st.dataframe(pivot("separability"), width="stretch", placeholder="–",
                 column_config={"_index": EPSILON_INDEX,
                                **{g: st.column_config.NumberColumn(EMBEDDING_MODELS[g], format="%.3f",
                                                                    help=EMBEDDING_MODEL_HELP[g])
                                   for g in GENERATORS}})
    show_every_run()


def matched_words(texts: int, draws: int) -> str:
    """What a run's size-matched share is over (metrics.json's ngram_ratios_size_matched), in words."""
    if draws > 1:
        return f"{texts:,} samples, the mean of {draws} random subsets"
    return f"all {texts:,} samples, no more than the test texts"


def show_memorisation() -> None:
    """Share of synthetic n-grams found in the train set, per ε, for one generator."""
    st.caption("Share of distinct synthetic word n-grams that also occur in the private train set (paper Fig. 3). "
               "Dashed: the same share for the real held-out test texts, which the model never saw.")
    if table.empty:
        st.info(NONE_AT_PRESET.format(preset=preset))
        return
    generator = st.selectbox("Generator", [g for g in GENERATORS if g in set(table["generator"])],
                             key="synth_gram_gen", persist_state="page",
                             format_func=lambda g: f"{g}: {GENERATORS[g]}")
    fig = go.Figure()
    grams = [f"{n}-grams" for n in range(3, 8)]  # categories, so that the unified hover's title reads "5-grams"
    references: dict[int, dict] = {}  # seed -> the real test texts' ratios (each seed has its own split)
    sizes: set[tuple] = set()  # (synthetic samples, real test texts) of the runs drawn over all their samples
    matched_sizes: set[tuple] = set()  # (samples, subsets) of the runs drawn at the real test set's size
    lines = table[table["generator"] == generator].sort_values(["ε target", "seed"], ascending=[False, True])
    several_seeds = lines["seed"].nunique() > 1
    seed_rank = {seed: k for k, seed in enumerate(sorted(lines["seed"].dropna().unique()))}  # dashes by rank
    for row in lines.to_dict("records"):
        name = f"ε = {eps_label(row['ε target'])}" + (f", seed {row['seed']}" if several_seeds else "")
        # each seed its own marker, so that a seed's line running under another's stays visible (solid lines: the
        # caption keeps dashes for the real test texts; a seed's dashed line read as one)
        symbol = ("circle", "square", "diamond", "triangle-up", "x")[seed_rank.get(row["seed"], 0) % 5]
        # at the real test set's size where the run recorded it (runs made before 2026-11-27 were audited for it)
        matched = size_matched.get(row["run"])
        if matched:
            ratios = as_dict(matched["ratios"])
            y = [as_float(ratios.get(str(n))) for n in range(3, 8)]
            over = matched_words(as_int(matched["texts"]), as_int(matched["draws"]))
        else:
            y = [row[f"{n}-gram"] for n in range(3, 8)]
            over = f"all {as_int(row['samples']):,} samples" if wording.present(row["samples"]) else "all samples"
        fig.add_trace(go.Scatter(x=grams, y=y, mode="lines+markers", name=name, marker=dict(symbol=symbol, size=8),
                                 customdata=[[row["run"], over]] * 5,
                                 hovertemplate="%{y:.4f} (run %{customdata[0]}; %{customdata[1]})"))
        if matched:
            matched_sizes.add((as_int(matched["texts"]), as_int(matched["draws"])))
        else:
            sizes.add((row["samples"], row["test texts"]))
        if wording.present(row["seed"]) and row["seed"] not in references:
            metrics = loading.read_shown(loading.get_run(row["run"]), "metrics") or {}
            if metrics.get("ngram_ratios_real_test"):
                references[row["seed"]] = metrics["ngram_ratios_real_test"]
    for seed, reference in sorted(references.items()):
        fig.add_trace(go.Scatter(x=grams, y=[reference.get(str(n)) for n in range(3, 8)], mode="lines",
                                 line=dict(dash=("dash", "longdash", "longdashdot", "dashdot")[seed_rank.get(seed, 0) % 4],
                                           color="#4a5568"),
                                 name="real test texts" + (f", seed {seed}" if len(references) > 1 else ""),
                                 hovertemplate="%{y:.4f}"))
    # The lines meet near 0 from n = 5 on: one hover lists every line's value at that n.
    fig.update_layout(title="Synthetic n-grams found in the train set", yaxis_title="ratio", hovermode="x unified",
                      **LAYOUT)
    st.plotly_chart(charts.readable(fig), width="stretch", key="synth_ngrams")
    if matched_sizes:
        shown = "; ".join(sorted(matched_words(texts, draws) for texts, draws in matched_sizes))
        st.caption(f"Size-matched: a run's line is its share in as many samples as the real test set has texts, or "
                   f"in all its samples where it has fewer ({shown}), since the share found in the train set falls "
                   "as a set grows.")
    sized = [(n, t) for n, t in sizes if wording.present(n) and wording.present(t) and n and t]
    shown = sorted(f"{n:,} samples against {t:,} test texts" for n, t in sized)
    if any(n > t for n, t in sized):
        st.caption(f"Not size-matched ({'; '.join(shown)}): the share found in the train set falls as a set grows, "
                   "so a line over more samples than the dashed one's texts sits lower than it would at their size "
                   "(README, synthetic data; `python -m core audit --run-dir DIR` adds the size-matched shares to a "
                   "run made before 2026-11-27).")


def show_run() -> None:
    """One run: its figures, the UMAP of its embeddings and its samples per label."""
    options = list(every_run.sort_values(["generator", "ε target", "seed"])["run"])  # the lowest seed first
    several_seeds = every_run["seed"].nunique() > 1
    # led by the run id, as on the other pages: bound to the URL, a reload or a shared link keeps the run
    labels = {r["run"]: wording.OPTION_SEPARATOR.join([r["run"], r["generator"], f"ε = {eps_label(r['ε target'])}"]
                                                      + ([f"seed {r['seed']}"] if several_seeds else [])) for r in rows}
    run_id = widgets.linked_run_picker("Run", options, "synth_run", options[0], labels.get,
                                       f"a synthetic-data run of {preset} with the seed chosen")
    chosen = every_run[every_run["run"] == run_id].iloc[0]
    row = widgets.wrapping_row()  # five equal columns cut every number to "0.…" at 900 px
    widgets.metric(row, "accuracy (synthetic)", wording.fmt_num(chosen["accuracy (synthetic)"], 3),
                   help="a classifier trained on the synthetic samples, tested on the real test texts")
    widgets.metric(row, "accuracy (real-trained)", wording.fmt_num(chosen["accuracy (real)"], 3),
                   help="the same classifier trained on the real train set instead: the reference")
    widgets.metric(row, "separability", wording.fmt_num(chosen["separability"], 3))
    widgets.metric(row, "ε", eps_label(chosen["ε"]))
    widgets.metric(row, "δ", wording.fmt_delta(chosen["δ"]))
    if wording.present(chosen["ε"]) and math.isfinite(chosen["ε"]):
        st.caption(OUTSIDE_EPSILON)
    if wording.present(chosen["passed filter"]) and wording.present(chosen["samples"]):
        st.caption(f"The filter kept {int(chosen['passed filter'])} of {int(chosen['samples'])} samples because the "
                   "discriminator scored them above its threshold; the rest (kept: filled) are the best-scored rejects, "
                   "taken so that every label has its share.")

    points = run_file(run_id, "embeddings.csv")
    if points.empty:
        st.info("This run has no embeddings.csv.")
    else:
        scatter = go.Figure()
        # a qualitative palette of clearly different hues (Streamlit's theme gave two labels near-identical purples)
        palette = plotly.colors.qualitative.Set1
        for k, label in enumerate(sorted(points["label"].unique())):
            part = points[points["label"] == label]
            scatter.add_trace(go.Scatter(x=part["x"], y=part["y"], mode="markers", name=label,
                                         marker=dict(size=6, opacity=0.75, color=palette[k % len(palette)])))
        metrics = loading.read_shown(loading.get_run(run_id), "metrics") or {}
        scatter.update_layout(title=f"{str(metrics.get('projection', 'umap')).upper()} of the real test embeddings, "
                              "coloured by label", xaxis_title="", yaxis_title="", **LAYOUT)
        st.plotly_chart(charts.readable(scatter), width="stretch", key="synth_umap")

    samples = pd.DataFrame(run_file(run_id, "samples.jsonl"))
    if samples.empty:
        st.info("This run has no samples.jsonl.")
    else:
        counts = samples["label"].value_counts().sort_index()
        st.caption("Samples per label: " + ", ".join(f"{label} {n}" for label, n in counts.items())
                   + (". ε = ∞: the model was trained without noise, so samples may repeat private text."
                      if wording.present(chosen["ε"]) and math.isinf(chosen["ε"])
                      else ". Synthetic text from a DP model (post-processing)."))
        label = st.selectbox("Label", list(counts.index), key="synth_label", persist_state="page")
        shown = samples[samples["label"] == label].drop(columns=["label"])
        if chosen["generator"] != "filter":  # only the filter keeps or drops: "kept: accepted" read as a filter
            shown = shown.drop(columns=["kept"], errors="ignore")
            st.caption(f"{chosen['generator']} keeps every sample it generates: p(label | text), its discriminator's "
                       "score, is shown for information and filters nothing.")
        st.dataframe(shown, hide_index=True, width="stretch",
                     column_config={"disc_prob": st.column_config.NumberColumn("p(label | text)", format="%.3f")})


widgets.lazy_tabs({"Accuracy vs ε (Table 1)": show_accuracy, "Memorisation (n-grams)": show_memorisation,
                   "One run: embeddings and samples": show_run}, key="synth_tab")
