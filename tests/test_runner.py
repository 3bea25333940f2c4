"""Rescoring a whole run: worker pool, results cache, resume."""

import json

import pytest

from regrade import demo
from regrade.run import RescoreSettings, ResultCache, rescore_run
from regrade.runs.cases import spreadsheetbench_cases
from tests.conftest import DEMO

SETTINGS = RescoreSettings("spreadsheetbench", "cached", ("ironcalc",), 60.0)


def demo_cases():
    return spreadsheetbench_cases(DEMO / "dataset", demo.conditions(DEMO), stack="demo-agent")


def distinct(cases) -> int:
    """Cases with different output or golden bytes or cells: what a run grades (the others reuse a grading)."""
    from regrade.results.provenance import sha256_file

    return len({(c.task_id, sha256_file(c.output_path), sha256_file(c.answer_path), c.answer_position) for c in cases})


def expected_verdicts() -> dict[str, str]:
    # fixtures/demo-run/expected.json: the verdict of every output, worked out by hand (IronCalc
    # cannot compute the AGGREGATE outputs without the bridge; with it, it can)
    return {f"{condition}/{name}": verdict
            for condition, files in json.loads((DEMO / "expected.json").read_text()).items()
            for name, verdict in files.items()}


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_a_pool_gives_the_same_records_in_case_order_as_one_process(tmp_path):
    cases = demo_cases()
    alone = rescore_run(cases, SETTINGS, workers=1)
    pooled = rescore_run(cases, SETTINGS, workers=2)
    assert pooled == alone
    assert [(r.condition, r.task_id, r.case) for r in pooled] == [(c.condition, c.task_id, c.case) for c in cases]
    verdicts = {f"{r.condition}/{r.output_path.rsplit('/', 1)[1]}": r.verdict for r in pooled}
    assert verdicts == expected_verdicts()


def test_a_second_run_takes_every_case_from_the_cache(tmp_path):
    cases = demo_cases()
    cache = ResultCache(tmp_path / "cache")
    seen: list[bool] = []
    first = rescore_run(cases, SETTINGS, cache=cache, on_record=lambda i, r, cached: seen.append(cached))
    assert seen.count(False) == distinct(cases) < len(cases)  # the demo's conditions share some outputs
    seen.clear()
    second = rescore_run(cases, SETTINGS, cache=cache, on_record=lambda i, r, cached: seen.append(cached))
    assert all(seen) and len(seen) == len(cases)
    assert second == first


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_an_interrupted_run_resumes_from_what_it_finished(tmp_path):
    cases = demo_cases()
    cache = ResultCache(tmp_path / "cache")
    rescore_run(cases[:7], SETTINGS, cache=cache)  # as if killed after seven cases
    seen: list[bool] = []
    partial = tmp_path / ".results.partial"
    resumed = rescore_run(cases, SETTINGS, cache=cache, on_record=lambda i, r, cached: seen.append(cached), partial=partial)
    assert seen.count(False) == distinct(cases) - distinct(cases[:7])  # the seven come from the cache
    assert resumed == rescore_run(cases, SETTINGS)  # the same as an uninterrupted run without a cache
    assert len(partial.read_text().splitlines()) == len(cases)  # every record was appended as it finished


def test_a_condition_that_wrote_the_same_files_is_graded_once(tmp_path):
    cases = [c for c in demo_cases() if c.condition == "none"]
    copies = [c.model_copy(update={"condition": "again"}) for c in cases]  # a second trial that wrote byte-identical outputs
    seen: list[bool] = []
    records = rescore_run(cases + copies, SETTINGS, workers=2, on_record=lambda i, r, cached: seen.append(cached))
    assert seen.count(True) == len(copies) and seen.count(False) == distinct(cases)  # no cache: reused within the run
    originals, again = records[:len(cases)], records[len(cases):]
    assert [r.model_copy(update={"condition": "none"}) for r in again] == originals
    assert originals == rescore_run(cases, SETTINGS)


def test_the_key_changes_with_the_output_bytes(tmp_path, workbook):
    from regrade.run import cache_key
    from regrade.runs.cases import Case

    golden = workbook({"A1": 1}, name="golden.xlsx")
    output = workbook({"A1": 1}, name="output.xlsx")
    case = Case(condition="x", task_id="t", case=1, output_path=output, answer_path=golden, answer_position="A1")
    before = cache_key(case, SETTINGS, {"ironcalc": "0.9.1"})
    workbook({"A1": 2}, name="output.xlsx")
    assert cache_key(case, SETTINGS, {"ironcalc": "0.9.1"}) != before
    assert cache_key(case, SETTINGS, {"ironcalc": "0.9.2"}) != cache_key(case, SETTINGS, {"ironcalc": "0.9.1"})


def test_diff_summarises_the_demo_as_the_study_does():
    from regrade.paired.diff import differing_cells, summary

    records = rescore_run(demo_cases(), SETTINGS)
    overall = summary(records)[-1]
    verdicts = list(expected_verdicts().values())
    assert overall["condition"] == "(all)" and overall["cases"] == 45
    assert overall["failures"] == 33  # value-only failures (see fixtures/demo-run/expected.json)
    assert overall["artifact"] == verdicts.count("artifact") == 18
    assert overall["false_pass"] == verdicts.count("false-pass") == 2
    parts = ("artifact", "genuinely_wrong", "unevaluable", "engines_disagree", "invalid_golden")
    assert sum(overall[p] for p in parts) == overall["formula_failures"]
    # anthropic's 32293 case 1: =XLOOKUP(...) written by openpyxl, Excel's answer 0.56 at B14
    (b14,) = [c for c in differing_cells(records)
              if (c["condition"], c["task_id"], c["case"], c["cell"]) == ("anthropic", "32293", 1, "Sheet1!B14")]
    assert (b14["shallow"], b14["golden"], b14["reason"], b14["engines"]) == (None, 0.56, "uncached-formula", "ironcalc=0.56")


def die_on_doomed_output(case):
    """Stands in for regrade.run.job.grade in a pool: the worker process itself dies on one case."""
    import os

    from regrade.run import job

    if str(case.output_path) == os.environ["REGRADE_TEST_DOOMED"]:
        os._exit(1)
    return job.rescore_case_grading(case)


def test_a_worker_that_dies_costs_only_its_own_case(monkeypatch):
    from regrade.run import job

    cases = demo_cases()[:6]
    monkeypatch.setenv("REGRADE_TEST_DOOMED", str(cases[3].output_path))
    monkeypatch.setattr(job, "grade", die_on_doomed_output)
    monkeypatch.setattr(job, "grade_or_later", die_on_doomed_output)  # a case's first try
    records = rescore_run(cases, SETTINGS, workers=2)
    monkeypatch.undo()
    verdicts = [(r.verdict, r.reasons) for r in records]
    assert verdicts[3] == ("unevaluable", ["crashed"])
    alone = [(r.verdict, r.reasons) for r in rescore_run(cases, SETTINGS)]
    assert verdicts[:3] + verdicts[4:] == alone[:3] + alone[4:]


def stall_on_doomed_output(case):
    """Stands in for regrade.run.job.grade in a pool: one case stalls for two minutes, then leaves a mark."""
    import os
    import time
    from pathlib import Path

    from regrade.run import job

    if str(case.output_path) == os.environ["REGRADE_TEST_DOOMED"]:
        time.sleep(120)
        Path(os.environ["REGRADE_TEST_MARK"]).touch()
    return job.rescore_case_grading(case)


def test_a_ctrl_c_of_the_run_alone_stops_its_busy_workers_and_leaves_no_process(monkeypatch, tmp_path):
    """A SIGINT to the run's process only (kill -INT PID, not a terminal's Ctrl-C to the whole
    group): the run stops its workers, the stalled one mid-case, and raises KeyboardInterrupt
    with what it finished recorded."""
    import multiprocessing
    import os
    import signal

    from regrade.run import job
    from regrade.run.rescore import longest_first

    cases = demo_cases()[:6]
    doomed = longest_first(cases, range(len(cases)))[0]  # the first sent to a worker
    monkeypatch.setenv("REGRADE_TEST_DOOMED", str(cases[doomed].output_path))
    monkeypatch.setenv("REGRADE_TEST_MARK", str(tmp_path / "stalled case finished"))
    monkeypatch.setattr(job, "grade", stall_on_doomed_output)
    monkeypatch.setattr(job, "grade_or_later", stall_on_doomed_output)  # a case's first try
    finished: list[int] = []
    before = set(multiprocessing.active_children())  # engine workers earlier tests left in this process

    def on_record(index, record, cached):
        finished.append(index)
        if len(finished) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even where the
    try:                                                                   # suite runs with Ctrl-C ignored (&)
        with pytest.raises(KeyboardInterrupt):
            rescore_run(cases, SETTINGS, workers=2, on_record=on_record)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(finished) == 2 and doomed not in finished
    assert set(multiprocessing.active_children()) <= before  # no case worker, nor anything it started
    assert not (tmp_path / "stalled case finished").exists()  # stopped mid-case, not waited for


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_cases_that_need_no_engine_are_graded_while_the_engines_start(tmp_path):
    """A Ctrl-C in the first seconds keeps work: the engines start in the background, and a case
    that needs them waits until the cases that need none are graded (and cached)."""
    import openpyxl

    from regrade.runs.cases import Case
    from tests.conftest import demo_task_dataset, require_engines

    require_engines("libreoffice")  # soffice takes seconds to start: the formula case comes back later
    data = demo_task_dataset(tmp_path / "data", "59511")
    golden = data / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    formulas, constants = tmp_path / "formulas.xlsx", tmp_path / "constants.xlsx"
    openpyxl.load_workbook(golden).save(formulas)  # its answer formulas without cached values
    openpyxl.load_workbook(golden, data_only=True).save(constants)  # Excel's values as constants
    cases = [Case(condition=name, task_id="59511", case=1, output_path=path, answer_path=golden,
                  answer_position="F2:F6") for name, path in (("formulas", formulas), ("constants", constants))]
    finished: list[str] = []
    settings = RescoreSettings("spreadsheetbench", "cached", ("libreoffice",), 60.0)
    records = rescore_run(cases, settings, workers=1, on_record=lambda i, record, cached: finished.append(
        record.condition))
    assert finished == ["constants", "formulas"]  # in the order they were done ...
    assert [r.condition for r in records] == ["formulas", "constants"]  # ... and the records in case order
    assert [r.verdict for r in records] == ["artifact", "confirmed-pass"]  # Excel's values, computed or kept
