"""Helpers of the browser tests: wait for a Streamlit page to finish, visit, screenshot, read exceptions."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
READY = "[data-testid=stApp][data-test-script-state=notRunning]"


def wait_ready(page, timeout_ms: int = 60_000) -> None:
    """The script has finished its run and the page has a title."""
    page.wait_for_selector(READY, timeout=timeout_ms)
    page.wait_for_selector("[data-testid=stMain] h1", timeout=timeout_ms)
    page.wait_for_selector(READY, timeout=timeout_ms)


def visit(page, base: str, path: str) -> None:
    page.goto(base + path)
    wait_ready(page)


def exceptions(page) -> list[str]:
    return page.locator("[data-testid=stException]").all_inner_texts()


def shoot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"e2e-{name}.png"
    # Streamlit scrolls inside its main section, so full_page alone shows one screen: grow the viewport first.
    size = page.viewport_size
    height = page.evaluate("() => (document.querySelector('[data-testid=stMain]') || document.body).scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height) + 40, 8000))})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path
