"""The README's two set-up commands are what CI runs: `.ci/run` installs as the README does and runs its test command."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _setup_blocks() -> list[str]:
    """The bash blocks of the README's set-up section, in order."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def _ci_commands() -> list[str]:
    """`.ci/run`'s command lines, comments stripped."""
    lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    return [line.split("  #", 1)[0].strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_the_readme_install_and_test_command() -> None:
    install_and_start, test_command = _setup_blocks()
    install = install_and_start.split(" && ")[0]
    assert install == 'pip install "torch==2.13.0" -e ".[dev]"'
    commands = _ci_commands()
    quiet_install = f"python -m {install}".replace("pip install", "pip install -q")
    assert quiet_install in commands  # same packages and pins, through the same interpreter
    assert commands[-1] == test_command == "python -m pytest"
