"""The Python API over pandas: outcomes in, paired tables out.

    import pandas as pd, regrade
    outcomes = pd.read_csv("outcomes.csv")   # stack, benchmark, condition, task_id, passed [, case, trial]
    table = regrade.paired_table(outcomes, baseline="none", ci="newcombe", correction="holm")

A DataFrame of regrade results (``regrade.results_frame("results.jsonl")``) works too, and
then gives both gradings (``original`` and ``regraded``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from regrade.paired import tables as paired
from regrade.results import read_outcomes

COLUMNS = ["stack", "benchmark", "condition", "baseline", "grading", "n", "pass_rate_baseline", "pass_rate_treatment",
           "gains", "regressions", "retained", "residual", "net", "delta", "ci_lower", "ci_upper", "ci_method", "p_value",
           "p_adjusted", "correction", "family_size", "regression_tax", "normalized_gain", "unpaired", "trials_baseline",
           "trials_treatment", "noise_discordance", "noise_gains", "noise_regressions"]


def paired_table(outcomes: pd.DataFrame, baseline: str = "none", ci: str = "newcombe", alpha: float = 0.05,
                 correction: str = "bonferroni", unit: str = "task") -> pd.DataFrame:
    """One row per (stack, benchmark, condition != baseline, grading); see :mod:`regrade.paired.tables`."""
    missing = [c for c in ("condition", "task_id") if c not in outcomes.columns]
    if missing or not ({"passed", "verdict"} & set(outcomes.columns)):
        raise paired.PairingError(f"outcomes need condition, task_id and passed (or regrade results); missing "
                                  f"{', '.join(missing) or 'passed'}")
    records = [{k: _plain(v) for k, v in row.items()} for row in outcomes.to_dict(orient="records")]
    comparisons = paired.paired_table(records, baseline, ci, alpha, correction, unit)
    if "verdict" not in outcomes.columns:
        comparisons = [c for c in comparisons if c.grading == "original"]
    return pd.DataFrame([c.as_row() for c in comparisons], columns=COLUMNS)


def results_frame(path: str | Path) -> pd.DataFrame:
    """A regrade results file (or an outcomes file) as a DataFrame, one row per case."""
    _, records = read_outcomes(Path(path))
    return pd.DataFrame(records)


def _plain(value: object) -> object:
    """pandas' missing values as None, numpy scalars as Python ones."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value
