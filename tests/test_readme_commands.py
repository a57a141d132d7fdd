"""Every `python -m core ...` command in the README's code blocks is one the command line accepts: its subcommand
and flags exist, and a `run` or `synth` command builds a valid config (nothing is run). The README is how users
learn the command line, so a renamed flag or a tightened check must change it too."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from core import cli
from core.synth import command as synth_command

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[str]:
    """`python -m core` lines of the README's bash blocks, continuations joined and comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("python -m core "):
                commands.append(line)
    return commands


def test_the_readme_shows_the_command_line():
    subcommands = {shlex.split(c)[3] for c in readme_commands()}
    assert {"run", "runs", "data-stats", "complete", "compare", "privacy", "sweep", "report", "synth"} <= subcommands


@pytest.mark.parametrize("command", readme_commands())
def test_a_readme_command_parses(command, capsys):
    argv = shlex.split(command)[3:]
    try:
        args = cli.build_parser().parse_args(argv)
    except SystemExit:  # OneLineParser prints the reason on stderr and exits 2
        pytest.fail(f"{command!r}: {capsys.readouterr().err.strip()}")
    if args.command == "run" and not args.config:  # a --config example reads a run made by an earlier example
        cfg = cli.config_from_args(args)
        assert cfg.method == args.method and cfg.preset == args.preset
    if args.command == "synth" and not str(args.corpus or "").endswith((".csv", ".jsonl")):  # a user's own file
        cfg, _ = synth_command.config_from_args(args)
        assert cfg.generator == args.generator
