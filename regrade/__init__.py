"""regrade: tell which spreadsheet-benchmark failures are real.

The library behind the ``regrade`` command. Start with :func:`regrade.runner.rescore_run`
for the pipeline, :mod:`regrade.grading.policies` for grading policies, and
:func:`regrade.paired_table` (pandas in, pandas out) for before/after tables with
statistics.
"""

__all__ = ["paired_table", "results_frame"]


def __getattr__(name: str):
    """``regrade.paired_table`` and ``regrade.results_frame``, importing pandas only when asked."""
    if name in __all__:
        from regrade import api

        return getattr(api, name)
    raise AttributeError(f"module 'regrade' has no attribute {name!r}")
