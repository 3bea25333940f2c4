"""The command line: exact output of each command, help, and error exit codes."""

import json
import shutil

import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.results.provenance import sha256_file
from tests.conftest import DEMO, require_engines

ALL_FULL = ("ironcalc", "libreoffice", "gnumeric")

GOLDEN = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"


@pytest.fixture
def manifest(tmp_path):
    """Two conditions of task 59511 case 1: an Excel-written answer and a stale cache."""
    for condition in ("none", "community"):
        (tmp_path / condition).mkdir()
        shutil.copyfile(DEMO / "outputs" / condition / "1_59511_output.xlsx", tmp_path / condition / "out.xlsx")
    shutil.copyfile(GOLDEN, tmp_path / "answer.xlsx")
    rows = [{"stack": "s", "benchmark": "b", "condition": c, "task_id": "59511", "case": 1,
             "output_path": f"{c}/out.xlsx", "answer_path": "answer.xlsx", "answer_position": "F2:F6"}
            for c in ("none", "community")]
    path = tmp_path / "manifest.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_grade_prints_one_json_line_per_case(manifest):
    result = invoke("grade", "--values", "ironcalc", "--manifest", manifest)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [
        {"stack": "s", "benchmark": "b", "condition": "none", "task_id": "59511", "case": 1, "trial": 1,
         "engine": "ironcalc", "policy": "spreadsheetbench", "passed": True, "reason": None, "message": "", "cells": []},
        {"stack": "s", "benchmark": "b", "condition": "community", "task_id": "59511", "case": 1, "trial": 1,
         "engine": "ironcalc", "policy": "spreadsheetbench", "passed": False, "reason": "wrong-value",
         "message": "2 of 5 graded cells differ from the golden",
         # ROUND(300/1000) = 0 and ROUND(7200/1000) = 7, where the golden's ROUNDUP gives 1 and 8
         "cells": [{"cell": "Sheet1!F2", "golden": 1, "value": 0.0}, {"cell": "Sheet1!F5", "golden": 8, "value": 7.0}]},
    ]


def test_grade_with_cached_values_passes_the_stale_cache(manifest):
    result = invoke("grade", "--values", "cached", "--manifest", manifest)
    assert [json.loads(line)["passed"] for line in result.stdout.splitlines()] == [True, True]


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_rescore_writes_provenance_then_cases_and_prints_verdict_counts(manifest, tmp_path):
    require_engines(*ALL_FULL)
    out = tmp_path / "results.jsonl"
    result = invoke("rescore", "--manifest", manifest, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "verdict           cases\n"
        "----------------  -----\n"
        "confirmed-pass        1\n"
        "confirmed-fail        0\n"
        "artifact              0\n"
        "false-pass            1\n"
        "engines-disagree      0\n"
        "unevaluable           0\n"
        "invalid-golden        0\n"
        "missing-output        0\n"
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    provenance, none, community = records
    assert provenance["record"] == "provenance" and provenance["format_version"] == 1
    assert provenance["settings"]["policy"] == "spreadsheetbench"
    assert set(provenance["engines"]) == {"cached", "ironcalc", "libreoffice", "formulon"}  # the default consensus
    assert str(manifest) in provenance["inputs"]
    assert len(provenance["inputs"]) == 4 and all(len(d) == 64 for d in provenance["inputs"].values())
    assert (none["verdict"], community["verdict"], community["reasons"]) == ("confirmed-pass", "false-pass", ["stale-cache"])
    # ROUND(300/1000, 0) is 0 in every engine; the stale cache says 1
    assert community["cells"][0] == {"cell": "Sheet1!F2", "formula": "=ROUND(E2/1000,0)", "golden": 1, "shallow": 1,
                                     "full": 0.0, "reason": "stale-cache",
                                     "engines": {"ironcalc": 0.0, "libreoffice": 0.0, "formulon": 0.0},
                                     "decided_by": 3}


def test_table_before_and_after(manifest, tmp_path):
    out = tmp_path / "results.jsonl"
    invoke("rescore", "--manifest", manifest, "-o", out, "--engines", "ironcalc")
    result = invoke("table", out)
    assert result.exit_code == 0, result.output
    # one task: the baseline passes; community passes originally (the stale cache) and fails regraded.
    # Newcombe for n = 1 (z = 1.96; Wilson limits of 0/1 are (0, 0.7935), of 1/1 (0.2065, 1); phi = 0):
    # no change: +-sqrt(0.7935^2) = +-0.793; one regression: -1 + sqrt(2 * 0.7935^2) = 0.122.
    # McNemar: no discordant pair p = 1; one regression p = 1.
    assert result.stdout == (
        "stack  benchmark  condition  grading   n  pass_rate_baseline  pass_rate_treatment  gains  regressions  retained  residual  net  delta   ci_lower  ci_upper  p_value  p_adjusted\n"
        "-----  ---------  ---------  --------  -  ------------------  -------------------  -----  -----------  --------  --------  ---  ------  --------  --------  -------  ----------\n"
        "s      b          community  original  1               1.000                1.000      0            0         1         0    0   0.000    -0.793     0.793    1.000       1.000\n"
        "s      b          community  regraded  1               1.000                0.000      0            1         0         0   -1  -1.000    -1.000     0.122    1.000       1.000\n"
        "\n"
        "p_value: exact McNemar test; p_adjusted: bonferroni over a family of 1 comparisons per grading; "
        "interval: newcombe, 95%\n"
        "gradings: original is the value-only grade (the benchmark's grader reading the cached values, as regrade "
        "reproduces it; the run carries no grades of its own); regraded is recomputed by full engines where they could "
        "decide\n"
        "original: 0 gains, 0 regressions, - of gains offset\n"
        "regraded: 0 gains, 1 regressions, - of gains offset\n"
        "regrading changed community: gains +0, regressions +1, retained -1, residual +0, net -1\n"
        "1 tasks changed transition when regraded:\n"
        "  community task 59511: retained -> regression\n"
        "no refusal slice: these success rates carry no abstention figures; no locked protocol\n"
    )
    csv_lines = invoke("table", out, "--format", "csv").stdout.splitlines()
    assert csv_lines[0].startswith("stack,benchmark,condition,grading,n,pass_rate_baseline,pass_rate_treatment,gains,"
                                   "regressions,retained,residual,net,delta,ci_lower,ci_upper,p_value,p_adjusted,")
    assert csv_lines[2].startswith("s,b,community,regraded,1,1.0,0.0,0,1,0,0,-1,-1.0,")
    markdown = invoke("table", out, "--format", "markdown").stdout.splitlines()
    assert markdown[0].startswith("| Condition | Grading | N |") and markdown[1].startswith("|---|---|---:|")
    assert markdown[-1].startswith("*Note.* s / b, each condition against the baseline none.")
    assert invoke("table", out, "--format", "latex").stdout.splitlines()[:4] == [
        "\\begin{table}", "\\centering", "\\caption{s / b, each condition against the baseline none. Original: the "
        "value-only grade (the benchmark's grader reading the cached values, as regrade reproduces it; the run carries "
        "no grades of its own); regraded: recomputed by full engines where they could decide. Rates, $\\Delta$ and interval "
        "in fractions. $\\Delta$ is the change of pass rate, treatment minus baseline, over the N paired tasks, with its "
        "95\\% Newcombe hybrid score interval (method 10); p: the two-sided exact McNemar test on the discordant tasks; "
        "adjusted p: Bonferroni over a family of 1 comparisons per grading. No refusal slice: these success rates "
        "carry no abstention figures; no locked protocol.}", "\\begin{tabular}{llrrrrrrrrrr}"]
    payload = json.loads(invoke("table", out, "--format", "json").stdout)
    assert payload["format_version"] == 1 and payload["provenance"]["record"] == "provenance"
    assert payload["rows"][1]["regressions"] == 1


def fingerprints(folder):
    return {p: (sha256_file(p), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_demo_prints_verdicts_table_and_artifact_count():
    require_engines(*ALL_FULL)
    before = fingerprints(DEMO)
    result = invoke("demo")
    assert fingerprints(DEMO) == before  # no input file changes, not even its mtime
    assert result.exit_code == 0, result.output
    # the verdicts of fixtures/demo-run/expected.json, worked out by hand in fixtures/make_demo.py:
    # none: 6 confirmed-pass, 9 confirmed-fail; anthropic: 15 artifact;
    # community: 4 confirmed-pass, 3 artifact, 2 false-pass, 6 confirmed-fail.
    # Value-only failures: 15 confirmed-fail + 18 artifact = 33.
    # Tasks (all cases must pass): none passes 34469 and 59511; anthropic regraded passes all five
    # (3 gains, 2 retained); community regraded gains 32293 and loses 59511 (false passes).
    assert result.stdout == (
        "verdict           cases\n"
        "----------------  -----\n"
        "confirmed-pass       10\n"
        "confirmed-fail       15\n"
        "artifact             18\n"
        "false-pass            2\n"
        "engines-disagree      0\n"
        "unevaluable           0\n"
        "invalid-golden        0\n"
        "missing-output        0\n"
        "\n"
        "stack       benchmark         condition  grading   n  pass_rate_baseline  pass_rate_treatment  gains  regressions  retained  residual  net  delta   ci_lower  ci_upper  p_value  p_adjusted\n"
        "----------  ----------------  ---------  --------  -  ------------------  -------------------  -----  -----------  --------  --------  ---  ------  --------  --------  -------  ----------\n"
        "demo-agent  spreadsheetbench  anthropic  original  5               0.400                0.000      0            2         0         3   -2  -0.400    -0.769     0.118    0.500       1.000\n"
        "demo-agent  spreadsheetbench  community  original  5               0.400                0.400      0            0         2         3    0   0.000    -0.307     0.307    1.000       1.000\n"
        "demo-agent  spreadsheetbench  anthropic  regraded  5               0.400                1.000      3            0         2         0    3   0.600     0.030     0.882    0.250       0.500\n"
        "demo-agent  spreadsheetbench  community  regraded  5               0.400                0.400      1            1         1         2    0   0.000    -0.465     0.465    1.000       1.000\n"
        "no refusal slice: these success rates carry no abstention figures; no locked protocol\n"
        "\n"
        "18 of 33 value-only failures were grader artifacts (correct when recomputed).\n"
    )
    # the scratch results file is deleted when the demo ends: it is not named as if kept
    assert "graded 45 cases (pass -o FILE to keep the results)" in result.stderr and "wrote " not in result.stderr


def test_errors_are_short_messages_with_exit_status_1(tmp_path):
    result = invoke("table", tmp_path / "nope.jsonl")
    assert result.exit_code == 1
    assert result.stderr == f"Error: results file {tmp_path / 'nope.jsonl'} does not exist\n"


def test_usage_errors_exit_2():
    result = invoke("grade")
    assert result.exit_code == 2
    assert "give either --dataset (with --condition NAME=OUTDIR, --runs DIR or --harbor JOB_DIR) or --manifest" in result.stderr


SUBCOMMANDS = [(name, sub) for name, command in main.commands.items() for sub in getattr(command, "commands", {})]


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help_with_an_example(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout and f"regrade {command}" in result.stdout


@pytest.mark.parametrize("group, command", SUBCOMMANDS)
def test_every_subcommand_has_help_with_an_example(group, command):
    result = invoke(group, command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout and f"regrade {group} {command}" in result.stdout


def test_top_level_help_says_what_regrade_does():
    assert "find which spreadsheet-benchmark failures are real" in invoke("--help").stdout


def test_engines_lists_every_engine_with_its_availability():
    require_engines(*ALL_FULL)
    rows = json.loads(invoke("engines", "--format", "json").stdout)["rows"]
    assert [(r["name"], r["full"], r["available"], r["why_not"]) for r in rows] == [
        ("cached", False, True, None), ("ironcalc", True, True, None),
        ("libreoffice", True, True, None), ("formulon", True, True, None), ("gnumeric", True, True, None),
        ("formulas", True, True, None), ("pycel", True, True, None)]
    assert rows[1]["version"] == "ironcalc 0.9.1" and rows[2]["version"].startswith("LibreOffice 2")  # 25.2 from bookworm-backports (.ci/setup)


def test_results_file_gets_ordinary_permissions(manifest, tmp_path):
    import os
    import stat

    out = tmp_path / "results.jsonl"
    invoke("rescore", "--manifest", manifest, "-o", out, "--engines", "ironcalc")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    assert not list(tmp_path.glob("*.partial"))  # nothing left behind


def test_diff_prints_the_summary_and_every_differing_cell(tmp_path):
    results = tmp_path / "demo.jsonl"
    assert invoke("demo", "--engines", "ironcalc", "-o", results).exit_code == 0
    summary = invoke("diff", results)
    assert summary.exit_code == 0, summary.output
    assert ("overall: Of 24 formula-bearing failures (33 failures in 45 cases), 18 were already correct (artifact), "
            "6 genuinely wrong, 0 unevaluable") in summary.stdout
    cells = invoke("diff", results, "--cells", "--format", "csv")
    assert cells.exit_code == 0, cells.output
    header, *rows = cells.stdout.splitlines()
    assert header == "stack,benchmark,condition,task_id,case,cell,formula,shallow,engines,golden,reason"
    assert "demo-agent,spreadsheetbench,anthropic,32293,1,Sheet1!B14,\"=_xlfn.XLOOKUP(A14,$A$1:$A$4,$B$1:$B$4)\",,ironcalc=0.56,0.56,uncached-formula" in rows
    assert invoke("diff", tmp_path / "missing.jsonl").exit_code == 1


@pytest.mark.parametrize("chosen, parser", [(None, "expat"), ("True", "defusedxml")])
def test_the_command_lets_openpyxl_parse_screened_workbooks_with_the_c_parser(chosen, parser):
    import os
    import subprocess
    import sys

    # Which parser the regrade command's own openpyxl reads with; a user's explicit choice stands.
    probe = ("import regrade.cli, openpyxl.worksheet._reader as reader; "
             "print('defusedxml' if reader.iterparse.__module__.startswith('defusedxml') else 'expat')")
    environment = {k: v for k, v in os.environ.items() if k != "OPENPYXL_DEFUSEDXML"}
    if chosen is not None:
        environment["OPENPYXL_DEFUSEDXML"] = chosen
    done = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == parser
