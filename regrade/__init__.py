"""regrade: tell which spreadsheet-benchmark failures are real.

The library behind the ``regrade`` command, one function per job (:mod:`regrade.api`):
``regrade.rescore``, ``regrade.diff``, ``regrade.table``, ``regrade.paired_table``, ``regrade.report``, ``regrade.audit_benchmark``,
``regrade.audit_grader``; ``regrade.Results`` is a results file as pydantic models
(:mod:`regrade.results.records`). ``docs/api.md`` has examples.
"""

__all__ = ["rescore", "diff", "diff_listing", "table", "paired_table", "report", "audit_benchmark", "audit_grader",
           "generate_controls", "build_slice", "score_slice", "results_frame", "Results", "RescoreResults"]


def __getattr__(name: str):
    """The API's names, importing pandas and the engines only when one is asked for."""
    if name in __all__:
        from regrade import api

        return getattr(api, name)
    raise AttributeError(f"module 'regrade' has no attribute {name!r}")
