"""regrade: tell which spreadsheet-benchmark failures are real.

The library behind the ``regrade`` command. Start with :func:`regrade.runner.rescore_run`
for the pipeline, :mod:`regrade.compare` for grading policies and
:func:`regrade.paired.paired_table` for before/after tables.
"""
