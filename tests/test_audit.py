"""Benchmark and grader audits (issue 6): the sealed control pack, the built-in graders'
known mistakes, command and callable graders, and the benchmark checks, on a small
benchmark built here and (when present) on the shared SpreadsheetBench split against the
official decisions recorded in official_grades.json."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from regrade.audit.benchmark import audit_benchmark
from regrade.audit.grader import audit_grader, audit_table, grade_controls
from regrade.cli import main
from regrade.audit.controls import PACK, PackError, load_pack, select_controls
from regrade.grading.graders import make_grader
from tests.conftest import SHARED, SHARED_ABSENT

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pack():
    return load_pack()


def mistakes(grader_name: str, pack) -> dict[str, list[str]]:
    """{category: failing control ids} of the categories the grader gets wrong."""
    audit = audit_grader(make_grader(grader_name), pack)
    assert audit.errors == {}
    return {c.category: c.failing for c in audit.categories if c.failing}


# ---------------------------------------------------------------- the sealed pack

def test_the_pack_is_sealed_and_the_generator_rebuilds_it_byte_for_byte(tmp_path, monkeypatch, pack):
    manifest = json.loads((PACK / "manifest.json").read_text())
    assert pack.digest == manifest["digest"]
    assert len(manifest["files"]) == 2 * len(pack.controls) + 1  # output + answer per control, controls.json
    assert {c.kind for c in pack.controls} == {"positive", "negative"}
    spec = importlib.util.spec_from_file_location("make_controls", ROOT / "fixtures" / "make_controls.py")
    generator = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "make_controls", generator)  # its dataclasses look themselves up there
    spec.loader.exec_module(generator)
    monkeypatch.setattr(generator, "PACK", tmp_path / "rebuilt")
    generator.main()
    assert load_pack(tmp_path / "rebuilt").digest == pack.digest


def test_an_altered_pack_or_an_unexpected_digest_is_refused(tmp_path, pack):
    copy = tmp_path / "pack"
    shutil.copytree(PACK, copy)
    assert load_pack(copy, expect_digest=pack.digest).digest == pack.digest
    with pytest.raises(PackError, match="not the expected"):
        load_pack(copy, expect_digest="0" * 64)
    workbook = openpyxl.load_workbook(copy / "off-by-one.output.xlsx")
    workbook.active["B1"] = 9  # turn a negative control into a correct output
    workbook.save(copy / "off-by-one.output.xlsx")
    with pytest.raises(PackError, match="off-by-one.output.xlsx"):
        load_pack(copy)
    result = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--expect-digest", "abc"])
    assert result.exit_code == 1 and "not the expected abc" in result.output


# ---------------------------------------------------------------- what the built-in graders get wrong

def test_the_official_grader_is_blind_to_uncomputed_formulas(pack):
    wrong = mistakes("spreadsheetbench-official", pack)
    # an uncomputed formula reads as empty: it passes against an empty golden cell ...
    assert wrong["uncomputed-formula"] == ["uncomputed-against-empty", "uncomputed-error"]
    # ... and a stale cache passes whatever the formula computes
    assert wrong["stale-cache"] == ["stale-cache-sum", "stale-cache-lookup"]
    # while every correct formula written without a cache fails
    assert wrong["uncached-formula"] == ["uncached-sum", "uncached-max"]
    assert wrong["aggregate"] == ["aggregate-uncached"]  # the cached AGGREGATE passes
    assert "wrong-value" not in wrong and "cached-values" not in wrong


@pytest.mark.slow
def test_a_gnumeric_recalculation_fails_aggregate(pack):
    wrong = mistakes("gnumeric-recalc", pack)
    assert wrong["aggregate"] == ["aggregate-uncached", "aggregate-cached"]  # #NAME?, even with Excel's cache
    assert wrong["xlookup"] == ["xlookup-exact", "xlookup-not-found"]
    assert "stale-cache" not in wrong and "uncomputed-formula" not in wrong  # it does recompute


@pytest.mark.slow
def test_regrade_passes_no_wrong_output(pack):
    audit = audit_grader(make_grader("regrade"), pack)
    negatives = [c for c in audit.categories if c.kind == "negative"]
    assert sum(c.probes for c in negatives) >= 15
    assert [c.failing for c in negatives if c.false_pass] == []
    # its one false fail: SpreadsheetBench's value rules compare text exactly
    assert {c.category: c.failing for c in audit.categories if c.failing} == {"trailing-space": ["trailing-space"]}


# ---------------------------------------------------------------- graders from outside

def always_pass(output: str, answer: str, position: str) -> bool:
    return True


def half_score(output: str, answer: str, position: str) -> float:
    return 0.5


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_command_and_callable_graders(pack, tmp_path):
    negatives = sum(1 for c in pack.controls if c.kind == "negative")
    positives = len(pack.controls) - negatives
    for grader in (make_grader(None, command=f"{sys.executable} -c 'import sys; sys.exit(0)' {{output}}"),
                   make_grader(None, callable_target="tests.test_audit:always_pass")):
        audit = audit_grader(grader, pack)
        assert sum(c.false_pass for c in audit.categories) == negatives
        assert sum(c.false_fail for c in audit.categories) == 0
    scored = audit_grader(make_grader(None, callable_target="tests.test_audit:half_score", threshold=0.6), pack)
    assert sum(c.false_fail for c in scored.categories) == positives
    printed = make_grader(None, command=f"{sys.executable} -c 'print(\"score 0.75\")' {{output}} {{answer}} {{position}}",
                          threshold=0.7)
    assert printed.passes(PACK / "off-by-one.output.xlsx", PACK / "off-by-one.answer.xlsx", "B1") is True


def test_a_callable_grader_beside_the_user_runs_in_the_case_workers(pack, tmp_path, monkeypatch):
    # a grader module in the user's folder (not installed anywhere), audited with --workers 2:
    # the workers import it as the user's process did, every control is graded in a worker, and
    # the verdicts equal the one-process audit's
    (tmp_path / "my_grader.py").write_text(
        "import os, pathlib\n"
        "def grade(output, answer, position, input=None):\n"
        "    pathlib.Path(os.environ['PIDS'], str(os.getpid())).touch()\n"
        "    return 'off-by-one' not in output and 'stale' not in output\n")
    (tmp_path / "pids").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIDS", str(tmp_path / "pids"))
    monkeypatch.delitem(sys.modules, "my_grader", raising=False)
    alone = grade_controls(make_grader(None, callable_target="my_grader:grade"), pack.controls, workers=1)
    assert {p.name for p in (tmp_path / "pids").iterdir()} == {str(os.getpid())}
    shutil.rmtree(tmp_path / "pids")
    (tmp_path / "pids").mkdir()
    verdicts = grade_controls(make_grader(None, callable_target="my_grader:grade"), pack.controls, workers=2)
    assert verdicts == alone and False in alone and True in alone
    ran_in = {int(p.name) for p in (tmp_path / "pids").iterdir()}
    assert ran_in and os.getpid() not in ran_in


def test_a_callable_defined_in_the_main_script_is_graded_in_this_process():
    from regrade.audit.grader import runs_in_workers
    from regrade.grading.graders import CallableGrader

    assert runs_in_workers(make_grader(None, callable_target="tests.test_audit:always_pass"))
    here = make_grader(None, callable_target="tests.test_audit:always_pass")
    assert isinstance(here, CallableGrader)
    here._function = lambda output, answer, position: True  # not importable in another process
    assert not runs_in_workers(here)


@pytest.mark.slow
def test_a_value_grader_worker_killed_mid_audit_costs_no_control(pack):
    # the official grader over the pack in two case workers; after the third control is told, a
    # worker is killed (SIGKILL) while it holds a control: that control is graded again alone, so
    # every verdict equals the one-process audit's and none is an error
    import multiprocessing
    import os
    import signal

    grader = make_grader("spreadsheetbench-official")
    alone = grade_controls(grader, pack.controls, workers=1)
    told: list[str] = []
    killed: list[int] = []

    def kill_one(control) -> None:
        told.append(control.id)
        if len(told) == 3:
            for child in multiprocessing.active_children():
                if child.name == "regrade-case-worker" and child.pid is not None:
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)
                    break

    verdicts = grade_controls(make_grader("spreadsheetbench-official"), pack.controls, workers=2, on_control=kill_one)
    assert killed and verdicts == alone
    assert sorted(told) == sorted(c.id for c in pack.controls)  # each told once


def test_reports_made_with_different_packs_say_so(pack):
    report = audit_grader(make_grader("spreadsheetbench-official"), pack).as_json()
    other = {**report, "grader": "other", "pack_digest": "f" * 64}
    rows, warnings = audit_table([report, other])
    assert len(rows) == 2 * len(report["categories"])
    assert len(warnings) == 1 and "different control packs" in warnings[0]
    assert audit_table([report, report])[1] == []
    retuned = {**report, "settings": {**report["settings"], "policy": "spreadsheetbench"}}
    assert "different settings" in audit_table([report, retuned])[1][0]
    first = report["categories"][0]
    assert set(first) >= {"category", "kind", "probes", "false_fail", "false_pass", "failing"}


def test_the_grader_audit_command_prints_the_documented_json(pack):
    result = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # progress goes to stderr
    assert data["grader"] == "spreadsheetbench-official" and data["pack_digest"] == pack.digest
    assert data["settings"]["policy"] == "spreadsheetbench-official" and data["regrade_version"]
    uncomputed = next(c for c in data["categories"] if c["category"] == "uncomputed-formula")
    assert uncomputed["kind"] == "negative" and uncomputed["false_pass"] == 2 and uncomputed["false_pass_rate"] == 1.0


def test_a_selection_grades_only_the_controls_it_names_and_the_report_says_so(pack):
    # fixtures/make_controls.py writes XLOOKUP into these three outputs and no other
    chosen = select_controls(pack, calling=("xlookup",))
    assert sorted(c.id for c in chosen.controls) == ["stale-cache-lookup", "xlookup-exact", "xlookup-not-found"]
    assert chosen.digest == pack.digest and chosen.selection == {"tasks": [], "calling": ["XLOOKUP"], "of": 36}
    result = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--calling", "AGGREGATE",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["selection"] == {"tasks": [], "calling": ["AGGREGATE"], "of": 36}
    assert [(c["category"], c["probes"]) for c in data["categories"]] == [("aggregate", 2)]
    assert "2 of the pack's 36 controls" in result.stderr
    whole = audit_grader(make_grader("spreadsheetbench-official"), pack).as_json()
    assert whole["selection"] is None
    assert any("different selections" in w for w in audit_table([whole, data])[1])


def test_a_selection_that_selects_nothing_is_an_error(pack):
    result = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--task", "no-such-task"])
    assert result.exit_code != 0
    assert "no control of the pack" in result.output and "no-such-task" in result.output


def test_a_dask_executor_with_nothing_for_it_to_run_is_refused():
    refused = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--executor", "dask"])
    assert refused.exit_code == 2 and "regrade's own work" in refused.output
    alone = CliRunner().invoke(main, ["audit", "grader", "spreadsheetbench-official", "--scheduler", "tcp://h:8786"])
    assert alone.exit_code == 2 and "--executor dask" in alone.output


# ---------------------------------------------------------------- benchmark audits

def _book(path: Path, cells: dict[str, object]) -> None:
    workbook = openpyxl.Workbook()
    workbook.active.title = "Sheet1"
    for coordinate, value in cells.items():
        workbook.active[coordinate] = value
    workbook.save(path)


@pytest.fixture()
def small_benchmark(tmp_path):
    """Eight tasks, each with the problem its id names (checked one by one below)."""
    answer = {"A1": 3, "A2": 4, "B1": 7}
    given = {"A1": 3, "A2": 4}
    tasks = {
        "clean": ("B1", answer, given, 3),
        "input-passes": ("B1", answer, answer, 3),
        "whole-column": ("A:B", answer, given, 3),  # the official grader raises on A:B: the golden fails itself
        "repaired": ("Sheet1'!B1", answer, given, 3),
        "uncached": ("B1", {**given, "B1": "=A1+A2"}, given, 3),
        "volatile-and-empty": ("B1:B8", {**given, "B1": "=TODAY()"}, given, 3),
        "two-cases": ("B1", answer, given, 2),
        "verified": ("B1", answer, answer, 1),  # SpreadsheetBench Verified names: 1_<id>_golden.xlsx, 1_<id>_init.xlsx
    }
    records = []
    for task_id, (position, golden, initial, cases) in tasks.items():
        folder = tmp_path / "spreadsheet" / task_id
        folder.mkdir(parents=True)
        verified = task_id == "verified"
        for n in range(1, cases + 1):
            _book(folder / f"{n}_{task_id}_{'golden' if verified else 'answer'}.xlsx", golden)
            _book(folder / f"{n}_{task_id}_{'init' if verified else 'input'}.xlsx", initial)
        records.append({"id": task_id, "answer_position": position, "instruction": "-"})
    (tmp_path / "spreadsheet" / "clean" / "2_clean_input.xlsx").unlink()
    (tmp_path / "spreadsheet" / "clean" / "3_clean_answer.xlsx").write_bytes(b"not a workbook")
    (tmp_path / "dataset.json").write_text(json.dumps(records))
    return tmp_path


def test_every_check_of_a_benchmark_audit(small_benchmark):
    report = audit_benchmark(small_benchmark, workers=1)
    found = {(f.task_id, f.id) for f in report.findings()}
    assert ("clean", "input-missing") in found and ("clean", "golden-unreadable") in found
    assert {("input-passes", "input-passes"), ("input-passes", "task-passes-unmodified")} <= found
    assert ("whole-column", "golden-fails-itself") in found
    assert ("repaired", "position-repaired") in found
    assert ("uncached", "golden-uncached-formula") in found
    assert {("volatile-and-empty", "golden-volatile"), ("volatile-and-empty", "golden-mostly-empty")} <= found
    assert ("two-cases", "unusual-case-count") in found
    assert ("verified", "task-passes-unmodified") in found  # its init file was found and graded
    assert not any(task == "two-cases" and fid != "unusual-case-count" for task, fid in found)
    summary = report.summary()
    assert summary["golden_fails_itself"] == 3  # the three cases of whole-column
    # input-passes, and uncached and volatile-and-empty too: their goldens' formulas were never
    # computed, so a value-only grader reads them as empty, just like the untouched inputs
    assert summary["inputs_passing"] == 10 and summary["tasks_passing_unmodified"] == 4  # and verified's


def test_the_benchmark_audit_command_exit_status_and_formats(small_benchmark):
    runner = CliRunner()
    table = runner.invoke(main, ["audit", "benchmark", str(small_benchmark), "--workers", "1"])
    assert table.exit_code == 1 and "golden-fails-itself" in table.output  # errors exist
    relaxed = runner.invoke(main, ["audit", "benchmark", str(small_benchmark), "--workers", "1", "--limit", "1",
                                   "--fail-on", "error", "--format", "json"])
    data = json.loads(relaxed.stdout)
    assert data["summary"]["tasks"] == 1 and data["grader"] == "spreadsheetbench-official"
    assert relaxed.exit_code == 1  # task "clean" has a corrupt golden and a missing input
    rows = runner.invoke(main, ["audit", "benchmark", str(small_benchmark), "--workers", "1", "--format", "csv"])
    assert rows.stdout.splitlines()[0] == "grader,id,severity,task_id,case,message"


def die_on_doomed_task(folder, record):
    """Stands in for a task's audit in a case worker: the worker process itself dies on one task."""
    import os

    from regrade.audit import benchmark

    if str(record["id"]) == os.environ["REGRADE_TEST_DOOMED"]:
        os._exit(1)
    return benchmark.audit_task(folder, record, benchmark._AUDITORS["grader"], benchmark._AUDITORS["recalc"])


def test_a_task_whose_audit_kills_its_worker_is_reported_and_the_others_go_on(small_benchmark, monkeypatch):
    from regrade.audit import benchmark

    alone = audit_benchmark(small_benchmark, workers=1)
    monkeypatch.setenv("REGRADE_TEST_DOOMED", "uncached")
    monkeypatch.setattr(benchmark, "_audit_record", die_on_doomed_task)
    told: list[str] = []
    report = audit_benchmark(small_benchmark, workers=2, on_task=lambda task: told.append(task.task_id))
    assert told == [t.task_id for t in alone.tasks]  # every task, in dataset order
    crashed = [(f.task_id, f.severity) for f in report.findings() if f.id == "task-audit-crashed"]
    assert crashed == [("uncached", "error")]
    others = [t for t in report.tasks if t.task_id != "uncached"]
    assert [(t.task_id, t.findings) for t in others] == [(t.task_id, t.findings) for t in alone.tasks
                                                         if t.task_id != "uncached"]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "official_grades.json").is_file(), reason=SHARED_ABSENT)
def test_self_match_and_do_nothing_agree_with_the_official_decisions(tmp_path):
    """On tasks of the shared split chosen for their official outcomes (goldens that fail,
    inputs that pass, and clean ones), the audit's per-case decisions equal the official ones."""
    official = json.loads((SHARED / "official_grades.json").read_text())["cases"]
    by_task: dict[str, list[dict]] = {}
    for row in official:
        by_task.setdefault(str(row["id"]), []).append(row)
    failing = [t for t, rows in by_task.items() if any(not r["answer_vs_answer"] for r in rows)][:6]
    passing = [t for t, rows in by_task.items() if any(r["input_vs_answer"] for r in rows) and t not in failing][:6]
    clean = [t for t in by_task if t not in failing and t not in passing][:4]
    chosen = set(failing + passing + clean)
    records = [r for r in json.loads((SHARED / "dataset.json").read_text()) if str(r["id"]) in chosen]
    (tmp_path / "spreadsheet").mkdir()
    for task in chosen:
        (tmp_path / "spreadsheet" / task).symlink_to(SHARED / "spreadsheet" / task)
    (tmp_path / "dataset.json").write_text(json.dumps(records))
    report = audit_benchmark(tmp_path, workers=2)
    ours = {(t.task_id, n): (n not in t.golden_fails, n in t.input_passes) for t in report.tasks for n in range(1, t.cases + 1)}
    theirs = {(str(r["id"]), r["case"]): (r["answer_vs_answer"], r["input_vs_answer"]) for r in official
              if str(r["id"]) in chosen}
    assert ours == theirs
    assert sum(not a for a, _ in ours.values()) >= 6 and sum(i for _, i in ours.values()) >= 6


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_a_recalculation_that_cannot_compute_the_golden_is_reported(tmp_path):
    """The golden caches AGGREGATE's value, as Excel saves it; gnumeric recalculates it to #NAME?."""
    folder = tmp_path / "spreadsheet" / "agg"
    folder.mkdir(parents=True)
    shutil.copy(PACK / "aggregate-cached.output.xlsx", folder / "1_agg_answer.xlsx")  # B1: AGGREGATE(4,6,A1:A4), cached 4
    shutil.copy(PACK / "input-unchanged.output.xlsx", folder / "1_agg_input.xlsx")
    (tmp_path / "dataset.json").write_text(json.dumps([{"id": "agg", "answer_position": "B1", "instruction": "-"}]))
    gnumeric = audit_benchmark(tmp_path, recalc="gnumeric", workers=1)
    found = [f for f in gnumeric.findings() if f.id == "recalc-unsupported"]
    assert len(found) == 1 and "#NAME?" in found[0].message and "call AGGREGATE" in found[0].message
    libreoffice = audit_benchmark(tmp_path, recalc="libreoffice", workers=1)
    assert [f for f in libreoffice.findings() if f.id == "recalc-unsupported"] == []  # LibreOffice computes 4


# ---------------------------------------------------------------- the findings table

def test_every_finding_the_audit_makes_is_a_kind_of_the_table_and_every_kind_is_made():
    # the ids the benchmark audit's code makes findings of, read from its source, against the
    # table that gives each its severity (and docs/audits.md its row): none made without a row,
    # no row for a finding nothing makes
    import inspect
    import re

    import regrade.audit.benchmark as benchmark
    from regrade.audit.findings import BY_ID, finding

    made = set(re.findall(r'finding\(\s*"([a-z-]+)"', inspect.getsource(benchmark)))
    assert made == set(BY_ID)
    assert finding("golden-volatile", "t", 1, "m").severity == "warning"
    with pytest.raises(ValueError, match="unknown finding id 'golden-gone'"):
        finding("golden-gone", "t", 1, "m")
