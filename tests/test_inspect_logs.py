"""inspect_ai logs as outcomes for `regrade table`, on logs inspect_ai itself writes (its mockllm model).

The solver answers from each sample's metadata and never calls the model, so no network is needed;
the scorer is inspect_ai's own `includes` (C or I) or a custom one (numbers, booleans).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.runs.inspect_logs import read_inspect_log, score_passes

inspect_ai = pytest.importorskip("inspect_ai", reason="inspect-ai is a test dependency: pip install -e '.[test]'")

# what each condition answers per sample; the target is "4" for 59511, "5" for 32293, "6" for 7
ANSWERS = {"none": {"59511": "4", "32293": "0", "7": "6"},  # passes 59511 and 7
           "skills": {"59511": "4", "32293": "5", "7": "0"}}  # passes 59511 and 32293
TARGETS = {"59511": "4", "32293": "5", "7": "6"}


def write_logs(folder: Path, condition: str, log_format: str, scorer=None, broken: str | None = None,
               model: str = "mockllm/model", fail_on_error: bool = False) -> Path:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import includes
    from inspect_ai.solver import solver

    @solver
    def answer_from_metadata():
        async def solve(state, generate):
            if broken in (str(state.sample_id), "all"):
                raise RuntimeError("this sample's agent crashed")
            state.output = ModelOutput.from_content(model, state.metadata["answer"])
            return state
        return solve

    samples = [Sample(id=int(i) if i == "32293" else i, input="q", target=t, metadata={"answer": ANSWERS[condition][i]})
               for i, t in TARGETS.items()]
    task = Task(dataset=samples, solver=answer_from_metadata(), scorer=scorer or includes(), epochs=2,
                name="spreadsheets")
    [log] = eval(task, model=model, log_dir=str(folder / condition), log_format=log_format, display="none",
                 fail_on_error=fail_on_error)
    return Path(log.location)


def table(*sources) -> dict:
    result = CliRunner().invoke(main, ["table", *map(str, sources), "--format", "json"])
    assert result.exit_code == 0, result.output
    return {"rows": json.loads(result.stdout)["rows"], "stderr": result.stderr}


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_inspect_logs_of_two_conditions_make_a_paired_table(tmp_path, log_format):
    none, skills = (write_logs(tmp_path, c, log_format) for c in ("none", "skills"))
    if log_format == "eval":  # inspect_ai compresses members with zstd (zip method 93)
        assert {i.compress_type for i in zipfile.ZipFile(none).infolist()} == {93}
    out = table(f"none={none}", f"skills={skills}")
    [row] = out["rows"]
    # by hand: 59511 pass -> pass (retained), 32293 fail -> pass (gain), 7 pass -> fail (regression)
    assert (row["gains"], row["regressions"], row["retained"], row["residual"], row["n"]) == (1, 1, 1, 0, 3)
    assert (row["stack"], row["benchmark"], row["grading"]) == ("mockllm/model", "spreadsheets", "original")
    assert (row["trials_baseline"], row["trials_treatment"]) == (2, 2)  # epochs are trials
    assert row["pass_rate_baseline"] == pytest.approx(2 / 3)
    assert out["stderr"] == ""


def test_a_folder_of_logs_and_an_unscored_sample_is_said(tmp_path):
    write_logs(tmp_path, "none", "eval")
    skills = write_logs(tmp_path, "skills", "eval", broken="32293")
    log = read_inspect_log(skills, "skills")
    assert sorted(log.unscored) == ["32293 epoch 1", "32293 epoch 2"] and len(log.outcomes) == 4
    out = table(f"none={tmp_path / 'none'}", f"skills={skills}")
    assert "2 samples have no score (they errored or were not scored) and are left out" in out["stderr"]
    assert "1 tasks are in only one of it and none" in out["stderr"]
    [row] = out["rows"]
    assert row["n"] == 2  # 32293 has no outcome under skills: unpaired, not a fail


def test_numeric_and_boolean_scores_and_a_choice_of_scorer(tmp_path):
    from inspect_ai.scorer import Score, accuracy, scorer

    @scorer(metrics=[accuracy()])
    def exact_number():
        async def score(state, target):
            return Score(value=1.0 if state.output.completion == target.text else 0.0)
        return score

    @scorer(metrics=[accuracy()])
    def exact_bool():
        async def score(state, target):
            return Score(value=state.output.completion == target.text)
        return score

    none = write_logs(tmp_path, "none", "eval", scorer=[exact_number(), exact_bool()])
    skills = write_logs(tmp_path, "skills", "json", scorer=[exact_number(), exact_bool()])
    result = CliRunner().invoke(main, ["table", f"none={none}", f"skills={skills}"])
    assert result.exit_code == 1 and "several scorers (exact_bool, exact_number): choose one with --scorer" in result.stderr
    by_number = table(f"none={none}", f"skills={skills}", "--scorer", "exact_number")["rows"][0]
    by_bool = table(f"none={none}", f"skills={skills}", "--scorer", "exact_bool")["rows"][0]
    assert (by_number["gains"], by_number["regressions"]) == (by_bool["gains"], by_bool["regressions"]) == (1, 1)


def test_score_values():
    assert [score_passes(v) for v in ("C", "I", "P", "N", True, False, 1, 1.0, 0.5, 0)] == \
        [True, False, False, False, True, False, True, True, False, False]
    with pytest.raises(ValueError, match="not a pass or a fail"):
        score_passes({"a": 1})


def test_a_log_without_a_condition_name_is_a_one_line_error(tmp_path):
    none = write_logs(tmp_path, "none", "eval")
    result = CliRunner().invoke(main, ["table", str(none)])
    assert result.exit_code == 1
    assert "which condition is this log? Name it: NAME=" in result.stderr and result.stderr.count("\n") == 1


def test_a_broken_eval_log_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.eval"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("header.json", "{not json")
    result = CliRunner().invoke(main, ["table", f"none={bad}"])
    assert result.exit_code == 1 and "holds a member that is not JSON" in result.stderr
    unknown = tmp_path / "unknown.eval"
    with zipfile.ZipFile(unknown, "w") as archive:
        archive.writestr("header.json", "{}")
    raw = bytearray(unknown.read_bytes())  # mark the member with a compression method no reader here has (99)
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = raw.find(signature)
        raw[at + offset:at + offset + 2] = (99).to_bytes(2, "little")
    unknown.write_bytes(bytes(raw))
    result = CliRunner().invoke(main, ["table", f"none={unknown}"])
    assert result.exit_code == 1 and "cannot be read as an .eval log" in result.stderr, result.output


def test_a_dict_valued_score_is_read_by_scorer_and_key(tmp_path):
    from inspect_ai.scorer import Score, mean, scorer

    @scorer(metrics={"passed": [mean()], "cells": [mean()]})
    def workbook():
        async def score(state, target):
            right = state.output.completion == target.text
            return Score(value={"passed": "C" if right else "I", "cells": 1.0 if right else 0.5})
        return score

    none = write_logs(tmp_path, "none", "eval", scorer=workbook())
    skills = write_logs(tmp_path, "skills", "json", scorer=workbook())
    asked = CliRunner().invoke(main, ["table", f"none={none}", f"skills={skills}"])
    assert asked.exit_code == 1 and "gives several values (passed, cells): choose one with --scorer workbook.KEY" \
        in asked.stderr
    [row] = table(f"none={none}", f"skills={skills}", "--scorer", "workbook.passed")["rows"]
    assert (row["gains"], row["regressions"], row["retained"]) == (1, 1, 1)  # as by hand above
    missing = CliRunner().invoke(main, ["table", f"none={none}", f"skills={skills}", "--scorer", "workbook.rows"])
    assert missing.exit_code == 1 and "has no value 'rows' (its values: passed, cells)" in missing.stderr


def test_one_run_saved_as_eval_and_as_json_names_both_files(tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    none = write_logs(tmp_path, "none", "eval")
    copy = none.with_suffix(".json")
    write_eval_log(read_eval_log(str(none)), str(copy), format="json")  # inspect_ai's own conversion
    result = CliRunner().invoke(main, ["table", f"none={tmp_path / 'none'}"])
    assert result.exit_code == 1
    assert f"in two of them ({none} and {copy})" in result.stderr or f"in two of them ({copy} and {none})" in result.stderr
    assert "the same run saved as .eval and as .json is one run" in result.stderr


def test_a_run_that_failed_is_said_to_have_failed(tmp_path):
    failed = write_logs(tmp_path, "none", "eval", broken="all", fail_on_error=True)
    result = CliRunner().invoke(main, ["table", f"none={failed}"])
    assert result.exit_code == 1
    assert "the run failed (status error" in result.stderr and "none of its samples were scored" in result.stderr


def test_logs_of_two_models_are_not_paired_silently_and_pair_under_one_stack(tmp_path):
    none = write_logs(tmp_path, "none", "eval", model="mockllm/first")
    skills = write_logs(tmp_path, "skills", "eval", model="mockllm/second")
    apart = CliRunner().invoke(main, ["table", f"none={none}", f"skills={skills}", "--format", "json"])
    assert apart.exit_code == 0 and json.loads(apart.stdout)["rows"] == []
    assert "mockllm/second / spreadsheets has no condition none to pair against" in apart.stderr
    assert "--stack NAME" in apart.stderr and "no condition was paired with none" in apart.stderr
    [row] = table(f"none={none}", f"skills={skills}", "--stack", "both")["rows"]
    assert (row["stack"], row["gains"], row["regressions"], row["n"]) == ("both", 1, 1, 3)
