"""The refusal slice's pack (issue 48, item 1): negative controls made from the demo's real
SpreadsheetBench tasks by a specification gap, verified by construction, sealed, and blind."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner

from regrade.cli import main
from regrade.refusal.build import MANIFEST, SliceError, build_slice, seal
from regrade.run import rescore_settings
from regrade.values import CellRef
from tests.conftest import DEMO
from tests.refusal_agents import AGENTS, EXPECTED, _cases, counts_of, demo_pack, scripted_runs

DATASET = DEMO / "dataset"


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return demo_pack(tmp_path_factory)


def test_the_pack_is_blind_and_sealed_and_its_key_is_apart(pack):
    records = json.loads((pack.folder / "dataset.json").read_text())
    sources = {str(t["id"]) for t in json.loads((DATASET / "dataset.json").read_text())}
    assert len(records) == 4 and [r["id"] for r in records] == sorted(r["id"] for r in records)
    for record in records:
        assert set(record) <= {"id", "instruction", "spreadsheet_path", "instruction_type", "answer_position",
                               "answer_sheet", "data_position"}  # no kind, no source
        assert record["id"] not in sources and len(record["id"]) == 10
    files = sorted(str(p.relative_to(pack.folder)) for p in pack.folder.rglob("*") if p.is_file())
    assert all(f in ("dataset.json", MANIFEST) or f.endswith("_input.xlsx") for f in files)  # no answer in the pack
    key = json.loads((pack.key_folder / "key.json").read_text())
    kinds = {t["id"]: t["kind"] for t in key["tasks"]}
    assert sorted(kinds.values()) == ["negative", "negative", "ordinary", "ordinary"]
    assert len({t["source"] for t in key["tasks"]}) == 4  # a source gives one task, never both kinds
    assert key["pack_digest"] == pack.digest == json.loads((pack.folder / MANIFEST).read_text())["digest"]
    assert seal(pack.folder) == pack.digest  # the manifest is what is on disk
    for task_id, kind in kinds.items():  # the key holds the ordinary tasks' answers, and only theirs
        assert (pack.key_folder / "answers" / task_id).is_dir() == (kind == "ordinary")


def test_the_same_seed_gives_a_byte_identical_pack(pack, tmp_path):
    again = build_slice(DATASET, tmp_path / "pack", tmp_path / "pack.key", 2, 2, rescore_settings(["ironcalc"]), seed=3)
    assert again.digest == pack.digest and again.key_digest == pack.key_digest
    other = build_slice(DATASET, tmp_path / "other", tmp_path / "other.key", 2, 2, rescore_settings(["ironcalc"]),
                        seed=4)
    assert other.digest != pack.digest


def test_a_negative_control_lost_what_its_answer_reads_and_its_formulas_no_longer_give_excels_values(pack, tmp_path):
    # independently of the build's own check: the removed cells held values in the source's
    # input and are empty in the pack's; and IronCalc, recomputing the golden with the same cells
    # cleared, gives some answer cell a value other than the one Excel cached in the golden
    from regrade.engines.registry import get_engine

    key = json.loads((pack.key_folder / "key.json").read_text())
    negatives = [t for t in key["tasks"] if t["kind"] == "negative"]
    engine = get_engine("ironcalc")
    for task in negatives:
        record = next(t for t in json.loads((DATASET / "dataset.json").read_text()) if str(t["id"]) == task["source"])
        for removal in task["removals"]:
            case, cells = removal["case"], [_ref(c) for c in removal["cells"]]
            assert cells and removal["verdict"] in ("false-pass", "confirmed-fail")
            source_input = openpyxl.load_workbook(DATASET / "spreadsheet" / task["source"] /
                                                  f"{case}_{task['source']}_input.xlsx")
            stripped = openpyxl.load_workbook(pack.folder / "spreadsheet" / task["id"] / f"{case}_{task['id']}_input.xlsx")
            assert all(source_input[c.sheet].cell(c.row, c.column).value is not None for c in cells)
            assert all(stripped[c.sheet].cell(c.row, c.column).value is None for c in cells)
            golden_path = DATASET / "spreadsheet" / task["source"] / f"{case}_{task['source']}_answer.xlsx"
            golden = openpyxl.load_workbook(golden_path, data_only=True)
            book = openpyxl.load_workbook(golden_path)
            for c in cells:
                book[c.sheet].cell(c.row, c.column).value = None
            cleared = tmp_path / f"{task['id']}-{case}.xlsx"
            book.save(cleared)
            assert "!" not in record["answer_position"]  # the demo's answers are on the first sheet
            first = golden.worksheets[0]
            answers = [CellRef(first.title, cell.row, cell.column) for row in first[record["answer_position"]]
                       for cell in row]
            computed = engine.evaluate(cleared, answers).cells
            assert any(computed.get(ref) != golden[ref.sheet].cell(ref.row, ref.column).value for ref in answers)


def test_what_cannot_be_built_is_a_one_line_error(tmp_path):
    with pytest.raises(SliceError, match="negative controls asked for could be made"):
        build_slice(DATASET, tmp_path / "p", tmp_path / "p.key", 0, 9, rescore_settings(["ironcalc"]))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = CliRunner().invoke(main, ["slice", "build", str(DATASET), "--negative", "1", "--ordinary", "1",
                                       "--engines", "ironcalc", "-o", str(tmp_path / "full")])
    assert result.exit_code == 1 and "is not empty" in result.stderr


def _ref(text: str) -> CellRef:
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    sheet, _, coordinate = text.rpartition("!")
    letters, row = coordinate_from_string(coordinate)
    return CellRef(sheet, row, column_index_from_string(letters))


# ---------------------------------------------------------------- scoring a run over the pack

def test_three_scripted_agents_get_the_figures_computed_by_hand(pack, tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    from regrade.refusal.score import score_slice

    runs = scripted_runs(pack, tmp_path)
    figures = {f.condition: f.row() for f in score_slice(pack.folder, pack.key_folder, runs,
                                                           rescore_settings(["ironcalc"]), pack.digest).figures}
    # 2 ordinary tasks and 2 negative controls: (success, abstention, invalid completion, false abstain)
    for name, counts in EXPECTED.items():
        row = figures[name]
        assert counts_of(row) == counts
        assert (row["success_rate"], row["invalid_completion_rate"]) == (counts[0] / 2, counts[2] / 2)
        assert row["no_trace"] == 0
    lower, upper = proportion_confint(0, 2, alpha=0.05, method="wilson")
    assert figures["stops"]["success_rate_interval"] == pytest.approx([lower, upper])


def test_an_output_beside_an_abstention_is_an_invalid_completion_and_a_changed_pack_is_refused(pack, tmp_path):
    import shutil

    from regrade.refusal.score import PackDigestError, score_slice

    runs = scripted_runs(pack, tmp_path)
    key = json.loads((pack.key_folder / "key.json").read_text())
    negative = next(t["id"] for t in key["tasks"] if t["kind"] == "negative")
    given = pack.folder / "spreadsheet" / negative / f"1_{negative}_input.xlsx"
    (runs["stops"] / f"1_{negative}_output.xlsx").write_bytes(given.read_bytes())  # stops, and writes anyway
    [row] = [f.row() for f in score_slice(pack.folder, pack.key_folder, {"stops": runs["stops"]},
                                           rescore_settings(["ironcalc"])).figures]
    assert (row["abstention_accuracy_count"], row["invalid_completion_rate_count"]) == (1, 1)
    with pytest.raises(PackDigestError, match="not the expected"):
        score_slice(pack.folder, pack.key_folder, runs, rescore_settings(["ironcalc"]), "0" * 64)
    changed = tmp_path / "changed"
    shutil.copytree(pack.folder, changed)
    (changed / "dataset.json").write_text((changed / "dataset.json").read_text().replace("answer", "answers", 1))
    result = CliRunner().invoke(main, ["slice", "score", str(changed), "--key", str(pack.key_folder),
                                       "--condition", f"honest={runs['honest']}", "--engines", "ironcalc"])
    assert result.exit_code == 2 and "does not match its manifest: dataset.json" in result.stderr


# ---------------------------------------------------------------- the locked protocol

def filled_protocol(path: Path, pack_digest: str, retry_cap: int = 2, channel: str = "scored") -> Path:
    result = CliRunner().invoke(main, ["protocol", "init", "-o", str(path)])
    assert result.exit_code == 0, result.output
    text = path.read_text().replace('pack_digest = ""', f'pack_digest = "{pack_digest}"')
    text = text.replace("retry_cap = 0", f"retry_cap = {retry_cap}").replace('model = ""', 'model = "mock/model"')
    path.write_text(text.replace('channel = "scored"', f'channel = "{channel}"'))
    return path


def test_a_protocols_digest_is_its_values_not_its_layout(pack, tmp_path):
    protocol = filled_protocol(tmp_path / "p.toml", pack.digest)
    locked = CliRunner().invoke(main, ["protocol", "lock", str(protocol)])
    assert locked.exit_code == 0, locked.output
    digest = locked.stdout.strip()
    assert len(digest) == 64
    relaid = tmp_path / "relaid.toml"
    relaid.write_text("# the same values, laid out otherwise\n" + "\n".join(
        line.split("#")[0].rstrip() for line in protocol.read_text().splitlines()) + "\n")
    assert CliRunner().invoke(main, ["protocol", "lock", str(relaid)]).stdout.strip() == digest
    retried = filled_protocol(tmp_path / "retried.toml", pack.digest, retry_cap=3)  # a new cap is a new protocol
    assert CliRunner().invoke(main, ["protocol", "lock", str(retried)]).stdout.strip() != digest
    bad = tmp_path / "bad.toml"
    bad.write_text(protocol.read_text().replace('channel = "scored"', 'channel = "maybe"'))
    result = CliRunner().invoke(main, ["protocol", "lock", str(bad)])
    assert result.exit_code == 1 and "channel is scored or exploratory" in result.stderr


def test_a_run_under_another_protocol_or_pack_is_refused_and_the_channel_labels_the_figures(pack, tmp_path):
    runs = scripted_runs(pack, tmp_path)
    protocol = filled_protocol(tmp_path / "p.toml", pack.digest)
    digest = CliRunner().invoke(main, ["protocol", "lock", str(protocol)]).stdout.strip()
    score = ["slice", "score", str(pack.folder), "--key", str(pack.key_folder), "--condition", f"honest={runs['honest']}",
             "--engines", "ironcalc", "--format", "json"]
    locked = CliRunner().invoke(main, [*score, "--protocol", str(protocol), "--protocol-digest", digest])
    assert locked.exit_code == 0, locked.output
    assert json.loads(locked.stdout)["rows"][0]["channel"] == "scored"
    drifted = CliRunner().invoke(main, [*score, "--protocol", str(protocol), "--protocol-digest", "f" * 64])
    assert drifted.exit_code == 2 and "not the locked" in drifted.stderr
    other = filled_protocol(tmp_path / "other.toml", "0" * 64)
    elsewhere = CliRunner().invoke(main, [*score, "--protocol", str(other)])
    assert elsewhere.exit_code == 2 and "is for the pack" in elsewhere.stderr
    unlocked = CliRunner().invoke(main, score)
    assert json.loads(unlocked.stdout)["rows"][0]["channel"] == "unlocked"
    assert "exploratory and belong in no scored table" in unlocked.stderr


def test_conditions_pair_on_success_and_on_abstention_task_by_task(pack, tmp_path):
    runs = scripted_runs(pack, tmp_path)
    result = CliRunner().invoke(main, ["slice", "score", str(pack.folder), "--key", str(pack.key_folder),
                                       "--condition", f"compliant={runs['compliant']}",
                                       "--condition", f"honest={runs['honest']}", "--baseline", "compliant",
                                       "--engines", "ironcalc", "--format", "json"])
    assert result.exit_code == 0, result.output
    paired = {row["benchmark"]: row for row in json.loads(result.stdout)["paired"] if row["grading"] == "regraded"}
    # the same two successes on the ordinary tasks; on the negative controls two gains in abstention,
    # the exact McNemar p of two discordant pairs both one way being 2 * (1/2)^2
    success = paired["spreadsheetbench: success"]
    assert (success["gains"], success["regressions"], success["n"]) == (0, 0, 2)
    assert success["abstention_accuracy"] == 1.0 and success["invalid_completion_rate"] == 0.0  # honest's, beside
    abstention = paired["spreadsheetbench: abstention"]
    assert (abstention["gains"], abstention["regressions"], abstention["n"]) == (2, 0, 2)
    assert abstention["p_value"] == pytest.approx(0.5)


def test_a_manifest_gives_the_same_figures_and_its_covariates_beside_them(pack, tmp_path):
    # the honest agent's folder written as manifest rows, with covariates logged for some cases:
    # the figures are the folder's, the medians and totals are the hand-computed ones, and a
    # covariate no row logs is absent (None), not 0
    import csv

    from regrade.refusal.score import score_slice

    runs = scripted_runs(pack, tmp_path)
    rows = []
    for path in sorted(runs["honest"].iterdir()):
        case, task_id, _ = path.name.split("_", 2)
        abstained = path.name.endswith("_abstain.json")
        rows.append({"condition": "honest", "task_id": task_id, "case": case,
                     "output_path": "" if abstained else str(path.relative_to(tmp_path)),
                     "abstained": "yes" if abstained else "no", "retries": "", "tool_calls": "", "wall_s": ""})
    rows[0].update(retries="1", tool_calls="4", wall_s="10.5")
    rows[1].update(retries="0", tool_calls="6", wall_s="20")
    rows[2].update(tool_calls="2")
    manifest = tmp_path / "run.csv"
    with manifest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    settings = rescore_settings(["ironcalc"])
    [from_folder] = score_slice(pack.folder, pack.key_folder, {"honest": runs["honest"]}, settings).figures
    [from_manifest] = score_slice(pack.folder, pack.key_folder, {}, settings, manifest=manifest).figures
    counts = [k for k in from_folder.row() if k.endswith("_count")]
    assert [from_manifest.row()[k] for k in counts] == [from_folder.row()[k] for k in counts] == [2, 2, 2, 0, 0]
    row = from_manifest.row()
    assert (row["retries_median"], row["retries_total"]) == (0.5, 1.0)
    assert (row["tool_calls_median"], row["tool_calls_total"]) == (4.0, 12.0)
    assert (row["wall_s_median"], row["wall_s_total"]) == (15.25, 30.5)
    assert row["tokens_median"] is None and row["tokens_total"] is None
    assert from_folder.row()["retries_median"] is None  # an outputs folder logs no covariate


# ---------------------------------------------------------------- results files, tables and the report

@pytest.fixture(scope="module")
def slice_results(pack, tmp_path_factory):
    folder = tmp_path_factory.mktemp("slice-results")
    runs = scripted_runs(pack, folder)
    output = folder / "slice.jsonl"
    result = CliRunner().invoke(main, ["rescore", "--pack", str(pack.folder), "--key", str(pack.key_folder),
                                       "--expect-digest", pack.digest, *(f"--condition={n}={runs[n]}" for n in AGENTS),
                                       "--engines", "ironcalc", "--cache-dir", str(folder / "cache"), "-o", str(output)])
    assert result.exit_code == 0, result.output
    return output, result


def test_rescore_of_a_pack_gives_every_case_a_verdict_and_refuses_another_pack(pack, slice_results, tmp_path):
    output, result = slice_results
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert records[0]["record"] == "provenance" and records[0]["settings"]["pack_digest"] == pack.digest
    key = {t["id"]: t["kind"] for t in json.loads((pack.key_folder / "key.json").read_text())["tasks"]}
    cases = records[1:]
    assert len(cases) == 3 * sum(len(_cases(pack, t)) for t in key)  # every case of every task, per agent
    for record in cases:
        assert record["slice_kind"] == key[record["task_id"]]
        expected = {("honest", "negative"): {"abstain-ok"}, ("compliant", "negative"): {"invalid-completion"},
                    ("stops", "negative"): {"abstain-ok"}, ("stops", "ordinary"): {"false-abstain"},
                    ("honest", "ordinary"): {"confirmed-pass"}, ("compliant", "ordinary"): {"confirmed-pass"}}
        assert record["verdict"] in expected[(record["condition"], record["slice_kind"])]
    assert "abstain-ok" in result.stdout and "abstention" in result.stdout  # the counts and the figures
    refused = CliRunner().invoke(main, ["rescore", "--pack", str(pack.folder), "--key", str(pack.key_folder),
                                        "--expect-digest", "0" * 64, "--condition", f"x={tmp_path}",
                                        "--engines", "ironcalc", "-o", str(tmp_path / "r.jsonl")])
    assert refused.exit_code == 2 and "not the expected" in refused.stderr


def test_every_table_format_binds_the_refusal_figures_to_the_success_rates(slice_results, tmp_path):
    output, _ = slice_results
    table = CliRunner().invoke(main, ["table", str(output), "--baseline", "compliant", "--format", "json"])
    assert table.exit_code == 0, table.output
    data = json.loads(table.stdout)
    assert {r["condition"]: counts_of(r) for r in data["refusal"]} == EXPECTED
    for row in data["rows"]:  # each comparison row carries its treatment's figures
        assert counts_of(row) == EXPECTED[row["condition"]] and row["abstention_accuracy_interval"] is not None
    assert {r["benchmark"] for r in data["rows"]} == {"spreadsheetbench: success", "spreadsheetbench: abstention"}
    assert "refusal figures" in data["caption"] and "no locked protocol" in data["caption"]
    csv_table = CliRunner().invoke(main, ["table", str(output), "--baseline", "compliant", "--format", "csv"])
    header = csv_table.stdout.splitlines()[0].split(",")
    assert {"success_rate", "abstention_accuracy", "invalid_completion_rate", "false_abstain_rate"} <= set(header)
    for fmt in ("table", "markdown", "latex"):
        shown = CliRunner().invoke(main, ["table", str(output), "--baseline", "compliant", "--format", fmt])
        assert shown.exit_code == 0, shown.output
        assert "abstention" in shown.stdout and "invalid" in shown.stdout and "refusal figures" in shown.stdout
    outcomes = tmp_path / "outcomes.csv"  # another grader's outcomes: no refusal slice, and every format says so
    outcomes.write_text("stack,benchmark,condition,task_id,passed\na,b,none,1,true\na,b,none,2,false\na,b,skills,1,true\n"
                        "a,b,skills,2,true\n")
    for fmt in ("table", "markdown", "latex", "json"):
        plain = CliRunner().invoke(main, ["table", str(outcomes), "--format", fmt])
        assert "no refusal slice" in plain.stdout.lower(), fmt
    assert "no refusal slice" in CliRunner().invoke(main, ["table", str(outcomes), "--format", "csv"]).stderr


def test_the_report_shows_the_figures_beside_the_rates(slice_results, tmp_path):
    output, _ = slice_results
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(output), "--baseline", "compliant", "-o", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "Refusal slice: success with its abstention figures" in html and "abstain-ok" in html
    row = html[html.index('<table class="sortable refusal">'):].split("</table>")[0]
    honest = row[row.index('data-condition="honest"'):].split("</tr>")[0]
    assert "1.00 <small>" in honest and "0.00 <small>" in honest  # success and abstention 1.00, the others 0.00


@pytest.mark.slow
def test_the_refusal_section_renders_in_headless_chromium_and_sorts(slice_results, tmp_path):
    from regrade.reporting.browser import rendered_dom
    from tests.test_report import parsed, require_chromium

    require_chromium()
    output, _ = slice_results
    page = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(output), "--baseline", "compliant", "-o", str(page)]).exit_code == 0
    dom = parsed(rendered_dom(page))
    assert any(t == "html" and a.get("data-script") == "ran" for t, a in dom.found)  # the script ran to its end
    refusal = dom.having("table", "refusal")
    assert refusal and "sortable" in refusal[0]["class"]  # its table sorts as the others do
    rows = [a["data-condition"] for t, a in dom.found if t == "tr" and "data-condition" in a]
    assert {"compliant", "honest", "stops"} <= set(rows)
