"""docs/api.md's examples, run as they are written, on a run with the outputs people have:
Excel's own answer files, a wrong constant, an empty answer cell."""

from __future__ import annotations

import re
import shutil

import openpyxl
import pytest

import regrade
from tests.conftest import ROOT, demo_task_dataset, require_engines

TASK = "59511"  # answer_position F2:F6, three test cases


def api_examples() -> str:
    """The Python block of docs/api.md that walks through every function."""
    text = (ROOT / "docs" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return blocks[0]


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """What docs/api.md names: data/, outputs/none and outputs/skills, outcomes.csv, my_grader.py."""
    data = demo_task_dataset(tmp_path / "data", TASK)
    for condition in ("none", "skills"):
        (tmp_path / "outputs" / condition).mkdir(parents=True)
    goldens = sorted((data / "spreadsheet" / TASK).glob(f"*_{TASK}_answer.xlsx"))
    for golden in goldens:
        shutil.copyfile(golden, tmp_path / "outputs" / "none" / golden.name.replace("_answer", "_output"))
    edits = {1: ("F2", 12345), 2: ("F3", None)}  # a wrong constant; an empty answer cell
    for golden in goldens:
        case = int(golden.name.split("_")[0])
        target = tmp_path / "outputs" / "skills" / golden.name.replace("_answer", "_output")
        if case in edits:
            book = openpyxl.load_workbook(golden, data_only=True)  # constants only: no engine is needed
            cell, value = edits[case]
            book.active[cell] = value
            book.save(target)
        else:
            shutil.copyfile(golden, target)
    (tmp_path / "outcomes.csv").write_text("stack,benchmark,condition,task_id,passed\n"
                                           "s,b,none,1,pass\ns,b,none,2,fail\ns,b,skills,1,pass\ns,b,skills,2,pass\n")
    (tmp_path / "my_grader.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_examples_of_docs_api_md_run_as_written(workspace):
    require_engines("ironcalc", "libreoffice", "formulon", "gnumeric")
    names: dict = {}
    exec(compile(api_examples(), "docs/api.md", "exec"), names)  # noqa: S102: the repository's own documentation
    results = names["results"]
    verdicts = {(c.condition, c.case): c.verdict for c in results.cases}
    assert verdicts[("none", 1)] == "confirmed-pass"
    assert verdicts[("skills", 1)] == verdicts[("skills", 2)] == "confirmed-fail"
    wrong = next(c for c in results.cases if c.condition == "skills" and c.case == 1)
    assert [(cell.cell, cell.shallow, cell.decided_by) for cell in wrong.cells] == [("Sheet1!F2", 12345, None)]
    assert (workspace / "report.html").is_file()


def test_the_api_reads_a_results_file_named_by_text_and_reports_twice(workspace):
    require_engines("ironcalc")
    results = regrade.rescore("data", {"none": "outputs/none", "skills": "outputs/skills"}, engines=["ironcalc"],
                              output="results.jsonl")
    read = regrade.Results.read("results.jsonl")
    assert [c.verdict for c in read.cases] == [c.verdict for c in results.cases]
    assert len(regrade.diff("results.jsonl", by="cells")) == 2  # F2's wrong constant, F3 left empty
    for name in ("one.html", "two.html"):  # the report subpackage once shadowed the function
        shown = regrade.report("results.jsonl", name)
        assert shown.records and (workspace / name).is_file()
