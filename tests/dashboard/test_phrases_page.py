"""Phrases page: the run it opens on, the table's headers and blanks, the ε histogram's traces and notes."""

from __future__ import annotations

import json
import math

from apptest_helpers import metrics, open_tab, plotly_specs
from fake_runs import phrase_rows, write_run

from dashboard import tables


def names(epsilons: list[float]) -> list[dict]:
    """phrases.csv rows with every column core writes (core.analysis: phrase_table, then in_completions)."""
    return [{"phrase": f"Name{i}", "occurrences": 2, "users": 1, "teachers": 1, "epsilon": eps, "kind": "name",
             "inserted": None, "basis": "n_s=1 teachers", "accountant": "analytic-gaussian (exact composition)",
             "contains_private_text": True, "in_completions": i % 2} for i, eps in enumerate(epsilons)]


CANARY = {**names([40.0])[0], "phrase": "my ID is 123456", "occurrences": 10, "kind": "canary", "inserted": 10,
          "in_completions": None}


def write_three(cached) -> None:
    """Newest first in the run list (created, then run id, both descending): c-seq-inf, b-seq-by-user, a-seq."""
    write_run(cached, "a-seq", "seqpate", phrases=phrase_rows(1.0))
    write_run(cached, "b-seq-by-user", "seqpate", partition="by-user", phrases=names([3.0, 3.0, 6.5]) + [CANARY])
    write_run(cached, "c-seq-inf", "seqpate", epsilon=math.inf, phrases=names([math.inf] * 3))


def test_phrases_open_on_a_private_by_user_run_and_keep_the_users_choice(roots, app_page):
    write_three(roots["cached"])
    at = app_page("phrases")
    assert not at.exception
    assert at.selectbox(key="phrases_run").options[0].startswith("c-seq-inf")  # the newest run is not private
    assert at.selectbox(key="phrases_run").value == "b-seq-by-user"
    shown = metrics(at)
    assert (shown["average ε"], shown["min ε"], shown["max ε"]) == ("4.17", "3", "6.5")
    at.selectbox(key="phrases_run").set_value("c-seq-inf").run()  # an explicit choice survives reruns and tabs
    open_tab(at, "phrases_tab", "ε histogram")
    assert at.selectbox(key="phrases_run").value == "c-seq-inf"
    assert metrics(at)["average ε"] == "∞" and metrics(at)["max ε"] == "∞"  # as REPORT.md's inf


def test_the_chosen_run_is_in_the_url_and_a_bad_link_is_named(roots, app_page):
    """Reloading the page (or sharing its link) went back to the default run, and a link naming a run was ignored
    without a word (dashboard review). The URL's update on a choice is Streamlit's binding: the browser test."""
    from apptest_helpers import APP
    from streamlit.testing.v1 import AppTest

    def opened_by_link(run_id: str) -> AppTest:  # the link's parameters are there from the session's first run
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.query_params["phrases_run"] = run_id
        at.run()
        return at.switch_page("views/phrases.py").run()

    write_three(roots["cached"])
    at = opened_by_link("a-seq")
    assert at.selectbox(key="phrases_run").value == "a-seq" and not at.warning
    from dashboard import loading, wording

    record = next(r for r in loading.runs_frame().to_dict("records") if r["run_id"] == "c-seq-inf")
    at = opened_by_link(wording.run_option_label(record))  # what Streamlit writes to the URL on a choice: a reload
    assert at.selectbox(key="phrases_run").value == "c-seq-inf" and not at.warning
    at = opened_by_link("no-such-run")
    assert at.selectbox(key="phrases_run").value == "b-seq-by-user"
    assert [w.value for w in at.warning] == ["The link's phrases_run=no-such-run is not a finished run with a phrase "
                                             "table here: showing b-seq-by-user."]


def test_phrases_open_on_a_private_run_when_none_is_by_user(roots, app_page):
    write_run(roots["cached"], "a-seq", "seqpate", phrases=phrase_rows(1.0))
    write_run(roots["cached"], "b-seq-inf", "seqpate", epsilon=math.inf, phrases=names([math.inf]))
    at = app_page("phrases")
    assert at.selectbox(key="phrases_run").value == "a-seq"


def test_phrases_open_on_the_preset_the_other_pages_show(roots, app_page):
    """A walk chose tiny on the Overview and found Phrases on a quick run, although a tiny by-user run existed."""
    write_run(roots["cached"], "tiny-by-user", "seqpate", partition="by-user", phrases=names([3.0]))
    write_run(roots["cached"], "tiny-plain", "noisysgd", phrases=names([3.0]))
    write_run(roots["cached"], "quick-by-user", "seqpate", preset="quick", partition="by-user", phrases=names([3.0]))
    at = app_page("phrases")  # tiny has the most runs
    assert at.selectbox(key="phrases_run").value == "tiny-by-user"
    at = app_page(query={"overview_preset": "quick"})  # the Overview opened on quick
    at.switch_page("views/phrases.py").run()
    assert at.selectbox(key="phrases_run").value == "quick-by-user"
    write_run(roots["cached"], "quick-pub", "pub-gpt", preset="quick", phrases=names([0.0]))
    at = app_page(query={"overview_preset": "quick"})
    at.switch_page("views/phrases.py").run()
    assert at.selectbox(key="phrases_run").value == "quick-by-user"  # a private by-user run still comes first


def test_a_phrase_avg_run_is_flagged_as_a_heuristic_and_a_sample_target_run_is_not(roots, app_page):
    write_run(roots["cached"], "a-avg", "seqpate", phrases=names([3.0]), config={"privacy__target": "phrase-avg"})
    write_run(roots["cached"], "b-sample", "seqpate", phrases=names([3.0]))
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("a-avg").run()
    assert [w.value for w in at.warning] == [tables.PHRASE_TARGET_HEURISTIC]
    at.selectbox(key="phrases_run").set_value("b-sample").run()
    assert not at.warning


def test_phrase_table_has_readable_headers_and_no_none(roots, app_page):
    write_three(roots["cached"])
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("b-seq-by-user").run()
    table = at.dataframe[0].proto
    config = json.loads(table.columns)
    # a missing value (in_completions of a canary) shows blank, not "None"
    assert table.HasField("placeholder") and table.placeholder == ""
    labels = {col: config[col]["label"] for col in table.column_order}
    assert labels["contains_private_text"] == "private text" and labels["in_completions"] == "in completions"
    assert config["contains_private_text"]["type_config"]["type"] == "checkbox"  # a tick, not the word True
    assert labels["epsilon"] == "ε" and all("_" not in label for label in labels.values())
    assert "inserted" not in table.column_order  # names only (the kind shown first): no copies inserted
    at.radio(key="phrases_kind").set_value("all").run()
    table = at.dataframe[0].proto
    assert "inserted" in table.column_order and json.loads(table.columns)["inserted"]["label"] == "copies inserted"


def test_phrase_filters_keep_the_rows_at_or_above_their_counts(roots, app_page):
    write_three(roots["cached"])
    at = app_page("phrases")
    at.radio(key="phrases_kind").set_value("all").run()  # the names (2 occurrences) and the canary (10)
    assert len(at.dataframe[0].value) == 4
    at.number_input(key="phrases_min_occ").set_value(3).run()
    assert list(at.dataframe[0].value["phrase"]) == ["my ID is 123456"]
    at.number_input(key="phrases_min_occ").set_value(11).run()  # past the table's largest count: none, not all
    assert len(at.dataframe[0].value) == 0 and not at.error
    at.number_input(key="phrases_min_occ").set_value(-1).run()  # no count is negative: said, and no filter
    assert at.error[0].value == "Occurring at least … times must be at least 0, got -1"
    assert len(at.dataframe[0].value) == 4


def test_histogram_leaves_out_runs_without_finite_epsilon_and_names_identical_ones(roots, app_page):
    write_three(roots["cached"])
    write_run(roots["cached"], "d-sgd", "noisysgd", phrases=names([3.0, 3.0, 6.5]))  # the by-user run's names' ε
    at = app_page("phrases")
    at.selectbox(key="phrases_run").set_value("b-seq-by-user").run()
    open_tab(at, "phrases_tab", "ε histogram")
    at.multiselect(key="phrases_hist_runs_b-seq-by-user").set_value(["b-seq-by-user", "d-sgd", "c-seq-inf"]).run()
    assert not at.exception
    hist, = plotly_specs(at)
    assert [t["name"] for t in hist["data"]] == ["SeqPATE: b-seq-by-user", "NoisySGD: d-sgd"]  # no empty c-seq-inf
    assert hist["layout"]["barmode"] == "group"  # identical runs side by side, not one colour over the other
    seq, sgd = hist["data"]
    assert seq["y"] == sgd["y"] and sum(seq["y"]) == 3
    axis = hist["layout"]["xaxis"]
    assert axis["ticktext"][0] == "3" and axis["range"][0] <= math.log10(3)  # the first bar (ε 3) has its label
    assert axis["ticktext"] == ["3", "4", "5", "6"]  # and the bar at 6.5 a tick beside it (it had 3 and 5 only)
    captions = " ".join(c.value for c in at.caption)
    assert "Not drawn (no phrase with a finite ε above 0): c-seq-inf." in captions
    assert "Same phrase ε in b-seq-by-user, d-sgd" in captions


def test_a_log_axis_gets_round_ticks_fine_enough_to_read_its_bars():
    """A histogram of ε 3 to 9.6 had ticks at 3 and 5 only: its bars at 6.6, 7 and 9.6 were read by hovering."""
    from dashboard.charts import log_ticks

    assert log_ticks(2.9, 9.9) == [3, 4, 5, 6, 7, 8, 9]
    assert log_ticks(2.5, 70) == [3, 5, 7, 10, 20, 30, 50, 70]  # coarser per decade as the span grows, 3 kept
    assert log_ticks(0.8, 20_000) == [1, 3, 10, 30, 100, 300, 1000, 3000, 10_000]  # names to a 100x canary
    assert log_ticks(1e-3, 1e30) == [1e-3, 10, 1e5, 1e9, 1e13, 1e17, 1e21, 1e25, 1e29]  # decades, thinned to 10
    assert log_ticks(0.3, 0.7) == [0.3, 0.4, 0.5, 0.6, 0.7]  # no float dust (3 * 0.1 is 0.30000000000000004)


def test_the_page_says_what_a_phrase_is_and_what_its_epsilon_protects(roots, app_page):
    """A teacher walk found no word that a name counts wherever its word occurs, by any user (one quick name is in
    14 sentences by 13 users), nor that the √2·n sensitivity is SeqPATE's only."""
    write_three(roots["cached"])
    caption = app_page("phrases").caption[0].value
    assert "a name counts wherever its word occurs in the private training sentences, by any user" in caption
    assert "for DP-SGD, group privacy over the sentences that hold it (with user batches, over the batches" in caption


def test_the_teachers_per_user_note_gives_the_partitions_reason(roots, app_page):
    """A random-partition run of 10 teachers and 265 users was said to have "more teachers than the users can fill
    one each" (a reviewer): its users spread because the random partition scatters their sentences."""
    spread = {"1": 40, "2": 60, "3": 100, ">3": 65, "mean": 2.93}
    write_run(roots["cached"], "a-random", "seqpate", partition="random", phrases=phrase_rows(1.0),
              teachers_per_user=spread)
    write_run(roots["cached"], "b-by-user", "seqpate", partition="by-user", phrases=phrase_rows(1.0),
              teachers_per_user=spread)
    write_run(roots["cached"], "c-few", "seqpate", partition="random", phrases=phrase_rows(1.0),
              teachers_per_user={"1": 250, "2": 15, "3": 0, ">3": 0, "mean": 1.06})

    def note(run_id: str) -> str:
        at = app_page(query={"phrases_run": run_id}).switch_page("views/phrases.py").run()  # a link to the run
        assert at.selectbox(key="phrases_run").value == run_id
        [caption] = [c.value for c in open_tab(at, "phrases_tab", "Teachers per user").caption
                     if c.value.startswith("How many teachers hold")]
        return caption.split("paper Table 5): ")[1]

    assert note("a-random").endswith("Here a user sits in 2.93 teachers on average: the random partition deals "
                                     "each sentence to any teacher, so a user's sentences scatter over as many "
                                     "teachers as chance puts them in, so phrase epsilons grow.")
    assert "splits a user where teachers outnumber users, where the user wrote more sentences" in note("b-by-user")
    assert "on average" not in note("c-few")
