"""Calculator and Export pages, the HTML report, and that the dashboard never imports torch."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
from apptest_helpers import ROOT, metrics, plotly_specs, texts
from fake_runs import phrase_rows, write_run

from core.privacy import dpsgd_epsilon, epsilon_for_gaussian, gaussian_noise_multiplier
from dashboard.wording import fmt_noise


def test_calculator_seqpate_matches_core_privacy(roots, app_page):
    at = app_page("calculator")
    assert not at.exception
    z = gaussian_noise_multiplier(3.0, 1e-6, 2000)  # the quick preset's Q
    shown = metrics(at)
    assert shown["noise multiplier z"] == fmt_noise(z) == "69.0436"  # six digits: typed back, 69.04 is short
    assert shown["noise std σ"] == fmt_noise(z * math.sqrt(2)) == "97.6424"
    assert shown["σ / M"] == f"{z * math.sqrt(2) / 1000:.4g}"  # the quick preset's 1,000 teachers by default
    noise, = plotly_specs(at)
    titles = [note["text"] for note in noise["layout"]["annotations"]]
    # the two panels' titles are its only annotations (an hline annotation sat at log10 coordinates, y = 10)
    assert titles == ["Noise on the average teacher<br>distribution vs teachers", "ε spent vs queries<br>at this noise"]
    level = next(trace for trace in noise["data"] if trace["name"].startswith("std / M = 1"))
    assert level["y"] == [1.0, 1.0]  # the reference drawn at σ / M = 1, labelled in the legend
    assert level.get("xaxis", "x") == "x" and noise["layout"]["yaxis"]["type"] == "log"
    eps_line = next(trace for trace in noise["data"] if trace["name"] == "ε")
    at_q = dict(zip(eps_line["x"], eps_line["y"], strict=True))[2000]  # the right panel: ε at the chosen Q
    assert eps_line["xaxis"] == "x2" and abs(at_q - 3.0) < 1e-6
    # δ is typed as text, as on the Launch page: what is typed is what is used (a %.1e number box showed 1.26e-7
    # as 1.3e-7 and computed with 1.26e-7)
    at.text_input(key="calc_sp_delta").input("1.26e-7").run()
    assert metrics(at)["noise multiplier z"] == fmt_noise(gaussian_noise_multiplier(3.0, 1.26e-7, 2000))
    for typed, reason in [("1e-13", "δ must be at least 1e-12"), ("0", "δ must be in (0, 1)"),
                          ("abc", "δ must be a number")]:
        at.text_input(key="calc_sp_delta").input(typed).run()
        assert not at.exception and any(reason in e.value for e in at.error), typed
        assert "noise multiplier z" not in metrics(at)  # nothing computed from an unusable δ
    at.text_input(key="calc_sp_delta").input("1e-6").run()
    assert metrics(at)["noise multiplier z"] == shown["noise multiplier z"]
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    at.number_input(key="calc_sp_std").set_value(69.04).run()
    at.number_input(key="calc_sp_queries").set_value(1000).run()
    assert metrics(at)["ε"] == f"{epsilon_for_gaussian(69.04, 1000, 1e-6):.4g}"
    # so much noise that δ alone covers the bound: ε is 0, and the reading says what that means (a walk read "ε must
    # be a positive number" there)
    at.number_input(key="calc_sp_std").set_value(1e6).run()
    at.number_input(key="calc_sp_queries").set_value(1).run()
    assert metrics(at)["ε"] == "0" and "ε = 0 at this δ: whatever anyone can observe" in texts(at)
    assert "must be a positive number" not in texts(at)
    at.radio(key="calc_sp_mode").set_value("queries from ε and noise").run()
    at.number_input(key="calc_sp_std").set_value(100.0).run()  # it kept the 10^6 typed above
    q = int(metrics(at)["queries Q"].replace(",", ""))
    assert epsilon_for_gaussian(100.0, q, 1e-6) <= 3.0 < epsilon_for_gaussian(100.0, q + 1, 1e-6)


def test_calculator_modes_keep_what_was_typed_and_answer_each_other(roots, app_page):
    """A walk set Q = 1,000 and M = 10, switched "noise from ε" to "ε from noise", and read an ε for Q = 2,000 (its
    box had gone back to the default) and σ = 100: the shared boxes keep their values, and σ opens on the one just
    computed, so the ε typed comes back."""
    at = app_page("calculator")
    at.number_input(key="calc_sp_queries").set_value(1000).run()
    at.number_input(key="calc_sp_teachers").set_value(10).run()
    std = metrics(at)["noise std σ"]
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    assert at.number_input(key="calc_sp_queries").value == 1000 and at.number_input(key="calc_sp_teachers").value == 10
    assert at.number_input(key="calc_sp_std").value == pytest.approx(float(std), abs=0.01)  # rounded up
    shown = metrics(at)
    assert shown["queries Q"] == "1,000" and float(shown["ε"]) == pytest.approx(3.0, abs=0.01)  # σ rounded to 0.01
    # σ was rounded up (69.0425 to 69.05), so the ε and Q typed fit it: rounded to nearest (69.04), 999 did
    at.radio(key="calc_sp_mode").set_value("queries from ε and noise").run()
    assert metrics(at)["queries Q"] == "1,000"
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    at.number_input(key="calc_sp_std").set_value(50.0).run()  # a σ typed here stays through the other modes
    at.radio(key="calc_sp_mode").set_value("queries from ε and noise").run()
    assert at.number_input(key="calc_sp_std").value == 50.0 and at.text_input(key="calc_sp_eps").value == "3"
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    assert at.number_input(key="calc_sp_std").value == 50.0 and at.number_input(key="calc_sp_queries").value == 1000
    # a second round trip, at another ε (a review found the σ box kept its first value after the first visit)
    at.radio(key="calc_sp_mode").set_value("noise from ε").run()
    at.text_input(key="calc_sp_eps").input("1").run()
    std = metrics(at)["noise std σ"]
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    assert at.number_input(key="calc_sp_std").value == pytest.approx(float(std), abs=0.01)  # rounded up
    assert float(metrics(at)["ε"]) == pytest.approx(1.0, abs=0.01) and not at.error
    # a σ beyond the box's range is carried at its edge, not refused in the other mode
    at.radio(key="calc_sp_mode").set_value("noise from ε").run()
    at.text_input(key="calc_sp_eps").input("0.01").run()
    at.number_input(key="calc_sp_queries").set_value(1e12).run()
    std = gaussian_noise_multiplier(0.01, 1e-6, 10**12) * math.sqrt(2)
    shown = metrics(at)["noise std σ"]
    assert shown == fmt_noise(std) and "," in shown and "e" not in shown  # 433,244,856.9, not 4.332e+08
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    assert at.number_input(key="calc_sp_std").value == 1e6 and not at.error


def test_calculator_counts_are_whole_numbers_rounded_as_shown(roots, app_page):
    """Count boxes are float boxes that show no decimals (so that a typed 1e9 reads as 10^9, see the browser
    test); what they pass on is the whole number the box shows: 2,000.5 shows as 2001 (half up, as JavaScript's
    toFixed), where Python's round would give 2,000."""
    at = app_page("calculator")
    at.number_input(key="calc_sp_queries").set_value(2000.5).run()
    assert metrics(at)["queries Q"] == "2,001"
    assert metrics(at)["noise multiplier z"] == fmt_noise(gaussian_noise_multiplier(3.0, 1e-6, 2001))
    at.number_input(key="calc_sp_queries").set_value(1e9).run()
    assert metrics(at)["queries Q"] == "1,000,000,000" and not at.exception
    # ε is typed as text, as on Launch: 0.005 and 2.345 are the ε Launch takes (a 2-decimal box read 0.01, 2.35)
    at.text_input(key="calc_sp_eps").input("0.005").run()
    assert metrics(at)["ε"] == "0.005"
    at.text_input(key="calc_sp_eps").input("2.345").run()
    assert metrics(at)["ε"] == "2.345"  # as typed (3 significant digits showed 2.35)
    at.text_input(key="calc_sp_eps").input("0.005").run()
    assert metrics(at)["noise multiplier z"] == fmt_noise(gaussian_noise_multiplier(0.005, 1e-6, 10**9))
    # ε ends where the engine's range does (ε 10^9 ran the server out of memory): past it, the reason is named under
    # the box and nothing is computed
    for typed, reason in [("5000", "ε must be at most 1000"), ("0", "ε must be a positive number or inf, got 0.0"),
                          ("1e-320", "ε must be at least 1e-06"),  # autodp's search for the noise never ended
                          ("inf", "ε = ∞ means no noise: there is nothing to calculate"), ("abc", "ε must be a number")]:
        at.text_input(key="calc_sp_eps").input(typed).run()
        assert [e.value for e in at.error if e.value.startswith("ε ")] and reason in at.error[0].value, typed
        assert "ε" not in metrics(at)
    at.text_input(key="calc_sp_eps").input("3").run()
    at.number_input(key="calc_sp_queries").set_value(2e12).run()
    assert [e.value for e in at.error] == ["queries Q must be from 1 to 1,000,000,000,000, got 2,000,000,000,000"]
    at.number_input(key="calc_sp_queries").set_value(0).run()
    assert [e.value for e in at.error] == ["queries Q must be from 1 to 1,000,000,000,000, got 0"]
    at.number_input(key="calc_sp_queries").set_value(0.4).run()  # shows as 0: what was typed is named beside it
    assert [e.value for e in at.error] == ["queries Q must be from 1 to 1,000,000,000,000, got 0 (you typed 0.4; "
                                           "the box keeps whole numbers)"]
    assert "ε" not in metrics(at) and not at.exception


def test_calculator_an_emptied_box_is_named_not_replaced(roots, app_page):
    """A walk emptied the σ box and read "must be from 0.01 to 1,000,000.00, got -1,000,000,000,000,000.00"
    (Streamlit hands back a box's default for an empty one, its min_value where none is given), and emptied Q and
    M and got answers for the defaults 2,000 and 1,000 without a word. Each is now named, and nothing computed."""
    at = app_page("calculator")
    at.radio(key="calc_sp_mode").set_value("ε from noise").run()
    at.number_input(key="calc_sp_queries").set_value(1000).run()
    for key, label in (("calc_sp_std", "noise std σ"), ("calc_sp_queries", "queries Q"),
                       ("calc_sp_teachers", "teachers M")):
        at.number_input(key=key).set_value(None).run()
        assert [e.value for e in at.error] == [f"{label} is empty: type a number"], key
        assert "ε" not in metrics(at) and not at.exception
        at.number_input(key=key).set_value(50.0 if key == "calc_sp_std" else 1000).run()
        assert float(metrics(at)["ε"]) == pytest.approx(epsilon_for_gaussian(50.0, 1000, 1e-6), rel=1e-3)
    at = app_page("calculator")
    at.session_state["calc_tab"] = "DP-SGD"
    at.session_state["calc_dp_mode"] = "ε from noise multiplier"
    at.run()
    for key, label in (("calc_dp_n", "private training sentences N"), ("calc_dp_batch", "expected batch size"),
                       ("calc_dp_epochs", "epochs"), ("calc_dp_sigma", "noise multiplier")):
        value = at.number_input(key=key).value
        at.number_input(key=key).set_value(None).run()
        assert [e.value for e in at.error] == [f"{label} is empty: type a number"], key
        assert "ε" not in metrics(at) and not at.exception
        at.number_input(key=key).set_value(value).run()
        assert metrics(at)["ε"] == f"{dpsgd_epsilon(1.0, 32 / 20000, math.ceil(2 * 20000 / 32), 1e-6):.4g}"


def test_calculator_dpsgd_refuses_step_counts_it_cannot_account(roots, app_page):
    at = app_page("calculator")
    at.session_state["calc_tab"] = "DP-SGD"
    at.session_state["calc_dp_mode"] = "ε from noise multiplier"
    at.run()
    at.number_input(key="calc_dp_n").set_value(10**9).run()
    at.number_input(key="calc_dp_batch").set_value(1).run()
    from core.privacy import poisson_shape

    steps = poisson_shape(10**9, 1, 2)[1]  # 1,999,999,998: opacus' int(1 / q) at q = 1e-9 rounds down
    assert not at.exception and any(f"{steps:,} steps" in e.value and "up to 1,000,000 steps" in e.value
                                    for e in at.error)
    assert "ε" not in metrics(at)


def test_calculator_dpsgd_tab(roots, app_page):
    at = app_page("calculator")
    at.session_state["calc_tab"] = "DP-SGD"
    at.session_state["calc_dp_mode"] = "ε from noise multiplier"  # the cheaper direction (one PLD evaluation)
    at.run()
    assert not at.exception
    shown = metrics(at)
    q, steps = 32 / 20000, math.ceil(2 * 20000 / 32)
    assert shown["steps"] == f"{steps:,}"
    assert shown["ε"] == f"{dpsgd_epsilon(1.0, q, steps, 1e-6):.4g}"
    # the runs' Poisson shape (core.privacy.poisson_shape), not epochs · N / batch: 2,970 sentences in batches of 32
    # are 93 batches, of which opacus draws 92 per epoch
    at.number_input(key="calc_dp_n").set_value(2970).run()
    assert (metrics(at)["sampling rate q"], metrics(at)["steps"]) == (f"{1 / 93:.4g}", "184")
    assert metrics(at)["ε"] == f"{dpsgd_epsilon(1.0, 1 / 93, 184, 1e-6):.4g}"
    at.number_input(key="calc_dp_n").set_value(20000).run()
    at.number_input(key="calc_dp_sigma").set_value(0.8).run()
    at.number_input(key="calc_dp_batch").set_value(50000).run()  # more than the 20,000 sentences
    assert not at.exception and "cannot exceed the number of training sentences" in at.error[0].value
    assert "ε" not in metrics(at)
    assert at.number_input(key="calc_dp_sigma").value == 0.8  # the other boxes stay on the page meanwhile
    at.number_input(key="calc_dp_batch").set_value(32).run()  # corrected: the noise typed before is still there
    assert at.number_input(key="calc_dp_sigma").value == 0.8
    assert metrics(at)["ε"] == f"{dpsgd_epsilon(0.8, q, steps, 1e-6):.4g}"


def test_calculator_dpsgd_hands_its_noise_multiplier_to_the_other_mode(roots, app_page):
    """Switching from "noise multiplier from ε" to "ε from noise multiplier" showed the box's 1.00 again (the
    SeqPATE tab carries its σ over): a teacher's round trip did not give their ε back."""
    from core.privacy import dpsgd_noise_multiplier, poisson_shape

    at = app_page("calculator")
    at.session_state["calc_tab"] = "DP-SGD"
    at.run()
    at.number_input(key="calc_dp_n").set_value(2000).run()
    q, steps = poisson_shape(2000, 32, 2)
    sigma = dpsgd_noise_multiplier(3.0, 1e-6, q, steps)
    assert metrics(at)["noise multiplier"] == f"{sigma:.4g}"
    at.radio(key="calc_dp_mode").set_value("ε from noise multiplier").run()
    carried = at.number_input(key="calc_dp_sigma").value
    assert carried == math.ceil(sigma * 10**4) / 10**4 and carried - sigma < 1e-4  # rounded up, to 4 decimals
    eps = dpsgd_epsilon(carried, q, steps, 1e-6)
    assert 2.99 < eps <= 3.0 and metrics(at)["ε"] == f"{eps:.4g}" and not at.exception


def test_export_page_and_self_contained_report(roots, app_page):
    write_run(roots["cached"], "seq", "seqpate", phrases=phrase_rows())
    write_run(roots["cached"], "pub", "pub-gpt")
    at = app_page("export")
    assert not at.exception
    assert at.get("download_button"), "CSV and report download buttons"
    at.selectbox(key="export_table").set_value("phrases of a run").run()
    at.selectbox(key="export_table_run_phrases").set_value("seq").run()
    assert not at.exception
    assert list(at.dataframe[0].value["phrase"])[:1] == ["Alice Smith"]


def test_report_html_is_self_contained(roots):
    from dashboard import loading, report

    run = write_run(roots["cached"], "seq", "seqpate", phrases=phrase_rows(), r_name=0.03)
    write_run(roots["cached"], "pub", "pub-gpt")
    frame = loading.finished_frame(loading.runs_frame())
    record = frame.set_index("run_id").loc["seq"].to_dict() | {"run_id": "seq"}
    figures = report.report_figures(record, frame, run.progress())
    document = report.build_report_html(record, run.config()["config"], run.privacy(), run.metrics(),
                                        run.completions(), ["Alice Smith"], figures)
    assert len(figures) == 2
    assert document.count("<script") >= 2 and "<script src" not in document.replace(" ", " ")
    assert "window.Plotly" in document or "plotly.js" in document.lower()  # the library itself is inlined
    assert "analytic-gaussian (exact composition)" in document
    assert "<mark>Alice Smith</mark>" in document
    assert "seqpate.teachers" in document and "r_name" in document


def test_dashboard_never_imports_torch(tmp_path):
    """Every page runs in a fresh interpreter without torch, transformers or opacus being imported."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests" / "dashboard")!r}]
        os.environ["SEQPATE_RUNS_DIR"] = {str(tmp_path / "runs")!r}
        os.environ["SEQPATE_CACHED_RUNS_DIR"] = {str(tmp_path / "cached")!r}
        from fake_runs import phrase_rows, write_run
        from pathlib import Path
        write_run(Path({str(tmp_path / "cached")!r}), "seq", "seqpate", phrases=phrase_rows())
        from streamlit.testing.v1 import AppTest
        at = AppTest.from_file({str(ROOT / "dashboard" / "app.py")!r}, default_timeout=60).run()
        for page in ("launch", "runs", "privacy_utility", "phrases", "completions", "calculator", "export"):
            at.switch_page(f"views/{{page}}.py").run()
            assert not at.exception, (app_page, at.exception)
        heavy = sorted(m for m in ("torch", "transformers", "opacus") if m in sys.modules)
        print("HEAVY", heavy)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout


def test_the_shared_dashboard_modules_leave_the_privacy_code_to_the_pages_that_compute_noise():
    """core.privacy (autodp, scipy: about 1 s) is imported lazily, by Launch, the Calculator and Phrases, and
    warmed in a background thread; the modules every page uses pulled it in anyway through core.analysis (the
    heuristic's reason), so every first page load paid it."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import dashboard.charts, dashboard.launch_settings, dashboard.loading, dashboard.report
        import dashboard.tables, dashboard.widgets, dashboard.wording
        print("LOADED", sorted(m for m in ("core.privacy", "core.analysis", "autodp", "scipy") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOADED []" in done.stdout


def test_plain_language_reading():
    from dashboard.wording import epsilon_reading

    assert "no formal protection" in epsilon_reading(math.inf, 1e-6)
    text = epsilon_reading(1.0, 1e-6)
    assert "2.72×" in text and "guesses right at most 73.1% of the time, plus at most δ." in text and "strong" in text
    # δ is added to every probability, not a chance that the bound fails (which Gaussian noise does not give)
    assert "plus an added probability δ = 1e-06 (not a chance that the bound fails" in text
    # e^1000 = 10^434.29 = 1.97e+434: written out, not capped at a float's range
    assert "e^ε ≈ 2.0e+434×" in epsilon_reading(1000.0, 1e-6) and "at most 100% of" in epsilon_reading(1000.0, 1e-6)
    assert "at most 99.97% of the time" in epsilon_reading(8.0, 1e-6)  # it read 100.0%, beside "moderate"
    # SeqPATE's neighbours are not DP-SGD's add/remove ones: named where SeqPATE is read
    assert "than without it (for SeqPATE: than with that sentence's content removed or replaced by another" in \
        epsilon_reading(3.0, 1e-6, seqpate=True) and "for SeqPATE" not in text
    assert "e^ε ≈ 8.0e+434294481×" in epsilon_reading(1e9, 1e-6)
    # a large delta makes the guarantee weak whatever epsilon says
    assert "Protection: weak: δ = 0.4 is large" in epsilon_reading(1.0, 0.4)
    assert "Protection: strong" in epsilon_reading(1.0, 1e-5)


def test_no_page_accepts_a_path_as_run_id(roots):

    from core.runs import RunNotFoundError
    from dashboard import loading

    write_run(roots["cached"], "seq", "seqpate")
    assert loading.get_run("seq").run_id == "seq"
    for bad in (str(roots["cached"] / "seq"), "../cached_runs/seq", "..", "/etc"):
        with pytest.raises(RunNotFoundError):
            loading.get_run(bad)


@pytest.mark.parametrize(("epsilon", "queries"),
                         [(3.0, 1000), (0.05, 1000), (0.3, 5000), (1.0, 2000), (8.0, 10), (1.0, 1000)])
def test_a_noise_level_typed_back_as_shown_buys_the_queries_that_made_it(epsilon, queries):
    """σ 69.0436 shown as 69.04 answered 999 queries for 1,000; at five digits (3,097.9 for ε 0.05) so did half
    of the σ above 1,000 a review tried. Shown rounded up to six digits, typed back it answers at least Q."""
    from core.privacy import gaussian_std
    from dashboard import privacy_math

    std = privacy_math.seqpate_noise(epsilon, 1e-6, queries)["std"]
    # the σ a run of these settings calibrates, to the last bit (at ε 1, Q 1,000, z * sqrt(2) is 6e-13 below it)
    assert std == gaussian_std(epsilon, 1e-6, queries)
    typed = float(fmt_noise(std).replace(",", ""))
    assert typed >= std and (typed - std) / std < 1e-5
    assert privacy_math.seqpate_max_queries(epsilon, 1e-6, typed) >= queries
