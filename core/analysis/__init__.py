"""Privacy analysis of runs: secret phrases and their epsilon, name leak rate, canary exposure, statements.

phrases    phrases.csv rows and the Table 6 summary for a run's mechanism; calibration for an average phrase eps
leak       R_name (App. O) on completions
exposure   canary exposure (Carlini's secret sharer), exact or sampled rank; needs the model (torch, lazily)
statement  the plain-language privacy statement (statement.md)
audit      the pipeline hook (audit_run) and `python -m core audit` (audit_run_dir)
Secret phrases themselves (names, canaries) live in core.data.secrets. No torch import at package level.
"""

from core.analysis.audit import audit_run, audit_run_dir
from core.analysis.leak import name_leak_rate
from core.analysis.phrases import (
    dpsgd_phrase_avg_multiplier,
    phrase_summary,
    phrase_table,
    seqpate_phrase_avg_std,
    user_batched_phrase_avg_multiplier,
)
from core.analysis.statement import privacy_statement

__all__ = [
    "audit_run",
    "audit_run_dir",
    "dpsgd_phrase_avg_multiplier",
    "name_leak_rate",
    "phrase_summary",
    "phrase_table",
    "privacy_statement",
    "seqpate_phrase_avg_std",
    "user_batched_phrase_avg_multiplier",
]
