"""Completions: the same test prefixes completed by several runs, side by side, secret phrases highlighted."""

import html

import streamlit as st

from dashboard import loading, tables, widgets, wording

st.title("Completions")
st.caption("Runs of one seed complete the same private test prefixes (same order, same index); another seed splits "
           "the users anew, so its runs completed other prefixes. " + wording.PHRASE_NOTE)
st.info("The test prefixes show the completions each run stored. To complete a prefix of your own (at the bottom), "
        "a run needs its weights: runs made on this machine keep them, the shipped runs do not.",
        icon=":material/info:")

df = loading.finished_frame()
# synthetic-data runs store generated samples in completions.jsonl, not completions of the test prefixes
with_completions = df[df["has_completions"] & ~df["method"].map(wording.is_synth_method)] if not df.empty else df
if with_completions.empty:
    widgets.no_runs("runs with completions")
    st.stop()

preset = widgets.preset_picker(with_completions, key="comp_preset")
# one seed: another seed splits the users anew, so its runs completed other test prefixes
of_preset = widgets.setup_picker(with_completions[with_completions["preset"] == preset], key="comp_setup")
pool = widgets.seed_picker(of_preset, key="comp_seed", every=False)
# each seed keeps its own choice of runs, across page switches too
runs_key = (f"comp_runs_{preset}" + (f"_seed{loading.seeds_of(pool)[0]}" if len(loading.seeds_of(of_preset)) > 1 else "")
            + (f"_{of_preset['setup'].iloc[0]}" if of_preset["setup"].iloc[0] != "chitchat" else ""))
records = {r["run_id"]: r for r in pool.to_dict("records")}
# default: the Overview's runs, one per method, SeqPATE first (the method this bench is about)
default_runs = tables.shipped_first_defaults(pool)
run_ids = st.multiselect("Runs", list(records), default=default_runs[:4], key=runs_key, persist_state="session",
                         format_func=lambda i: wording.run_option_label(records[i]))
if not run_ids:
    st.info("Choose at least one run.")
    st.stop()

completions = {rid: loading.read_shown(loading.get_run(rid), "completions") for rid in run_ids}
phrases = {rid: [p["phrase"] for p in loading.read_shown(loading.get_run(rid), "phrases")]
           if records[rid]["has_phrases"] else [] for rid in run_ids}
all_phrases = sorted({p for values in phrases.values() for p in values})

# a run with no completions to show (none written, or a damaged file named above) is left out; the others show
if without := [rid for rid in run_ids if not completions[rid]]:
    st.warning(f"No completions to show for {', '.join(without)}.")
    run_ids = [rid for rid in run_ids if completions[rid]]
    if not run_ids:
        st.stop()
completions = {rid: completions[rid] for rid in run_ids}
first = completions[run_ids[0]]
n = min(len(rows) for rows in completions.values())
if any(len(rows) != len(first) for rows in completions.values()):
    st.caption(f"The runs have different numbers of completions; showing the first {n} shared indices.")
prefixes = [first[i].get("prefix", "") for i in range(n)]
example = " ".join(prefixes[0].split()[:2]) if prefixes else ""  # words these runs' prefixes do contain
find = st.text_input("Find test prefixes", key="comp_find",
                     placeholder="type words of a prefix" + (f", e.g. {example}" if example else ""),
                     help="Runs keep their completions, not their weights, so only the test prefixes every run "
                          "completed can be shown; this finds those containing what you type.")
needle = wording.search_key(find)
matches = [i for i in range(n) if needle in wording.search_key(prefixes[i])] if needle else list(range(n))
if find.strip() and not matches:
    st.warning(f"No test prefix contains {find.strip()!r}.")
# one selection per search (its options differ), each kept while on the page: clearing a search brings back the
# prefixes chosen before it
chosen = st.multiselect("Test prefixes", matches, default=matches[:5], key=f"comp_prefixes_{needle}",
                        format_func=lambda i: f"{i}: {prefixes[i]}", persist_state="page")
headers, labels = [], []
names = [" · ".join(filter(None, [wording.method_label(records[rid]["method"]),
                                   f"ε {wording.fmt_eps(records[rid]['epsilon'])}", wording.seed_label(records[rid])]))
         for rid in run_ids]
for rid, name in zip(run_ids, names, strict=True):
    record = records[rid]
    leak, looked_for = record.get("r_name"), record.get("r_name_names")
    shown = name if names.count(name) == 1 else f"{name} · {rid}"  # two runs of one method and ε stay apart
    labels.append(f"<div class='who'><b>{html.escape(shown)}</b></div>")
    headers.append(
        f"<div class='who'><b>{html.escape(wording.method_label(record['method']))}</b> · ε = "
        f"{html.escape(wording.fmt_eps(record['epsilon']))}"
        + (f" · {wording.seed_label(record)}" if wording.seed_label(record) else "")
        + (f"<br>leak rate R_name = {leak:.2%}" if wording.present(leak) else "")
        + (f" ({int(looked_for)} names looked for)" if wording.present(leak) and wording.present(looked_for) else "")
        + f"<br><small>{html.escape(rid)}</small></div>"
    )

# as many runs a row as fit at 11rem each, the rest wrapping below (each cell names its run): with many runs, or on
# a narrow page, a row that scrolled sideways hid the last runs, and squeezed columns spilled words into each other
grid = "display:grid;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));gap:.75rem"
STYLE = ("<style>.cmp{border:1px solid #e2e8f0;border-radius:.5rem;padding:.75rem 1rem;margin:.5rem 0}"
         ".cmp .ref{color:#4a5568;margin:.25rem 0 .5rem} .cmp .who{color:#2d3748;font-size:.9rem}"
         ".cmp .text{background:#f7fafc;border-radius:.35rem;padding:.4rem .6rem;margin-top:.25rem}"
         ".cmp mark{background:#fefcbf;padding:0 .1rem;text-decoration:underline;text-underline-offset:.2em} .cmp .text,.cmp .who{overflow-wrap:anywhere}</style>")
blocks = []
for i in chosen:
    cells = []
    for rid, label in zip(run_ids, labels, strict=True):
        row = completions[rid][i]
        note = ("" if row.get("prefix") == prefixes[i] else
                f"<br><small>(this run's prefix at #{i} is another: “{html.escape(row.get('prefix', ''))}”; "
                "another data config)</small>")
        cells.append(f"<div>{label}<div class='text'>{wording.completion_html(row.get('completion', ''), phrases[rid])}"
                     f"{note}</div></div>")
    blocks.append(
        f"<div class='cmp'><div><b>#{i} prefix:</b> {wording.highlight(prefixes[i], all_phrases)}</div>"
        f"<div class='ref'>reference: {wording.highlight(first[i].get('reference', ''), all_phrases)}</div>"
        f"<div style='{grid}'>{''.join(cells)}</div></div>"
    )
if all_phrases:
    marked = any("<mark>" in block for block in blocks)
    # underlined as well: a yellow background alone is lost to a reader who does not see the colour
    st.caption(f"Highlighted and underlined where they occur: the {len(all_phrases):,} secret phrase(s) of the runs' phrases.csv"
               + ("." if marked or not blocks else " (none occurs in the prefixes shown)."))
header = f"<div class='cmp'><div style='{grid}'>{''.join(headers)}</div></div>"
st.html(STYLE + header + ("".join(blocks) if blocks else "<p>Choose test prefixes above.</p>"))

st.subheader("Your own prefix")
with_model = [rid for rid in run_ids if loading.has_model(loading.get_run(rid))]
without = [rid for rid in run_ids if rid not in with_model]
if not with_model:
    # a run made here that kept them may be in the Runs box but not chosen (the Overview's defaults are shipped runs)
    kept = [rid for rid in records if rid not in run_ids and records[rid].get("source") != "cached"
            and loading.has_model(loading.get_run(rid))]
    named = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
    st.caption("None of the selected runs kept its weights (shipped runs keep none, nor does the blacklist "
               "baseline): " + (f"add one that did to Runs above ({named}) to complete prefixes of your own."
                                if kept else "launch a run on this machine to complete prefixes of your own."))
else:
    with st.form("comp_own_form"):
        own = st.text_input("Prefix", key="comp_own", placeholder="e.g. my name is")
        # another seed draws another sample: one sample alone says little about what a run tends to write
        own_seed = widgets.count_input(st, "Sample seed", value=0, min_value=0, max_value=2**32 - 1,
                                       key="comp_own_seed", width=170,  # as wide as Launch's number boxes
                                       help="each seed draws another sample from every run")
        submitted = st.form_submit_button(f"Complete with the {len(with_model)} selected run(s) that kept weights")
    if submitted and not own.strip():
        st.warning("Type a prefix first.")
    elif submitted and own_seed is not None:
        with st.spinner("Loading the runs' models and sampling (a few seconds per run)…"):
            answers = loading.complete_own_prefix([loading.get_run(rid) for rid in with_model], own, seed=own_seed)
        cells = []
        for rid in with_model:
            answer = answers.get(rid, {"error": "no answer"})
            body = (wording.completion_html(answer["completion"], phrases[rid]) if "completion" in answer
                    else f"<i>{html.escape(answer.get('error', ''))}</i>")
            cells.append(f"<div>{labels[run_ids.index(rid)]}<div class='text'>{body}</div></div>")
        own_grid = f"display:grid;grid-template-columns:repeat({len(with_model)},minmax(0,1fr));gap:.75rem"
        st.html(STYLE + f"<div class='cmp'><div><b>your prefix:</b> {html.escape(' '.join(own.split()))}</div>"
                f"<div style='{own_grid}'>{''.join(cells)}</div></div>")
        st.caption(f"One sample per run (seed {own_seed}), with each run's own decoding settings.")
if without and with_model:
    st.caption("Kept no weights, so not completed: " + ", ".join(without))
