"""End to end: every page renders without an exception; a run launched from the Launch page reaches done on the
Runs page, shows up on the privacy-utility chart and on the Completions page. Screenshots go to test-artifacts/.

The flow runs twice, launching a tiny SeqPATE run (10 teachers, student, audit: about 1-2 minutes on 2 quiet cores)
and a tiny Pub-GPT run. The first launch also trains the public base model when test-artifacts/e2e-cache does not
hold it yet (a few minutes on a fresh clone). SEQPATE_E2E_TIMEOUT (seconds) overrides how long a run may take
(defaults are generous because the machine may be shared).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest
from browser_helpers import ARTIFACTS, exceptions, shoot, visit, wait_ready

pytestmark = pytest.mark.e2e

PAGES = {
    "overview": ("/", "SeqPATE bench"),
    "launch": ("/launch", "Launch runs"),
    "runs": ("/runs", "Runs"),
    "privacy-utility": ("/privacy-utility", "Privacy vs utility"),
    "phrases": ("/phrases", "Secret phrases"),
    "completions": ("/completions", "Completions"),
    "synthetic": ("/synthetic", "Synthetic data"),
    "calculator": ("/calculator", "Privacy calculator"),
    "export": ("/export", "Export"),
}
TIMEOUTS = {"pub-gpt": 1800.0, "seqpate": 2400.0}


def test_every_page_renders_without_exceptions(server, browser_page):
    page = browser_page
    browser_titles = set()
    for name, (path, title) in PAGES.items():
        visit(page, server, path)
        assert page.locator("[data-testid=stMain] h1").first.inner_text().strip() == title
        assert exceptions(page) == [], (name, exceptions(page))
        browser_titles.add(page.title())
        shoot(page, name)
    # each page names itself in the browser's title (every page read "SeqPATE bench": a screen reader announced no
    # change of page, and tabs could not be told apart)
    assert len(browser_titles) == len(PAGES) and all(t.endswith(" · SeqPATE bench") for t in browser_titles)


def test_pages_request_nothing_beyond_the_server(server, browser_page):
    """A privacy officer's browser talks only to this dashboard: no fonts, icons or scripts from a CDN (Streamlit
    fetches a material-icon favicon from fonts.gstatic.com, so the app ships its own)."""
    from urllib.parse import urlsplit

    outside: list[str] = []
    local: list[str] = []  # the positive control: a listener that heard nothing would pass on outside alone
    page = browser_page.context.new_page()  # a fresh page, so that nothing is served from this session's cache

    def record(request) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss"):
            (local if parts.hostname in ("127.0.0.1", "localhost") else outside).append(request.url)

    page.on("request", record)
    try:
        for path, _ in PAGES.values():
            visit(page, server, path)
        page.wait_for_timeout(500)
    finally:
        page.close()
    assert outside == []
    assert any(url.endswith(".js") for url in local) and any("/_stcore/" in url for url in local)


LAZY_TABS = {  # page -> (tab key, a tab other than the first, what that tab draws)
    "/privacy-utility": ("pu_tab", "Points", "[data-testid=stDataFrame]"),
    "/phrases": ("phrases_tab", "ε histogram", ".js-plotly-plot"),
}


def test_lazy_tabs_build_their_content_when_opened_and_open_from_a_link(server, browser_page):
    page = browser_page
    for path, (key, label, element) in LAZY_TABS.items():
        visit(page, server, path)
        assert page.locator(element).count() == 0  # not built while its tab is closed
        page.get_by_role("tab", name=label).click()
        page.wait_for_selector(element, timeout=30_000)
        wait_ready(page)
        assert f"{key}=" in page.url and exceptions(page) == []
        shared = page.url
        visit(page, server, "/")
        page.goto(shared)  # the link opens the same tab
        page.wait_for_selector(element, timeout=30_000)
        assert page.get_by_role("tab", name=label).get_attribute("aria-selected") == "true"
        assert exceptions(page) == []


def test_completions_side_by_side_wrap_on_a_narrow_page_rather_than_hide_runs(server, browser_page):
    """At 11rem a run, a comparison wider than the page scrolled sideways as one block: at a projector's width the
    last runs were out of sight (an accessibility walk). The runs that do not fit wrap onto the next row."""
    page = browser_page
    size = page.viewport_size
    page.set_viewport_size({"width": 480, "height": 900})
    try:
        visit(page, server, "/completions")
        cells = page.evaluate("""() => {
            const main = document.querySelector('[data-testid=stMain] .stMainBlockContainer')
                || document.querySelector('[data-testid=stMain]');
            const right = main.getBoundingClientRect().right;
            return Array.from(document.querySelectorAll('.cmp .who')).map(
                el => [el.getBoundingClientRect().left, el.getBoundingClientRect().right, right]);
        }""")
    finally:
        page.set_viewport_size(size)
    assert len(cells) >= 3  # the three shipped (fake) runs' headers, and each prefix's cells
    assert all(r <= edge + 0.5 for _, r, edge in cells), cells
    assert len({round(left) for left, _, _ in cells}) >= 2  # still side by side where two fit


def test_keyboard_focus_is_visible_on_the_sidebar(server, browser_page):
    """Streamlit marked a sidebar link focused by Tab with a 1.1:1 tint only: a keyboard user lost their place on a
    projector. Every focused element now has a 3 px outline."""
    page = browser_page
    visit(page, server, "/")
    for _ in range(4):
        page.keyboard.press("Tab")
    focused = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
        return [e.getAttribute('data-testid'), s.outlineStyle, s.outlineWidth]; }""")
    assert focused == ["stSidebarNavLink", "solid", "3px"]


def _type_into(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.click()
    box.press("Control+a")
    page.keyboard.type(text)
    box.press("Enter")
    page.wait_for_timeout(300)
    wait_ready(page)


def test_whole_number_boxes_read_what_was_typed(server, browser_page):
    """Streamlit parses a whole-number box with parseInt: a typed 1e9 was 1, so the Calculator answered for one
    query (σ 2.18 at ε 3 and δ 1e-6 instead of 69,044) and 1e3 teachers launched one."""
    page = browser_page
    visit(page, server, "/calculator")
    _type_into(page, "calc_sp_queries", "1e9")
    metrics = page.locator("[data-testid=stMetricValue]").all_inner_texts()
    assert metrics[-1] == "1,000,000,000", metrics
    assert page.locator(".st-key-calc_sp_queries input").input_value() == "1000000000"
    visit(page, server, "/launch")
    _type_into(page, "launch_teachers", "1e3")
    assert page.locator(".st-key-launch_teachers input").input_value() == "1000"
    assert "teachers=1000" in page.url and exceptions(page) == []


def _choose(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).click()
    page.wait_for_timeout(300)
    wait_ready(page)


def test_launch_keeps_the_presets_own_filter_when_the_preset_changes(server, browser_page):
    """A walk saw the candidate-filter radio lose its choice when the preset changed (its labels named the preset's
    filter, so a new preset made it a new widget), after which the URL and the launch read top-p 0.95 on quick."""
    page = browser_page
    visit(page, server, "/launch?methods=seqpate&preset=tiny")
    for preset in ("quick", "tiny", "quick"):
        _choose(page, "launch_preset", preset)
        checked = page.locator(".st-key-launch_filter_kind input[type=radio]").evaluate_all(
            "boxes => boxes.map(box => box.checked)")
        assert checked == [True, False, False], (preset, checked)
        assert re.search(r"[?&]filter=(&|$)", page.url) and f"preset={preset}" in page.url, page.url
    assert exceptions(page) == []


def test_one_back_press_leaves_the_launch_page(server, browser_page):
    """Launch wrote its default settings into the URL on arrival, a new history entry (Streamlit pushes one per
    query string), so Back first went to the bare /launch and took a second press to leave."""
    page = browser_page
    visit(page, server, "/calculator")
    page.locator("[data-testid=stSidebarNavLink]").filter(has_text="Launch").click()
    page.wait_for_url("**/launch*")
    wait_ready(page)
    page.wait_for_timeout(500)  # time for a query-string write, were there one
    assert page.url == server + "/launch"  # the defaults: nothing to share beyond the bare page
    page.go_back()
    page.wait_for_url("**/calculator*")
    wait_ready(page)
    assert page.locator("[data-testid=stMain] h1").first.inner_text().strip() == "Privacy calculator"
    assert exceptions(page) == []


def test_an_idle_runs_page_notices_a_run_started_elsewhere(server, browser_page, e2e_dirs):
    """With no job running the Runs page does not poll its table, but a run that appears in the live folder (a
    launch from another tab, or the command line) must show without a reload."""
    from fake_runs import write_run

    page = browser_page
    visit(page, server, "/runs")
    done_before = len([p for root in ("live", "cached") for p in e2e_dirs[root].iterdir()
                       if (p / "status.json").is_file() and _status(p).get("state") == "done"])
    page.get_by_text(f"done: {done_before}").wait_for(timeout=30_000)
    write_run(e2e_dirs["live"], "elsewhere-noisysgd", "noisysgd", epsilon=5.0)
    try:
        page.get_by_text(f"done: {done_before + 1}").wait_for(timeout=30_000)  # the page polls every 5 s
        assert exceptions(page) == []
    finally:
        shutil.rmtree(e2e_dirs["live"] / "elsewhere-noisysgd")


def test_while_a_job_runs_compare_offers_a_run_that_appears(server, browser_page, e2e_dirs):
    """Compare sits outside the part of the Runs page that polls while a job runs: a run launched meanwhile (or a
    job that ended) stayed out of its boxes until the last job ended (checked: still missing after 60 s)."""
    from fake_runs import write_run

    page = browser_page
    running = write_run(e2e_dirs["live"], "cmp-running", "seqpate", state="running", progress=0.3)  # pid: this test
    try:
        visit(page, server, "/runs")
        write_run(e2e_dirs["live"], "cmp-appeared", "pub-gpt")
        deadline = time.monotonic() + 30
        options: list[str] = []
        while time.monotonic() < deadline and not any("cmp-appeared" in o for o in options):
            page.wait_for_timeout(2000)
            wait_ready(page)
            page.locator(".st-key-runs_cmp_a input").click()
            page.keyboard.type("cmp-appeared")
            page.wait_for_timeout(300)
            options = page.locator("[role=option]").all_inner_texts()
            page.keyboard.press("Escape")
        assert any("cmp-appeared" in o for o in options), options
        assert exceptions(page) == []
    finally:
        for run_dir in (running.path, e2e_dirs["live"] / "cmp-appeared"):
            shutil.rmtree(run_dir, ignore_errors=True)


def test_choosing_run_a_to_compare_warns_nothing_in_the_server_log(server, browser_page):
    """Run A's choice moves run B (a callback sets B's state); a B box also given a default index made Streamlit
    log a warning and a 30-line stack on every change."""
    page = browser_page
    log = ARTIFACTS / "e2e-streamlit.log"
    visit(page, server, "/runs")
    before = log.read_text().count("Session State API")
    for run_a in ("demo-pri-gpt", "demo-seqpate-eps1"):
        page.locator(".st-key-runs_cmp_a input").click()
        page.keyboard.type(run_a)
        page.keyboard.press("Enter")
        page.wait_for_timeout(500)
        wait_ready(page)
        assert page.locator(".st-key-runs_cmp_a input").input_value() == run_a
    assert log.read_text().count("Session State API") == before and exceptions(page) == []


def test_enter_in_the_synthetic_data_form_launches_nothing(server, browser_page, e2e_dirs):
    """Enter in a form field submitted Streamlit's form: typing an ε and pressing Enter queued a private
    training job, where on Launch the same key only applies the value (dashboard review)."""
    page = browser_page
    before = {p.name for p in e2e_dirs["live"].iterdir()}
    visit(page, server, "/synthetic")
    eps = page.locator(".st-key-synth_launch_eps input")
    if not eps.is_visible():  # the form sits in an expander, open only while there are no runs to show
        page.get_by_text("Launch synthetic-data runs").click()
    eps.fill("3")
    eps.press("Enter")
    page.wait_for_timeout(1500)
    wait_ready(page)
    assert page.get_by_text("Queued").count() == 0 and exceptions(page) == []
    assert {p.name for p in e2e_dirs["live"].iterdir()} == before


def _status(run_dir) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


@pytest.mark.parametrize("method", ["seqpate", "pub-gpt"])
def test_launch_follow_and_find_the_run(server, browser_page, e2e_dirs, method):
    page = browser_page
    timeout = float(os.environ.get("SEQPATE_E2E_TIMEOUT") or TIMEOUTS[method])
    before = {p.name for p in e2e_dirs["live"].iterdir()}
    # settings come from the URL (shareable) ...
    visit(page, server, f"/launch?methods={method}&preset=tiny&seed=0")
    # ... and from typing: epsilon 3, for a method that takes one (Pub-GPT's box is greyed out)
    eps = page.locator(".st-key-launch_eps input")
    if method == "pub-gpt":
        assert eps.is_disabled()
    else:
        eps.fill("3")
        eps.press("Enter")
        page.wait_for_function("() => window.location.search.includes('eps=3')", timeout=30_000)
    wait_ready(page)
    assert "preset=tiny" in page.url and f"methods={method}" in page.url.replace("%2B", "+")
    if method == "seqpate":  # the noise for these settings is on screen before launching
        assert page.get_by_test_id("stMetric").filter(has_text="noise multiplier z").count() == 1
    shoot(page, f"launch-filled-{method}")
    page.locator(".st-key-launch_button button").click()
    page.get_by_text("Queued 1 job(s)").wait_for(timeout=30_000)
    assert exceptions(page) == []
    runs = [p for p in e2e_dirs["live"].iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name not in before]
    assert len(runs) == 1, runs
    run_dir = runs[0]
    run_id = run_dir.name
    config = json.loads((run_dir / "config.json").read_text())["config"]
    assert (config["method"], config["preset"], config["privacy"]["epsilon"]) == (method, "tiny", 3.0)

    # Runs page: the new run is selected and polled every 2 s until done
    visit(page, server, "/runs")
    assert run_id in page.locator(".st-key-runs_selected input").input_value()
    shot_taken = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _status(run_dir)
        if status.get("state") == "running" and not shot_taken and status.get("progress", 0) > 0.05:
            shoot(page, f"runs-running-{method}")
            shot_taken = True
        if status.get("state") in ("failed", "cancelled"):
            shoot(page, f"runs-failed-{method}")
            log = (run_dir / "log.txt").read_text()[-3000:] if (run_dir / "log.txt").exists() else ""
            pytest.fail(f"run {run_id} ended {status.get('state')}: {status.get('error')}\n{log}")
        if status.get("state") == "done":
            break
        time.sleep(3)
    else:
        shoot(page, f"runs-timeout-{method}")
        pytest.fail(f"run {run_id} not done after {timeout:.0f} s (stage {_status(run_dir).get('stage')})")
    # the page notices on its own (fragment polling), no reload
    state = page.locator("[data-testid=stMetric]").filter(has_text="state").locator("[data-testid=stMetricValue]")
    page.wait_for_function(
        "el => el.innerText.trim() === 'done'", arg=state.element_handle(), timeout=30_000)
    wait_ready(page)
    assert exceptions(page) == []
    shoot(page, f"runs-done-{method}")

    # Privacy-utility: the run's point (or reference line) carries its id in the chart data
    visit(page, server, "/privacy-utility")
    page.wait_for_selector(".js-plotly-plot", timeout=30_000)
    in_place = page.get_by_test_id("stCheckbox").filter(has_text="Runs made here in place of their shipped copies")
    if in_place.count():  # it has the settings of a shipped (fake) run, which is shown first: it is named, hidden
        assert f"Hidden here: {run_id}" in page.locator("[data-testid=stMain]").inner_text()
        in_place.locator("label").click()
        page.get_by_text("Runs made here replace shipped runs").wait_for(timeout=30_000)
        wait_ready(page)
    ids = page.evaluate(
        """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(
               g => (g.data || []).flatMap(t => Array.from(t.customdata || []).flatMap(
                   c => Array.isArray(c) ? c.map(String) : [String(c)])))""")
    assert any(run_id in i for i in ids), ids
    assert exceptions(page) == []
    shoot(page, f"privacy-utility-{method}")

    # Completions opens on the Overview's runs: this one, or where it copies a shipped (fake) run, the shipped one
    # unless "Runs made here in place of their shipped copies" is on, as it was switched above: kept in the session,
    # so Completions is reached from the sidebar (a new page load is a new session)
    if in_place.count():
        page.locator("[data-testid=stSidebarNavLink]").filter(has_text="Completions").click()
        page.wait_for_url("**/completions", timeout=30_000)
        wait_ready(page)
    else:
        visit(page, server, "/completions")
    text = page.locator("[data-testid=stMain]").inner_text()
    assert run_id in text
    first = json.loads((run_dir / "completions.jsonl").read_text().splitlines()[0])
    squash = lambda s: re.sub(r"\s+", " ", s).strip()  # noqa: E731
    assert squash(first["completion"]) in squash(text)
    assert exceptions(page) == []
    shoot(page, f"completions-{method}")
    # the launched run kept its weights: it completes a prefix typed into the page (`python -m core complete`)
    page.get_by_label("Prefix", exact=True).fill("my name is")
    page.get_by_role("button", name=re.compile("^Complete with")).click()
    page.wait_for_selector("text=your prefix:", timeout=120_000)
    assert "my name is" in page.locator("[data-testid=stMain]").inner_text()
    assert exceptions(page) == []
    shoot(page, f"completions-own-prefix-{method}")
