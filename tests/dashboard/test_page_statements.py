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


def test_every_chart_on_a_page_is_drawn_readable():
    """Streamlit's chart theme draws ticks, axis titles and subplot titles grey (3.7:1 on white): every
    st.plotly_chart call passes its figure through charts.readable, which sets them in the page's ink."""
    calls = []
    for path in sorted(DASHBOARD.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "plotly_chart":
                figure = node.args[0] if node.args else None
                readable = (isinstance(figure, ast.Call) and isinstance(figure.func, ast.Attribute)
                            and figure.func.attr == "readable")
                calls.append((f"{path.relative_to(DASHBOARD.parent)}:{node.lineno}", readable))
    assert len(calls) >= 8 and [where for where, readable in calls if not readable] == []


def test_readable_inks_every_axis_legend_and_subplot_title():
    import pandas as pd

    from dashboard import charts

    runs = pd.DataFrame({"run_id": ["a", "b"], "method": ["seqpate", "seqpate"], "epsilon": [1.0, 3.0],
                         "ppl": [900.0, 800.0], "bleu4": [0.2, 0.3], "source": ["cached", "cached"]})
    fig = charts.readable(charts.privacy_utility_panels(runs))
    axes = [fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 4  # two panels
    assert {(axis.tickfont.color, axis.title.font.color) for axis in axes} == {(charts.INK, charts.INK)}
    assert fig.layout.legend.font.color == charts.INK
    assert fig.layout.annotations and {a.font.color for a in fig.layout.annotations} == {charts.INK}
