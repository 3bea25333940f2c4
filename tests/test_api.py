"""The Python API (regrade.rescore, diff, paired_table, audit_benchmark, audit_grader) gives what the
commands give, as typed records and DataFrames; docs/api.md shows the same calls."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from click.testing import CliRunner

import regrade
from regrade.cli import main
from regrade.results.records import CaseRecord, Results
from regrade.results.files import ResultsError
from regrade.runs.inventory import EmptyCondition
from tests.conftest import DEMO, demo_task_dataset, require_engines

TASK = "59511"


@pytest.fixture
def run(tmp_path):
    """The demo's task 59511 under two conditions: none (Excel-saved answers) and community."""
    data = demo_task_dataset(tmp_path / "data", TASK)
    for condition in ("none", "community"):
        (tmp_path / "out" / condition).mkdir(parents=True)
        for case in (1, 2, 3):
            name = f"{case}_{TASK}_output.xlsx"
            shutil.copyfile(DEMO / "outputs" / condition / name, tmp_path / "out" / condition / name)
    return data, tmp_path / "out"


def test_rescore_diff_and_table_give_what_the_commands_give(run, tmp_path):
    require_engines("ironcalc")
    data, out = run
    results = regrade.rescore(data, runs=out, engines=["ironcalc"], output=tmp_path / "api.jsonl")
    assert isinstance(results.cases[0], CaseRecord) and len(results.cases) == 6
    assert results.provenance is not None and results.provenance.settings["full"] == ["ironcalc"]
    assert [i["outputs_found"] for i in results.inventory] == [3, 3]
    assert results.summary["cases"] == 6 and "value-only failures were grader artifacts" in results.summary["headline"]
    cli = CliRunner().invoke(main, ["rescore", "--dataset", str(data), "--runs", str(out), "--engines", "ironcalc",
                                    "-o", str(tmp_path / "cli.jsonl")])
    assert cli.exit_code == 0, cli.output
    from_file = Results.read(tmp_path / "cli.jsonl")
    assert [(c.condition, c.task_id, c.case, c.verdict) for c in from_file.cases] == \
        [(c.condition, c.task_id, c.case, c.verdict) for c in results.cases]
    summary = regrade.diff(results)
    assert list(summary.columns[:3]) == ["stack", "benchmark", "condition"] and len(summary) == 3  # two and overall
    table = regrade.paired_table(results, baseline="none")
    cli_table = json.loads(CliRunner().invoke(main, ["table", str(tmp_path / "cli.jsonl"), "--format", "json"]).stdout)
    assert table[["grading", "gains", "regressions", "n"]].to_dict("records") == \
        [{k: row[k] for k in ("grading", "gains", "regressions", "n")} for row in cli_table["rows"]]
    assert results.frame().shape[0] == 6 and "cells" not in results.frame().columns


def test_rescore_refuses_a_condition_without_outputs(run, tmp_path):
    data, out = run
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptyCondition, match="condition typo: 0 of 3 outputs found"):
        regrade.rescore(data, {"none": out / "none", "typo": tmp_path / "empty"}, engines=["ironcalc"])


def test_results_are_validated_against_their_models(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"record": "case", "condition": "none", "task_id": "1", "verdict": "artifact"}) + "\n")
    with pytest.raises(ResultsError, match="case record 1: stack: Field required"):
        Results.read(bad)


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_audit_benchmark_and_audit_grader(tmp_path):
    audit = regrade.audit_benchmark(DEMO / "dataset", workers=1, limit=2)
    assert len(audit.tasks) == 2 and audit.grader == "spreadsheetbench-official"
    grader = tmp_path / "grader.py"
    grader.write_text("import sys\nsys.exit(1)\n")  # fails every output: each positive control a false fail
    from regrade.grading.graders import make_grader

    report = regrade.audit_grader(make_grader(None, command=f"{sys.executable} {grader} {{output}}", label="never"))
    positives = [c for c in report.categories if c.kind == "positive"]
    assert report.grader == "never" and report.errors == {}
    assert sum(c.false_fail for c in positives) == sum(c.probes for c in positives) > 0
