"""Nothing silent: a missing, misnamed or unmatched output, a bad dataset record or a bad option
is said on stderr and in the exit status, never turned into a confident table (issue 20)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.runs.inventory import take_inventory
from regrade.runs.cases import spreadsheetbench_cases
from tests.conftest import DEMO, demo_task_dataset, require_engines

TASK = "59511"  # three test cases; the demo's outputs of condition none hold Excel-saved answers


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def dataset(tmp_path) -> Path:
    """The demo's task 59511 alone, as a SpreadsheetBench folder."""
    return demo_task_dataset(tmp_path / "data", TASK)


def outputs(tmp_path: Path, name: str, cases: tuple[int, ...], rename=lambda case: f"{case}_{TASK}_output.xlsx") -> Path:
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    for case in cases:
        shutil.copyfile(DEMO / "outputs" / "none" / f"{case}_{TASK}_output.xlsx", folder / rename(case))
    return folder


def test_a_condition_whose_outputs_are_all_misnamed_stops_with_exit_status_2(dataset, tmp_path):
    wrong = outputs(tmp_path, "none", (1, 2, 3), rename=lambda case: f"{case}_{TASK}.xlsx")  # no _output
    (wrong / "notes.csv").write_text("a,b\n")
    result = invoke("rescore", "--dataset", dataset, "--condition", f"none={wrong}", "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 2, result.output
    assert "condition none: 0 of 3 outputs found, 3 missing" in result.stderr
    assert str(wrong / f"1_{TASK}_output.xlsx") in result.stderr  # where an output was expected
    assert f"4 files match no case (1_{TASK}.xlsx, 2_{TASK}.xlsx, 3_{TASK}.xlsx and 1 more)" in result.stderr
    assert "--allow-missing" in result.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_an_empty_folder_with_allow_missing_is_graded_and_the_summary_counts_it(dataset, tmp_path):
    require_engines("ironcalc")
    empty = outputs(tmp_path, "none", ())
    found = outputs(tmp_path, "skills", (1, 3))
    result = invoke("rescore", "--dataset", dataset, "--condition", f"none={empty}", "--condition", f"skills={found}",
                    "--allow-missing", "--engines", "ironcalc", "--workers", 1, "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 0, result.output
    assert "condition skills: 2 of 3 outputs found, 1 missing" in result.stderr  # some missing: said, not fatal
    assert "4 of 6 cases were not judged: 4 missing-output." in result.stderr
    assert "6 cases graded in" in result.stderr
    assert f"Next: regrade table {tmp_path / 'r.jsonl'}" in result.stderr


def test_some_outputs_missing_is_a_warning_not_an_error(dataset, tmp_path):
    require_engines("ironcalc")
    found = outputs(tmp_path, "none", (1, 2))
    result = invoke("rescore", "--dataset", dataset, "--condition", f"none={found}", "--engines", "ironcalc",
                    "--workers", 1, "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 0, result.output
    assert "condition none: 2 of 3 outputs found, 1 missing" in result.stderr
    assert "1 missing-output" in result.stderr


def test_runs_makes_every_subfolder_a_condition(dataset, tmp_path):
    outputs(tmp_path, "none", (1, 2, 3))
    outputs(tmp_path, "skills_gpt", (1, 2, 3))
    (tmp_path / "runs" / ".hidden").mkdir()
    cases = spreadsheetbench_cases(dataset, {"none": tmp_path / "runs" / "none",
                                             "skills_gpt": tmp_path / "runs" / "skills_gpt"})
    result = invoke("grade", "--dataset", dataset, "--runs", tmp_path / "runs", "--values", "cached")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted({line["condition"] for line in lines}) == ["none", "skills_gpt"]
    assert len(lines) == len(cases) == 6
    assert "condition skills_gpt: 3 of 3 outputs found" in result.stderr


def test_a_manifest_whose_paths_are_relative_to_elsewhere_stops_with_exit_status_2(tmp_path):
    rows = [{"stack": "s", "benchmark": "b", "condition": "none", "task_id": TASK, "case": n,
             "output_path": f"runs/none/{n}_{TASK}_output.xlsx", "answer_path": f"gold/{n}_{TASK}_answer.xlsx",
             "answer_position": "F2:F6"} for n in (1, 2)]
    (tmp_path / "lists").mkdir()
    manifest = tmp_path / "lists" / "manifest.jsonl"  # paths written relative to tmp_path, not to lists/
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outputs(tmp_path, "none", (1, 2))
    result = invoke("rescore", "--manifest", manifest, "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 2
    assert "relative to the manifest's own folder" in result.stderr


def test_a_condition_given_twice_is_a_usage_error(dataset, tmp_path):
    a, b = outputs(tmp_path, "a", (1,)), outputs(tmp_path, "b", (1,))
    result = invoke("rescore", "--dataset", dataset, "--condition", f"none={a}", "--condition", f"none={b}",
                    "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 2
    assert "condition 'none' is given twice" in result.stderr


@pytest.mark.parametrize("record, said", [
    ({"answer_position": "A1"}, "record 1: id is missing"),
    ({"id": 7, "answer_position": None}, "task 7: answer_position is None, not a cell range"),
    ({"id": 7}, "task 7: answer_position is missing"),
    ("7", "record 1: a task record must be an object, not str"),
])
def test_a_bad_dataset_record_is_one_line_naming_the_file_task_and_field(tmp_path, record, said):
    root = tmp_path / "data"
    root.mkdir()
    (root / "dataset.json").write_text(json.dumps([record]))
    out = outputs(tmp_path, "none", ())
    result = invoke("grade", "--dataset", root, "--condition", f"none={out}")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {root / 'dataset.json'} {said}\n"
    debug = invoke("grade", "--dataset", root, "--condition", f"none={out}", "--debug")  # after the subcommand
    assert debug.exit_code == 1 and debug.exc_info is not None and "Traceback" not in debug.stderr
    assert said in str(debug.exception)  # the exception itself reaches the caller: --debug shows its traceback


@pytest.mark.parametrize("args", [
    ("rescore", "--timeout", "0"),
    ("conformance", "x", "--timeout", "-1"),
    ("audit", "benchmark", ".", "--workers", "0"),
    ("conformance", "x", "--limit", "0"),
])
def test_options_that_cannot_work_are_usage_errors(args):
    result = invoke(*args)
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr


def test_inventory_lists_files_under_task_folders_too(dataset, tmp_path):
    folder = outputs(tmp_path, "none", (1,))
    (folder / TASK).mkdir()
    (folder / TASK / f"2_{TASK}_output.xls").write_bytes(b"")  # a legacy output: not what is read
    cases = spreadsheetbench_cases(dataset, {"none": folder})
    [inventory] = take_inventory(cases, {"none": folder})
    assert (inventory.cases, inventory.found, len(inventory.missing)) == (3, 1, 2)
    assert [p.name for p in inventory.unmatched] == [f"2_{TASK}_output.xls"]


def test_the_python_api_reads_text_grades_as_the_cli_does(tmp_path):
    import pandas as pd

    import regrade
    from regrade.paired.tables import PairingError

    text = ("stack,benchmark,condition,task_id,passed\n"
            "s,b,none,t1,pass\ns,b,none,t2,fail\ns,b,none,t3,False\n"
            "s,b,skill,t1,fail\ns,b,skill,t2,True\ns,b,skill,t3,yes\n")
    (tmp_path / "outcomes.csv").write_text(text)
    # pandas keeps the mixed column as text: "fail" and "False" must not count as passes
    table = regrade.paired_table(pd.read_csv(tmp_path / "outcomes.csv"), baseline="none").iloc[0]
    assert (table["gains"], table["regressions"], table["retained"], table["residual"]) == (2, 1, 0, 0)
    cli = invoke("table", tmp_path / "outcomes.csv", "--format", "json")
    [row] = json.loads(cli.stdout)["rows"]
    assert (row["gains"], row["regressions"]) == (2, 1)
    with pytest.raises(PairingError, match=r"record 2 \(task t2, condition none\): 'maybe' is not a pass or a fail"):
        regrade.paired_table(pd.DataFrame([{"condition": "none", "task_id": "t1", "passed": True},
                                           {"condition": "none", "task_id": "t2", "passed": "maybe"}]))


def _results(tmp_path: Path, rows: list[tuple[str, str, bool]], provenance: dict | None) -> Path:
    lines = [provenance] if provenance else []
    lines += [{"record": "case", "stack": "s", "benchmark": "b", "condition": c, "task_id": t, "case": 1, "trial": 1,
               "output_path": f"{c}/{t}.xlsx", "answer_path": f"{t}.xlsx", "original_pass": None, "shallow_pass": p, "full_pass": p, "verdict": "confirmed-pass" if p else
               "confirmed-fail", "reasons": [], "cells": []} for c, t, p in rows]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_table_warns_of_unpaired_tasks_and_of_results_from_another_version(tmp_path):
    from regrade.results.provenance import FORMAT_VERSION

    rows = [("none", "1", True), ("none", "2", False), ("none", "10", False), ("skill", "1", True), ("skill", "3", True)]
    path = _results(tmp_path, rows, {"record": "provenance", "format_version": FORMAT_VERSION, "regrade_version": "0.0.1"})
    result = invoke("table", path)
    assert result.exit_code == 0, result.output
    assert "s / b / skill: 3 tasks are in only one of it and none, so out of n (2, 3, 10)" in result.stderr
    assert "was made by regrade 0.0.1" in result.stderr
    diff = invoke("diff", _results(tmp_path, rows, None))
    assert "has no provenance record" in diff.stderr


def test_diff_of_records_without_verdicts_and_table_of_a_workbook_are_one_line_errors(tmp_path):
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"condition": "none", "task_id": "1", "passed": True}) + "\n")
    result = invoke("diff", old)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {old} holds records without a verdict") and result.stderr.count("\n") == 1
    workbook = tmp_path / "results.xlsx"
    shutil.copyfile(DEMO / "outputs" / "none" / f"1_{TASK}_output.xlsx", workbook)
    result = invoke("table", workbook)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {workbook} is not a results file (JSON Lines text): is it a workbook or another " \
                            "binary file?\n"


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    import subprocess
    import sys

    rows = [("none", str(n), n % 2 == 0) for n in range(400)] + [("skill", str(n), True) for n in range(400)]
    path = _results(tmp_path, rows, None)
    for _ in range(3):  # the reader may go before or after the first write: each try is a race
        run = subprocess.run(f"set -o pipefail; {sys.executable} -m regrade diff {path} --cells --format csv | head -1; "
                             f"echo diff=$?; {sys.executable} -m regrade table {path} --format csv | true; "  # gone before a write
                             "echo table=$?", shell=True, executable="/bin/bash", capture_output=True, text=True,
                             timeout=120)
        assert "Broken pipe" not in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert "diff=0" in run.stdout and "table=0" in run.stdout, run.stdout  # the reader said enough: no error


def test_a_closed_stderr_costs_no_work(tmp_path):
    import subprocess
    import sys

    require_engines("ironcalc")
    results = tmp_path / "r.jsonl"
    run = subprocess.run(f"set -o pipefail; {sys.executable} -m regrade rescore --dataset {DEMO / 'dataset'} "
                         f"--runs {DEMO / 'outputs'} --engines ironcalc --workers 2 --no-cache -o {results} 2>&1 "
                         "| head -1; echo rescore=$?", shell=True, executable="/bin/bash", capture_output=True,
                         text=True, timeout=600)
    assert "rescore=0" in run.stdout, run.stdout + run.stderr
    assert len(results.read_text().splitlines()) == 1 + 45  # provenance and every case: nothing lost


def test_ctrl_c_exits_130_and_says_how_much_is_saved(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    require_engines("ironcalc")
    command = [sys.executable, "-m", "regrade", "rescore", "--dataset", DEMO / "dataset", "--runs", DEMO / "outputs",
               "--engines", "ironcalc", "--workers", "2", "-o", tmp_path / "r.jsonl"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    process = subprocess.Popen([str(c) for c in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, env=env,  # Ctrl-C as at a terminal, even where this
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # runs with it ignored
    assert process.stderr is not None
    while not (line := process.stderr.readline()).startswith("[2/"):  # two cases done (plain lines: no terminal)
        assert line, "the run ended before two cases were done"
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C reaches the whole process group
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "cases were graded and saved in the results cache; the same command resumes from there" in err
    assert "Traceback" not in err and not (tmp_path / "r.jsonl").exists()


def test_a_grader_command_that_cannot_run_is_an_error_of_each_control_not_a_fail(tmp_path):
    import sys

    missing = tmp_path / "nowhere.py"
    result = invoke("audit", "grader", "--command", f"{sys.executable} {missing} {{output}} {{answer}} {{position}}",
                    "--name", "my-grader", "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["grader"] == "my-grader"  # --name labels it
    total = sum(c["probes"] for c in report["categories"])
    assert sum(c["errored"] for c in report["categories"]) == total == len(report["errors"]) > 0
    assert sum(c["false_fail"] + c["false_pass"] for c in report["categories"]) == 0  # no control counted as a fail
    assert "exited with status 2, neither a pass (0) nor a fail (1)" in next(iter(report["errors"].values()))
    assert f"my-grader: {total} controls could not be judged" in result.stderr


def test_a_grader_command_exiting_0_or_1_is_judged(tmp_path):
    import sys

    grader = tmp_path / "grader.py"  # passes every output: each negative control is a false pass, no error
    grader.write_text("import sys\nsys.exit(0)\n")
    result = invoke("audit", "grader", "--command", f"{sys.executable} {grader} {{output}}", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == {} and report["grader"] == "command"
    negatives = [c for c in report["categories"] if c["kind"] == "negative"]
    assert sum(c["false_pass"] for c in negatives) == sum(c["probes"] for c in negatives) > 0


def test_progress_is_a_bar_with_rate_and_time_left_on_a_terminal(capsys):
    from regrade.render.progress import Progress

    with Progress(3, "cases", terminal=True) as shown:
        for label in ("a", "b", "c"):
            shown.advance(label, cached=label == "a")
    err = capsys.readouterr().err
    assert "3/3" in err and "cases/s" in err and "left" in err and "(1 reused)" in err
    with Progress(2, "files", terminal=False) as plain:
        plain.advance("x.xlsx")
    assert capsys.readouterr().err == "[1/2] x.xlsx\n"
    with Progress(2, "files", quiet=True, terminal=True) as silent:
        silent.advance("x.xlsx")
    assert capsys.readouterr().err == "" and silent.done == 1


def test_quiet_anywhere_on_the_line_leaves_warnings_and_drops_progress(dataset, tmp_path):
    require_engines("ironcalc")
    found = outputs(tmp_path, "none", (1, 2))
    args = ["rescore", "--dataset", dataset, "--condition", f"none={found}", "--engines", "ironcalc", "--workers", 1,
            "-o", tmp_path / "r.jsonl"]
    loud, quiet = invoke(*args), invoke(*args, "-q")
    assert "[1/3]" in loud.stderr and "[1/3]" not in quiet.stderr
    assert "condition none: 2 of 3 outputs found, 1 missing" in quiet.stderr  # what is missing is never quiet
    assert loud.stdout == quiet.stdout


def test_conformance_and_audit_benchmark_show_progress(tmp_path):
    require_engines("ironcalc")
    from tests.conftest import ROOT

    shutil.copyfile(ROOT / "fixtures" / "oracles" / "ironcalc" / "docs" / "DATE.xlsx", tmp_path / "DATE.xlsx")
    result = invoke("conformance", "--all-formulas", tmp_path, "--engines", "ironcalc")
    assert result.exit_code == 0, result.output
    assert "[1/1] DATE.xlsx" in result.stderr
    audit = invoke("audit", "benchmark", DEMO / "dataset", "--limit", 2, "--workers", 1)
    assert "[1/2] task " in audit.stderr and "[2/2] task " in audit.stderr


def test_setup_tells_an_externally_managed_python_from_one_pip_may_install_into(tmp_path):
    import glob
    import subprocess
    import sys

    from tests.conftest import ROOT

    check = ROOT / ".ci" / "externally_managed.py"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    assert subprocess.run([venv / "bin" / "python", check]).returncode == 1  # a venv: pip installs there
    # Debian 12's own python3 carries the PEP 668 marker in its stdlib: setup must make .venv for it
    if Path("/usr/bin/python3").exists() and glob.glob("/usr/lib/python3*/EXTERNALLY-MANAGED"):
        assert subprocess.run(["/usr/bin/python3", check]).returncode == 0
