"""A newcomer's run done right (issue 44): part of a benchmark, nothing dropped or merged without a
word, a broken output counted, the original grades named for what they are, clear messages.

The run is the demo's benchmark (five tasks, three test cases each) with outputs for two of
its tasks: Excel's own answer files under `none`, and under `skills` the same but one
answer re-saved by openpyxl (its formulas lose their cached values: an artifact) and one
output of random bytes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from regrade.cli import main
from tests.conftest import DEMO, SHARED, SHARED_ABSENT, require_engines

RAN = ("59511", "32293")  # the tasks the run covered, of the demo benchmark's five


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def answer(dataset: Path, task: str, case: int) -> Path:
    return dataset / "spreadsheet" / task / f"{case}_{task}_answer.xlsx"


def partial_run(root: Path, dataset: Path, tasks: tuple[str, ...]) -> tuple[Path, Path]:
    """Outputs of ``tasks`` only: none = Excel's answers; skills = the same, but its first task's
    case 1 re-saved by openpyxl (uncached formulas) and its case 2 random bytes."""
    none, skills = root / "runs" / "none", root / "runs" / "skills"
    for folder in (none, skills):
        folder.mkdir(parents=True)
    for task in tasks:
        for case in (1, 2, 3):
            golden = answer(dataset, task, case)
            if not golden.exists():
                continue
            name = f"{case}_{task}_output.xlsx"
            shutil.copyfile(golden, none / name)
            if task == tasks[0] and case == 1:
                openpyxl.load_workbook(golden).save(skills / name)
            elif task == tasks[0] and case == 2:
                (skills / name).write_bytes(os.urandom(4096))
            else:
                shutil.copyfile(golden, skills / name)
    return none, skills


@pytest.fixture
def run(tmp_path):
    require_engines("ironcalc")
    data = DEMO / "dataset"
    none, skills = partial_run(tmp_path, data, RAN)
    return data, none, skills


def rescore(data, none, skills, out, *extra):
    return invoke("rescore", "--dataset", data, "--condition", f"none={none}", "--condition", f"skills={skills}",
                  "--engines", "ironcalc", "--workers", "1", "-o", out, *extra)


def verdict_rows(stdout: str) -> dict[str, int]:
    rows = [line.split() for line in stdout.splitlines()[2:] if line.strip()]
    return {verdict: int(count) for verdict, count in rows}


def test_a_run_over_part_of_a_benchmark_grades_only_its_tasks_with_tasks_with_outputs(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "part.jsonl"
    result = rescore(data, none, skills, out, "--tasks-with-outputs")
    assert result.exit_code == 0, result.output
    counts = verdict_rows(result.stdout)
    assert sum(counts.values()) == 12 and counts["missing-output"] == 0  # 2 tasks x 3 cases x 2 conditions
    assert counts["artifact"] >= 1 and counts["confirmed-fail"] >= 1  # the re-saved answer; the random bytes
    assert "--tasks-with-outputs: 3 tasks of" in result.stderr and "left out (34469, 37086, 57029)" in result.stderr
    provenance = json.loads(out.read_text().splitlines()[0])
    assert provenance["left_out"]["without_outputs"] == ["34469", "37086", "57029"]
    assert provenance["settings"]["tasks_with_outputs"] is True
    table = json.loads(invoke("table", out, "--format", "json").stdout)
    assert {row["n"] for row in table["rows"]} == {2}  # the tasks run, not the benchmark's five
    assert {row["without_output"] for row in table["rows"]} == {0}


def test_without_it_missing_outputs_are_their_own_row_and_the_table_warns(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "whole.jsonl"
    result = rescore(data, none, skills, out)
    assert result.exit_code == 0, result.output
    counts = verdict_rows(result.stdout)
    assert counts["missing-output"] == 18  # 3 tasks x 3 cases x 2 conditions: never among the confirmed failures
    assert counts["confirmed-fail"] == 1  # the random bytes alone
    assert "warning: 18 of 30 cases (60%) have no output" in result.stderr
    assert "pass --tasks-with-outputs to grade only the 2 tasks some condition has an output for" in result.stderr
    assert "Most cases (18 of 30) had no output" in result.stderr
    table = invoke("table", out)
    assert "3 of its 5 tasks have no output in it or in none" in table.stderr
    assert "rescore with --tasks-with-outputs" in table.stderr


def test_a_task_without_answer_files_is_counted_not_dropped(run, tmp_path):
    _, none, skills = run
    data = tmp_path / "data"
    shutil.copytree(DEMO / "dataset", data)
    for golden in (data / "spreadsheet" / "37086").iterdir():
        golden.unlink()  # its folder is there, empty
    out = tmp_path / "r.jsonl"
    result = rescore(data, none, skills, out, "--tasks-with-outputs")
    assert result.exit_code == 0, result.output
    assert "warning: 1 tasks of" in result.stderr and "have no answer file under spreadsheet/<id>/ and are not " \
                                                       "graded (37086)" in result.stderr
    assert json.loads(out.read_text().splitlines()[0])["left_out"]["without_answer_files"] == ["37086"]
    page = tmp_path / "report.html"
    assert invoke("report", out, "-o", page).exit_code == 0
    assert "1 tasks of the dataset were not graded (without answer files)" in page.read_text()


def test_a_random_bytes_output_is_a_counted_genuine_failure(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "r.jsonl"
    result = rescore(data, none, skills, out, "--tasks-with-outputs")
    records = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    broken = [r for r in records if r["condition"] == "skills" and r["task_id"] == RAN[0] and r["case"] == 2]
    assert [(r["verdict"], r["reasons"]) for r in broken] == [("confirmed-fail", ["unreadable-output"])]
    said = "1 outputs are no workbook a spreadsheet program opens (1 unreadable-output): genuine failures"
    assert said in result.stderr
    page = tmp_path / "report.html"
    report = invoke("report", out, "-o", page)
    assert said in report.stderr and said in page.read_text()


def test_the_same_cases_twice_are_refused_by_table_as_by_report(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "r.jsonl"
    assert rescore(data, none, skills, out, "--tasks-with-outputs").exit_code == 0
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(out.read_bytes())
    twice = invoke("table", out, copy)
    assert twice.exit_code == 1 and f"is in two of them ({out} and {copy})" in twice.stderr
    named_twice = invoke("table", out, out)
    assert named_twice.exit_code == 1 and "is named twice" in named_twice.stderr
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("stack,benchmark,condition,task_id,passed\ns,b,none,1,pass\ns,b,none,1,fail\n")
    assert "task 1 case 1 trial 1 of condition none is twice in" in invoke("table", outcomes).stderr


def test_the_original_grading_is_named_for_what_it_is(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "r.jsonl"
    assert rescore(data, none, skills, out, "--tasks-with-outputs").exit_code == 0
    rows = json.loads(invoke("table", out, "--format", "json").stdout)["rows"]
    assert {row["original_from"] for row in rows} == {"value-only"}  # a folder of outputs has no grades of its own
    caption = invoke("table", out, "--format", "latex").stdout
    assert "Original: the value-only grade" in caption and "run's own" not in caption
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("stack,benchmark,condition,task_id,passed\ns,b,none,1,pass\ns,b,skills,1,fail\n")
    rows = json.loads(invoke("table", outcomes, "--format", "json").stdout)["rows"]
    assert {row["original_from"] for row in rows} == {"run"}


def test_the_report_shows_pass_rates_says_which_grade_a_message_is_about_and_keeps_local_paths_out(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "r.jsonl"
    assert rescore(data, none, skills, out, "--tasks-with-outputs").exit_code == 0
    page = tmp_path / "report.html"
    assert invoke("report", out, "-o", page).exit_code == 0
    text = page.read_text()
    assert "none %</th>" in text and "pass %</th>" in text
    artifacts = [json.loads(line) for line in out.read_text().splitlines()[1:]
                 if json.loads(line).get("verdict") == "artifact"]
    assert artifacts and all(r["message"].startswith("value-only: ") and
                             r["message"].endswith("recomputed, every graded cell equals the golden") for r in artifacts)
    assert " 1 cells<" not in text and ">1 cells<" not in text
    for transition in ("gain", "regression", "retained", "residual"):
        assert f"<dt>{transition}</dt>" in text
    cache = str(Path(os.environ["XDG_CACHE_HOME"]))
    assert cache not in text and "cache=" not in text


def test_messages_a_newcomer_meets(run, tmp_path):
    data, none, skills = run
    out = tmp_path / "r.jsonl"
    missing = rescore(data, tmp_path / "nowhere", skills, out)
    assert missing.exit_code == 2 and "output folder" in missing.stderr and "does not exist" in missing.stderr
    a_file = rescore(data, next(none.iterdir()), skills, out)
    assert a_file.exit_code == 2 and "is a file: --condition takes NAME=FOLDER" in a_file.stderr
    dataset_json = invoke("table", data / "dataset.json")
    assert dataset_json.exit_code == 1 and "is one JSON document" in dataset_json.stderr \
        and "dataset.json? that goes to regrade rescore --dataset" in dataset_json.stderr
    folder = invoke("table", none)
    assert folder.exit_code == 1 and "a folder of output workbooks is graded with regrade rescore first" in folder.stderr
    shutil.copyfile(next(none.iterdir()), none / "1_99999_output.xlsx")
    unknown = rescore(data, none, skills, out, "--tasks-with-outputs")
    assert "1 outputs name a task or test case the dataset does not have (1_99999_output.xlsx)" in unknown.stderr
    (none / "1_99999_output.xlsx").unlink()
    other = invoke("rescore", "--dataset", data, "--condition", f"base={none}", "--condition", f"skills={skills}",
                   "--engines", "ironcalc", "--workers", "1", "--tasks-with-outputs", "-o", out)
    assert "regrade table" in other.stderr and "--baseline CONDITION" in other.stderr \
        and "name the baseline: base, skills" in other.stderr
    no_none = invoke("table", out)
    assert no_none.exit_code == 1 and "name the one to pair against with --baseline" in no_none.stderr
    quiet = rescore(data, none, skills, out, "--tasks-with-outputs", "-q")
    assert "outputs found" not in quiet.stderr and "cases graded" not in quiet.stderr and "Next:" not in quiet.stderr
    assert "no workbook a spreadsheet program opens" in quiet.stderr  # what is wrong still shows
    assert "every graded cell that either grading" in invoke("diff", "--help").stdout


@pytest.mark.slow
def test_the_readme_walk_through_on_part_of_the_shared_split_gives_the_right_n(tmp_path):
    """Eight tasks of the shared split, two conditions, the README's commands: n is 8, not 619."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_ABSENT)
    require_engines("ironcalc", "libreoffice", "formulon")
    tasks = tuple(str(r["id"]) for r in json.loads((SHARED / "dataset.json").read_text())[:8])
    none, skills = partial_run(tmp_path, SHARED, tasks)
    out = tmp_path / "results.jsonl"
    result = invoke("rescore", "--dataset", SHARED, "--condition", f"none={none}", "--condition", f"skills={skills}",
                    "--tasks-with-outputs", "--workers", "2", "-o", out)
    assert result.exit_code == 0, result.output
    assert sum(verdict_rows(result.stdout).values()) == 2 * sum(
        1 for task in tasks for case in (1, 2, 3) if answer(SHARED, task, case).exists())
    table = json.loads(invoke("table", out, "--baseline", "none", "--format", "json").stdout)
    assert {row["n"] for row in table["rows"]} == {8}
    assert invoke("diff", out).exit_code == 0
    assert invoke("report", out, "-o", tmp_path / "report.html").exit_code == 0
