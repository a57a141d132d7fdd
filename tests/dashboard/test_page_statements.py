"""The pages' code, read as Streamlit runs it: a bare expression that is not a call is written on the page by
Streamlit's "magic" (st.help of whatever it evaluates to)."""

from __future__ import annotations

import ast
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"


def test_no_page_holds_an_expression_statement_that_magic_would_write():
    """`(st.info(...) if note else st.success(...))` wrote its DeltaGenerator's help text under "Same config.";
    a call on its own line is left alone, so is a docstring."""
    written = []
    for path in sorted(DASHBOARD.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Expr) and not isinstance(node.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)):
                if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # docstrings
                    written.append(f"{path.relative_to(DASHBOARD.parent)}:{node.lineno}")
    assert written == []
