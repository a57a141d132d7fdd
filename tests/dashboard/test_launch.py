"""Launch: instant noise preview, refusal of invalid settings, URL round trip, background launch."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch
from apptest_helpers import metrics, texts

from core.config import ConfigError, preset_config
from core.privacy import gaussian_noise_multiplier
from core.runs import jobs


@pytest.fixture
def fake_job(tmp_path, monkeypatch):
    """Launched jobs run a script that exits at once instead of training."""
    script = tmp_path / "fake_job.py"
    script.write_text("import sys\n")
    monkeypatch.setattr(jobs, "JOB_COMMAND", [str(script)])
    return script


def test_sigma_shown_equals_calibration(roots, app_page):
    at = app_page("launch", {"preset": "tiny", "eps": "2", "delta": "1e-5", "methods": "seqpate"})
    assert not at.exception
    z = gaussian_noise_multiplier(2.0, 1e-5, 1000)  # tiny preset: query budget 1000, 10 teachers
    shown = metrics(at)
    assert shown["noise multiplier z"] == f"{z:.4g}"
    assert shown["noise std σ"] == f"{z * math.sqrt(2):.4g}"
    assert shown["σ / M"] == f"{z * math.sqrt(2) / 10:.4g}"
    assert shown["query budget Q"] == "1,000"
    assert "e^ε ≈ 7.39×" in texts(at)  # the plain-language reading of epsilon 2


def test_dp_sgd_noise_shown_is_what_each_method_calibrates(roots, app_page):
    """A review found one number for every DP-SGD method, from the small batch: NoisySGD-GC+pseudo samples ghost
    clipping's batch of 512 (tiny: q 0.25 over 8 steps, z 1.596, where the page showed 0.7919)."""
    from core.config import dpsgd_batch_size
    from core.privacy import dpsgd_noise_multiplier, poisson_shape

    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "noisysgd,noisysgd-gc+pseudo"})
    assert not at.exception
    shown = [(m.label, m.value) for m in at.metric]
    expected = []
    for method in ("noisysgd", "noisysgd-gc+pseudo"):
        cfg = preset_config("tiny", method=method)
        q, steps = poisson_shape(cfg.data.private_train, dpsgd_batch_size(cfg), cfg.dpsgd.epochs)
        z = dpsgd_noise_multiplier(3.0, 1e-6, q, steps)
        expected += [("noise multiplier", f"{z:.4g}"), ("sampling rate q", f"{q:.4g}"), ("steps", f"{steps:,}")]
    assert shown == expected
    assert expected[3:] == [("noise multiplier", "1.596"), ("sampling rate q", "0.25"), ("steps", "8")]
    at.text_input(key="launch_eps").set_value("inf").run()  # no noise: said, as SeqPATE's box says it
    assert "ε = ∞: NoisySGD, NoisySGD-GC + pseudo add no noise at all" in texts(at)


@pytest.mark.parametrize("ablation", ["-gaussian", "-all"])
def test_laplace_ablations_show_the_laplace_scale_the_run_will_use(roots, app_page, ablation):
    """Those ablations release Laplace noise: the preview is the engine's own calibration, not the Gaussian's."""
    from core.privacy import laplace_scale
    from core.seqpate.run import calibrate_noise

    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "seqpate",
                             "ablation": ablation})
    assert not at.exception
    mechanism, scale = calibrate_noise("laplace", 3.0, 1e-6, 1000)  # what run_seqpate calibrates for Q = 1000
    assert mechanism == "laplace" and scale == pytest.approx(laplace_scale(3.0, 1e-6, 1000, 2.0))
    shown = metrics(at)
    assert shown["Laplace scale b"] == f"{scale:.4g}" and shown["b / M"] == f"{scale / 10:.4g}"
    assert "noise multiplier z" not in shown
    assert "accountant: PLD (Laplace releases)" in texts(at)
    # the density, as a student would copy it (it read b·e^(-|x|/b)/2, which does not integrate to 1)
    help_text = next(m.help for m in at.metric if m.label == "Laplace scale b")
    assert help_text.endswith("density e^(-|x|/b) / (2b)")


def test_adps_noise_is_named_as_the_floor_it_is(roots, app_page):
    """Launch called ADP's number "the base noise"; it is DP-SGD's multiplier, the smallest any batch gets and the
    one accounted (the shipped run records a base σ of 63 over a smallest weight of 0.0094)."""
    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "adp"})
    assert not at.exception
    assert ("Adaptive DP (the smallest noise any batch gets, the one accounted: ADP's base σ is this divided by the "
            "smallest batch weight, and each batch gets σ times its weight)") in [x.value for x in at.caption]


def test_invalid_epsilon_shows_config_error_and_launches_nothing(roots, app_page, fake_job):
    at = app_page("launch")
    at.text_input(key="launch_eps").set_value("-1").run()
    assert not at.exception
    with pytest.raises(ConfigError) as expected:
        preset_config("quick", method="seqpate", privacy__epsilon=-1.0)
    errors = [e.value for e in at.error]
    assert any(str(expected.value) in e for e in errors), errors
    assert at.button(key="launch_button").disabled  # nothing can be launched
    assert list(roots["live"].iterdir()) == []


def test_non_number_and_too_many_teachers_are_refused(roots, app_page, fake_job):
    at = app_page("launch", {"preset": "tiny"})
    at.text_input(key="launch_eps").set_value("lots").run()
    assert any("epsilon must be a number (or inf), got 'lots'" in e.value for e in at.error)
    at.text_input(key="launch_eps").set_value("3").run()
    at.number_input(key="launch_teachers").set_value(5000).run()
    assert any("5000 teachers but only 2000 private training sentences" in e.value for e in at.error)
    assert at.button(key="launch_button").disabled
    assert list(roots["live"].iterdir()) == []


def test_numbers_outside_a_boxs_range_are_refused_with_the_reason_not_replaced_by_the_last_good_one(
        roots, app_page, fake_job):
    """A browser walk typed 0 teachers: Streamlit's own bound turned the box red and kept 10 without a word, and
    "Launch 1 job" stayed on. Every such number now reaches the config, whose error disables the button."""
    at = app_page("launch", {"preset": "tiny", "methods": "seqpate"})
    for key, value, error in (("launch_teachers", 0, "teachers must be at least 1, got 0"),
                              ("launch_teachers", -5, "teachers must be at least 1, got -5"),
                              ("launch_teachers", 2e9, "teachers must be at most 1,000,000,000"),
                              ("launch_seed", -1, "seed must be a whole number from 0 to 4294967295, got -1")):
        at.number_input(key=key).set_value(value).run()
        assert any(error in e.value for e in at.error), (key, value, [e.value for e in at.error])
        assert at.button(key="launch_button").disabled
        at.number_input(key=key).set_value(None if key == "launch_teachers" else 0).run()
        assert not at.error and not at.button(key="launch_button").disabled
    at.radio(key="launch_filter_kind").set_value("top-p").run()
    for value, error in ((1.5, "top-p must be in (0, 1], got 1.5"), (0.0001, "top-p must be in (0, 1], got 0.0"),
                         (-0.2, "top-p must be in (0, 1], got -0.2")):
        at.number_input(key="launch_top_p").set_value(value).run()
        assert any(error in e.value for e in at.error), (value, [e.value for e in at.error])
        assert at.button(key="launch_button").disabled
    at.number_input(key="launch_top_p").set_value(1.0).run()  # allowed, and said to filter nothing
    assert not at.error and any("top-p 1 keeps every token: no candidate filtering" in x.value for x in at.caption)
    at.radio(key="launch_filter_kind").set_value("top-k").run()
    at.number_input(key="launch_top_k").set_value(0).run()
    assert any("top-k must be a positive integer, got 0" in e.value for e in at.error)
    assert at.button(key="launch_button").disabled and list(roots["live"].iterdir()) == []


def test_an_emptied_box_is_named_and_launches_nothing(roots, app_page, fake_job):
    """Streamlit hands back a number box's default for an empty one: an emptied Seed read -10^15 (its min_value)
    and was refused as that number. Seed, k and p emptied are named; an empty Teachers box is the preset's count."""
    at = app_page("launch", {"preset": "tiny", "methods": "seqpate"})
    at.number_input(key="launch_seed").set_value(None).run()
    assert [e.value for e in at.error] == ["Seed is empty: type a number", "Seed is empty: type a number"]
    assert at.button(key="launch_button").disabled and not at.exception
    at.number_input(key="launch_seed").set_value(2).run()
    at.number_input(key="launch_teachers").set_value(None).run()
    assert not at.error and not at.button(key="launch_button").disabled
    for kind, key, label in (("top-k", "launch_top_k", "k"), ("top-p", "launch_top_p", "p")):
        at.radio(key="launch_filter_kind").set_value(kind).run()
        at.number_input(key=key).set_value(None).run()
        assert f"{label} is empty: type a number" in [e.value for e in at.error], kind
        assert at.button(key="launch_button").disabled and not at.exception
    # without SeqPATE nothing reads the filter (its boxes are greyed out): an empty p refuses nothing
    at.multiselect(key="launch_methods").set_value(["pub-gpt"]).run()
    assert not at.error and not at.button(key="launch_button").disabled
    assert list(roots["live"].iterdir()) == []


def test_settings_round_trip_through_the_url(roots, app_page):
    query = {"methods": "seqpate,pub-gpt", "eps": "8", "delta": "1e-5", "teachers": "20", "filter": "top-k:50",
             "partition": "by-user", "ablation": "-kl", "preset": "tiny", "seed": "3"}
    at = app_page("launch", query)
    assert not at.exception
    assert at.multiselect(key="launch_methods").value == ["seqpate", "pub-gpt"]
    assert at.text_input(key="launch_eps").value == "8"
    assert at.number_input(key="launch_teachers").value == 20
    assert at.radio(key="launch_filter_kind").value == "top-k"
    assert at.number_input(key="launch_top_k").value == 50
    assert at.selectbox(key="launch_partition").value == "by-user"
    assert at.selectbox(key="launch_ablation").value == "-kl"
    assert at.selectbox(key="launch_preset").value == "tiny"
    assert at.number_input(key="launch_seed").value == 3
    # a change is written back to the URL
    at.text_input(key="launch_eps").set_value("0.5").run()
    assert at.query_params["eps"] == "0.5"
    assert at.query_params["filter"] == "top-k:50"
    assert at.query_params["methods"] == "seqpate,pub-gpt"


def test_bad_url_parameters_are_ignored_with_a_warning(roots, app_page):
    at = app_page("launch", {"preset": "huge", "methods": "seqpate,bogus", "seed": "-1"})
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "preset=huge" in warning and "methods=bogus" in warning and "seed=-1" in warning
    # each with the reason
    assert "preset=huge (not one of tiny, quick, paper)" in warning and "methods=bogus (no such method)" in warning
    assert "seed=-1 (not a whole number from 0 to 4,294,967,295)" in warning
    assert at.number_input(key="launch_seed").value == 0
    assert at.selectbox(key="launch_preset").value == "quick"
    # a link copied while the seed box was empty: named, as an empty ε is (it opened on seed 0 without a word)
    at = app_page("launch", {"seed": ""})
    assert "seed= (empty: 0 kept)" in " ".join(w.value for w in at.warning)
    assert at.number_input(key="launch_seed").value == 0


def test_a_url_parameter_the_page_does_not_know_is_named_not_dropped_unseen(roots, app_page):
    """?methds=seqpate (a typo) opened the page with no method chosen and the parameter gone from the URL."""
    at = app_page("launch", {"methds": "seqpate", "preset": "tiny"})
    assert not at.exception

    def link_warnings():  # not tiny's noise-dominance warning on the SeqPATE settings
        return [w.value for w in at.warning if not w.value.startswith("Noise-dominated")]

    [warning] = link_warnings()
    assert ("methds (not a Launch setting; these are methods, eps, delta, teachers, filter, partition, "
            "ablation, preset, seed)") in warning and "methds=seqpate" not in warning
    assert "methds" not in at.query_params and at.selectbox(key="launch_preset").value == "tiny"
    at.run()  # said once, as the other link warnings
    assert not link_warnings()
    at = app_page("launch", {"methds": "seqpate", "foo": "1", "preset": "tiny"})
    [warning] = link_warnings()
    assert "methds, foo (not Launch settings; these are methods, eps," in warning and warning.count("these are") == 1


def test_url_values_the_boxes_cannot_show_are_ignored_with_a_warning(roots, app_page):
    """top-p:0.9999999 launched top-p:1.0 (no filtering) without a word; teachers=1e30 crashed the page."""
    at = app_page("launch", {"methods": "seqpate", "filter": "top-p:0.9999999", "teachers": str(10**30),
                             "preset": "tiny"})
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "filter=top-p:0.9999999" in warning and f"teachers={10**30}" in warning
    assert at.radio(key="launch_filter_kind").value == "preset" and at.number_input(key="launch_teachers").value is None
    at = app_page("launch", {"methods": "seqpate", "filter": "top-p:0.999", "preset": "tiny"})
    assert at.number_input(key="launch_top_p").value == 0.999 and at.query_params["filter"] == "top-p:0.999"


def test_launch_queues_one_job_per_method(roots, app_page, fake_job):
    at = app_page("launch", {"preset": "tiny", "eps": "4", "methods": "seqpate,pub-gpt", "teachers": "5"})
    assert not at.exception
    at.button(key="launch_button").click().run()
    assert not at.exception
    runs = sorted(p for p in roots["live"].iterdir() if not p.name.startswith("."))
    assert len(runs) == 2
    configs = {json.loads((p / "config.json").read_text())["config"]["method"]: p for p in runs}
    assert set(configs) == {"seqpate", "pub-gpt"}
    seq = json.loads((configs["seqpate"] / "config.json").read_text())["config"]
    assert seq["privacy"]["epsilon"] == 4.0 and seq["seqpate"]["teachers"] == 5 and seq["preset"] == "tiny"
    assert "Queued 2 job(s)" in texts(at)
    # Pub-GPT takes no epsilon: its config keeps the preset's, and its run id names its fixed epsilon 0
    pub = json.loads((configs["pub-gpt"] / "config.json").read_text())["config"]
    assert pub["privacy"] == preset_config("tiny").to_dict()["privacy"] and "-pub-gpt-eps0-" in configs["pub-gpt"].name


def test_methods_without_epsilon_ignore_the_epsilon_box(roots, app_page, fake_job):
    at = app_page("launch", {"preset": "tiny", "methods": "pub-gpt,pri-gpt-blacklist", "eps": "abc"})
    assert not at.exception and not at.error
    assert not at.button(key="launch_button").disabled
    page = texts(at)
    assert "e^ε" not in page  # no reading of an epsilon nothing uses
    assert "ε and δ are not used by Pub-GPT, Pri-GPT + blacklist: their privacy" in page
    # the boxes are greyed out, as the CLI refuses text there; with SeqPATE chosen too they take input again
    assert at.text_input(key="launch_eps").disabled and at.text_input(key="launch_delta").disabled
    at.multiselect(key="launch_methods").set_value(["pub-gpt", "seqpate"]).run()
    assert not at.text_input(key="launch_eps").disabled
    assert any("epsilon must be a number (or inf), got 'abc'" in e.value for e in at.error)
    at.text_input(key="launch_eps").set_value("3").run()
    at.text_input(key="launch_delta").set_value("abc").run()
    assert any("delta must be a number, got 'abc'" in e.value for e in at.error)  # no "(or inf)" for a delta


def test_seqpate_settings_are_greyed_out_without_seqpate_and_each_ablation_is_explained(roots, app_page):
    from core.config import ABLATIONS

    at = app_page("launch", {"preset": "tiny", "methods": "pub-gpt"})
    seqpate_boxes = (at.number_input(key="launch_teachers"), at.selectbox(key="launch_partition"),
                     at.radio(key="launch_filter_kind"), at.selectbox(key="launch_ablation"))
    assert all(box.disabled for box in seqpate_boxes)  # a walk found them taking input that no run would read
    assert "choose SeqPATE to set them" in texts(at)
    at.multiselect(key="launch_methods").set_value(["pub-gpt", "seqpate"]).run()
    assert not any(box.disabled for box in (at.number_input(key="launch_teachers"), at.selectbox(key="launch_ablation")))
    help_text = at.selectbox(key="launch_ablation").help
    assert all(f"{name}: " in help_text for name in ABLATIONS) and "-merge_p: teachers vote" in help_text


def test_launch_says_how_many_jobs_run_at_once_with_how_many_threads_and_where(roots, app_page, fake_job, monkeypatch):
    monkeypatch.setenv("SEQPATE_MAX_JOBS", "2")
    monkeypatch.delenv("SEQPATE_THREADS", raising=False)
    monkeypatch.delenv("SEQPATE_DEVICE", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    at = app_page("launch", {"preset": "tiny", "methods": "pub-gpt"})
    at.button(key="launch_button").click().run()
    assert not at.exception
    assert ("Jobs run 2 at a time (`SEQPATE_MAX_JOBS`), each with 2 torch thread(s) on the CPU; the others wait "
            "queued.") in texts(at)
    monkeypatch.setenv("SEQPATE_DEVICE", "cuda")  # the jobs inherit it
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    at.run()
    assert "each with 2 torch thread(s) on the GPU (`SEQPATE_DEVICE=cuda`)" in texts(at)


@pytest.mark.parametrize("device", ["gpu", "cuda"])
def test_a_device_its_jobs_cannot_use_is_named_and_nothing_launches(roots, app_page, fake_job, monkeypatch, device):
    monkeypatch.setenv("SEQPATE_DEVICE", device)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # cuda where torch sees no GPU
    at = app_page("launch", {"preset": "tiny", "methods": "pub-gpt"})
    assert not at.exception
    said = {"gpu": "SEQPATE_DEVICE must be cpu or cuda, got 'gpu'",
            "cuda": f"SEQPATE_DEVICE=cuda, but torch {torch.__version__} sees no CUDA GPU"}[device]
    assert [e.value for e in at.error] == [f"{said}: it is set where the dashboard started, and its jobs would fail. "
                                           "Restart the dashboard without it, or with cpu, or with cuda on a machine "
                                           "with a GPU."]
    assert at.button(key="launch_button").disabled


def test_default_filter_is_the_presets_own(roots, app_page, fake_job):
    at = app_page("launch", {"preset": "quick", "methods": "seqpate"})
    assert not at.exception
    assert at.radio(key="launch_filter_kind").value == "preset"
    assert "quick's filter: top-k:10" in [x.value for x in at.caption]
    assert at.query_params["filter"] == ""
    at.button(key="launch_button").click().run()
    (run,) = [p for p in roots["live"].iterdir() if not p.name.startswith(".")]
    seq = json.loads((run / "config.json").read_text())["config"]["seqpate"]
    assert (seq["filter"], seq["teachers"]) == ("top-k:10", 1000)  # quick's settings chosen on public validation
    # another preset keeps the choice "the preset's", and its caption names that preset's filter (the browser test
    # checks the radio itself: a walk saw a relabelled radio lose its choice, which AppTest does not reproduce)
    at.selectbox(key="launch_preset").set_value("tiny").run()
    assert at.radio(key="launch_filter_kind").value == "preset" and at.query_params["filter"] == ""
    assert "tiny's filter: top-p:0.95" in [x.value for x in at.caption]
    # choosing a filter overrides it
    at.radio(key="launch_filter_kind").set_value("top-p").run()
    assert at.query_params["filter"] == "top-p:0.95"


def test_a_typed_k_or_p_survives_a_visit_to_another_page(roots, app_page):
    """A teacher typed k = 20, checked the Calculator and came back to k = 50 (the URL too): the box is drawn for
    one filter kind only, and the value seeded before it was first drawn outlived its own."""
    at = app_page("launch")
    at.radio(key="launch_filter_kind").set_value("top-k").run()
    at.number_input(key="launch_top_k").set_value(20).run()
    at.switch_page("views/calculator.py").run()
    at.switch_page("views/launch.py").run()
    assert at.number_input(key="launch_top_k").value == 20 and at.query_params["filter"] == "top-k:20"
    at.radio(key="launch_filter_kind").set_value("top-p").run()
    at.number_input(key="launch_top_p").set_value(0.8).run()
    at.switch_page("views/runs.py").run()
    at.switch_page("views/launch.py").run()
    assert at.number_input(key="launch_top_p").value == 0.8 and at.query_params["filter"] == "top-p:0.8"
    at.radio(key="launch_filter_kind").set_value("top-k").run()  # the other kind's value is kept too
    assert at.number_input(key="launch_top_k").value == 20


def test_by_user_partition_shows_the_teachers_per_user_the_run_will_record(roots, app_page):
    from core.data import load_prepared
    from core.seqpate.partition import partition_by_user, teachers_per_user

    at = app_page("launch", {"preset": "tiny", "methods": "seqpate", "partition": "by-user", "teachers": "300"})
    assert not at.exception
    cfg = preset_config("tiny", method="seqpate", seqpate__partition="by-user", seqpate__teachers=300)
    users = [s.user_id for s in load_prepared(cfg.data, 0).private_train]
    expected = teachers_per_user(users, partition_by_user(users, 300, 0))
    n_users = len(set(users))
    assert (f"By-user partition: {expected['1']:,} of {n_users:,} private users in one teacher, "
            f"{expected['mean']:.2f} teachers per user on average") in texts(at)
    # more teachers than users: the engine's own crowding note, before anything is launched
    assert any(w.value.startswith(f"300 teachers for {n_users} users") for w in at.warning)
    at.number_input(key="launch_teachers").set_value(10).run()
    assert not [w for w in at.warning if "teachers for" in w.value]


def test_an_impossible_by_user_partition_is_an_error_not_a_crash(roots, app_page):
    # the paper preset takes every private sentence, so only the data says that 90,000 teachers are too many
    at = app_page("launch", {"preset": "paper", "methods": "seqpate", "partition": "by-user", "teachers": "90000"})
    assert not at.exception
    assert any("90000 teachers but only" in e.value for e in at.error)
    assert at.button(key="launch_button").disabled


@pytest.mark.parametrize("value, problem", [("abc", True), ("0", True), ("-2", True), ("3", False), ("", False)])
def test_a_max_jobs_setting_that_cannot_be_used_is_said_on_the_launch_page(roots, app_page, monkeypatch, value, problem):
    monkeypatch.setenv("SEQPATE_MAX_JOBS", value)
    at = app_page("launch")
    assert not at.exception
    warned = f"SEQPATE_MAX_JOBS={value!r} is not a whole number of at least 1: jobs run one at a time"
    assert (warned in texts(at)) is problem
    assert jobs.max_parallel_jobs() == (3 if value == "3" else 1)


def test_settings_that_were_run_already_are_named_before_launching(roots, app_page, monkeypatch):
    """A walk noted nothing stops or warns a second click: settings a run already has are named (a copy may still
    be wanted, so the button stays)."""
    from fake_runs import write_run

    from core.runs.store import RunDir

    # queued and never started (a fake job that exits at once is marked failed, maybe before the redraw)
    monkeypatch.setattr(jobs, "launch", lambda config: RunDir.create(
        roots["live"] / jobs.new_run_id(config["method"], config["privacy"]["epsilon"]), config, 0))
    write_run(roots["cached"], "tiny-pub", "pub-gpt", config={"seqpate__kd_lambda": 20.0})  # a field it never reads
    at = app_page("launch", {"preset": "tiny", "eps": "4", "methods": "seqpate,pub-gpt"})
    notes = [i.value for i in at.info if "have been run already" in i.value]
    assert notes == ["Pub-GPT: these settings have been run already: `tiny-pub` (shipped). Launching adds another "
                     "copy."]  # SeqPATE at ε 4 has no run yet
    assert not at.button(key="launch_button").disabled
    at.button(key="launch_button").click().run()  # the page is drawn again: the note names the jobs just queued
    [seq_id] = [p.name for p in roots["live"].iterdir() if "-seqpate-" in p.name]
    notes = [i.value for i in at.info if "have been run already" in i.value]
    assert len(notes) == 2 and f"`{seq_id}` (" in notes[0] and "Queued 2 job(s)" in texts(at)


def test_a_run_launched_at_a_shipped_runs_settings_shows_in_its_place_on_the_results_pages(roots, app_page, monkeypatch):
    """An instructor's run, launched in class at a shipped run's settings, was hidden behind the shipped run on
    Overview, Privacy-utility and Completions ("Hidden here: ..."): launching it switches "Runs made here in place
    of their shipped copies" on, and says so; a run at new settings leaves the choice as it was."""
    from fake_runs import write_run

    from core.runs.store import RunDir
    from dashboard import tables

    monkeypatch.setattr(jobs, "launch", lambda config: RunDir.create(
        roots["live"] / jobs.new_run_id(config["method"], config["privacy"]["epsilon"]), config, 0))
    write_run(roots["cached"], "tiny-pub", "pub-gpt")
    at = app_page("launch", {"preset": "tiny", "eps": "4", "methods": "seqpate"})  # no shipped run at ε 4
    at.button(key="launch_button").click().run()
    assert "Queued 1 job(s)" in texts(at) and "in place of the shipped runs" not in texts(at)
    assert tables._LAST_MADE_HERE not in at.session_state or at.session_state[tables._LAST_MADE_HERE] is False
    at = app_page("launch", {"preset": "tiny", "eps": "4", "methods": "seqpate,pub-gpt"})
    at.button(key="launch_button").click().run()
    assert at.session_state[tables._LAST_MADE_HERE] is True
    # only the job at a shipped run's settings is named (SeqPATE at ε 4 has none)
    [pub_id] = [p.name for p in roots["live"].iterdir() if "-pub-gpt-" in p.name]
    assert (f"the results pages show `{pub_id}` in place of the shipped run of the same settings "
            f'("{tables.MADE_HERE_TOGGLE}" is on, for every run made here; switch it off there to see the shipped '
            "ones)") in texts(at)


def test_a_link_the_session_opened_with_does_not_switch_the_launched_runs_back_out_of_place(roots, app_page, monkeypatch):
    """The opening link's "made here" value was handed out the first time a page drew the toggle: a session opened
    with it off, before any copy existed, switched it back off after Launch had switched it on."""
    from fake_runs import write_run

    from core.runs.store import RunDir
    from dashboard import tables

    monkeypatch.setattr(jobs, "launch", lambda config: RunDir.create(
        roots["live"] / jobs.new_run_id(config["method"], config["privacy"]["epsilon"]), config, 0))
    write_run(roots["cached"], "tiny-pub", "pub-gpt")
    at = app_page(None, {"overview_made_here": "false"})  # no run made here yet: the toggle is not drawn
    write_run(roots["live"], "pub-here", "pub-gpt")  # a finished copy of the shipped run, made here
    at.switch_page("views/launch.py").run()
    at.selectbox(key="launch_preset").set_value("tiny").run()
    at.multiselect(key="launch_methods").set_value(["pub-gpt"]).run()
    at.button(key="launch_button").click().run()
    assert at.session_state[tables._LAST_MADE_HERE] is True
    at.switch_page("views/overview.py").run()
    assert at.toggle(key="overview_made_here").value is True
    assert "pub-here" in " ".join(at.dataframe[0].value["run ids"])


def test_a_minus_kl_run_made_with_the_earlier_loss_is_named_as_such_before_launching_its_settings(roots, app_page):
    """The shipped -kl run's settings are a launch's, but its -KL cross-entropy was over the candidate set; a run
    launched now takes it over the vocabulary (dashboard review: Launch called it a copy without a word)."""
    import json

    from fake_runs import write_run

    old = write_run(roots["cached"], "tiny-seqpate-ablation-kl", "seqpate", ablation="-kl")
    metrics = json.loads((old.path / "metrics.json").read_text())
    (old.path / "metrics.json").write_text(json.dumps({k: v for k, v in metrics.items() if k != "teacher_loss"}))
    at = app_page("launch", {"preset": "tiny", "eps": "3", "methods": "seqpate", "ablation": "-kl"})
    [note] = [i.value for i in at.info if "have been run already" in i.value]
    assert ("`tiny-seqpate-ablation-kl` (shipped; made before 2026-11-27, when the -KL cross-entropy was over the "
            "candidate set, not the vocabulary as now)") in note


def test_a_job_that_cannot_launch_is_named_and_the_others_still_go(roots, app_page, fake_job, monkeypatch):
    real = jobs.launch

    def launch(config, *args, **kwargs):
        if config["method"] == "seqpate":
            raise OSError("No space left on device")
        return real(config, *args, **kwargs)

    monkeypatch.setattr(jobs, "launch", launch)
    at = app_page("launch", {"preset": "tiny", "eps": "4", "methods": "seqpate,pub-gpt"})
    at.button(key="launch_button").click().run()
    assert [e.value for e in at.error] == ["SeqPATE: could not launch: No space left on device"]  # kept on redraw
    assert "Queued 1 job(s)" in texts(at) and [p.name for p in roots["live"].iterdir() if "-pub-gpt-" in p.name]


def test_launch_warns_when_the_teachers_answers_will_be_noise_dominated(roots, app_page):
    """The Calculator warned where σ / M > 1; Launch showed tiny's σ / M = 6.9 without a word."""
    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "seqpate"})
    [warning] = [w.value for w in at.warning if w.value.startswith("Noise-dominated")]
    # σ / M to the digits its metric shows
    assert warning.startswith("Noise-dominated: the noise std on the teachers' average distribution is 6.904, ")
    assert "so what it learns comes from the pseudo data, and its results barely move with ε" in warning  # why
    at.selectbox(key="launch_preset").set_value("quick").run()  # M 1,000: σ / M 0.098
    assert not [w for w in at.warning if w.value.startswith("Noise-dominated")] and not at.exception


def test_launch_calls_adps_epsilon_a_heuristic(roots, app_page):
    """The Overview's card and statement.md say ADP chooses its noise from the private data; Launch read its ε as a
    plain guarantee."""
    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "adp"})
    assert any("treat it as a heuristic, not a DP guarantee" in w.value for w in at.warning)
    at.text_input(key="launch_eps").set_value("inf").run()  # not private at all, not a heuristic
    assert not any("heuristic" in w.value for w in at.warning) and "add no noise at all" in " ".join(
        w.value for w in at.warning)
    at.text_input(key="launch_eps").set_value("3").run()
    at.multiselect(key="launch_methods").set_value(["noisysgd"]).run()
    assert not any("heuristic" in w.value for w in at.warning)


def test_top_k_1_is_said_to_teach_nothing(roots, app_page):
    """With one candidate the teachers' renormalised answer is always 1: the KL term is 0 while queries spend the
    budget (a teacher walk found Launch explained top-p 1 but not this)."""
    at = app_page("launch", {"preset": "tiny", "eps": "3", "delta": "1e-6", "methods": "seqpate", "filter": "top-k:1"})
    assert any(x.value.startswith("top-k 1 keeps one candidate") for x in at.caption) and not at.exception
