"""Loading runs: SpreadsheetBench layout (and Verified naming) and manifests."""

import json
import shutil

import pytest

from regrade.runs.cases import RunError, find_output, manifest_cases, spreadsheetbench_cases


@pytest.fixture
def dataset(tmp_path, workbook):
    root = tmp_path / "data"
    (root / "spreadsheet" / "7").mkdir(parents=True)
    (root / "spreadsheet" / "v-1").mkdir(parents=True)
    records = [{"id": 7, "answer_position": "A1", "instruction_type": "Cell-Level Manipulation"},
               {"id": "v-1", "answer_position": "B2", "answer_sheet": "Out", "instruction_type": "Sheet-Level Manipulation"}]
    (root / "dataset.json").write_text(json.dumps(records))
    golden = workbook({"A1": 1})
    for name in ("1_7_answer.xlsx", "2_7_answer .xlsx"):
        shutil.copyfile(golden, root / "spreadsheet" / "7" / name)
    shutil.copyfile(golden, root / "spreadsheet" / "v-1" / "1_v-1_golden.xlsx")
    return root


def test_spreadsheetbench_layout_with_verified_naming_and_spaces(dataset, tmp_path):
    outputs = tmp_path / "out"
    (outputs / "7").mkdir(parents=True)
    (outputs / "7" / "1_7_output.xlsx").write_bytes(b"")
    cases = spreadsheetbench_cases(dataset, {"none": outputs}, stack="s", benchmark="b")
    assert [(c.task_id, c.case, c.answer_path.name) for c in cases] == [
        ("7", 1, "1_7_answer.xlsx"), ("7", 2, "2_7_answer .xlsx"), ("v-1", 1, "1_v-1_golden.xlsx")]
    assert cases[0].output_path == outputs / "7" / "1_7_output.xlsx"  # found under <id>/
    assert cases[1].output_path == outputs / "2_7_output.xlsx"  # missing: where it should have been
    assert cases[2].answer_sheet == "Out"
    assert {(c.stack, c.benchmark, c.condition) for c in cases} == {("s", "b", "none")}


def test_missing_output_folder_is_a_clear_error(dataset, tmp_path):
    with pytest.raises(RunError, match="does not exist"):
        spreadsheetbench_cases(dataset, {"none": tmp_path / "nowhere"})


def test_missing_dataset_json_is_a_clear_error(tmp_path):
    with pytest.raises(RunError, match="no dataset.json"):
        spreadsheetbench_cases(tmp_path, {"none": tmp_path})


def test_manifest_csv_and_jsonl_resolve_paths_against_the_manifest_folder(tmp_path):
    row = {"stack": "s", "benchmark": "b", "condition": "none", "task_id": "12", "case": "1",
           "output_path": "outs/1_12_output.xlsx", "answer_path": "gold/1_12_answer.xlsx", "answer_position": "A1:B2",
           "original_pass": "true"}
    (tmp_path / "m.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "m.csv").write_text(",".join(row) + "\n" + ",".join(f'"{v}"' for v in row.values()) + "\n")
    for name in ("m.jsonl", "m.csv"):
        (case,) = manifest_cases(tmp_path / name)
        assert case.output_path == tmp_path / "outs" / "1_12_output.xlsx"
        assert case.answer_path == tmp_path / "gold" / "1_12_answer.xlsx"
        assert (case.case, case.trial, case.original_pass) == (1, 1, True)


def test_manifest_missing_a_column_names_the_row(tmp_path):
    (tmp_path / "m.jsonl").write_text(json.dumps({"stack": "s", "condition": "none"}) + "\n")
    with pytest.raises(RunError, match="row 1 lacks benchmark, task_id"):
        manifest_cases(tmp_path / "m.jsonl")


def test_find_output_prefers_flat_layout(tmp_path):
    (tmp_path / "3_9_output.xlsx").write_bytes(b"")
    assert find_output(tmp_path, "9", 3) == tmp_path / "3_9_output.xlsx"


def test_verified_naming_quirks_bare_files_and_files_of_another_id(tmp_path, workbook):
    """SpreadsheetBench Verified (as the public Harbor adapter reads it): {n}_{id}_golden.xlsx with
    {n}_{id}_init.xlsx; bare golden.xlsx / initial.xlsx; golden files that carry another id, numbered
    in name order."""
    from regrade.runs.cases import golden_files, input_file

    root = tmp_path / "verified"
    golden = workbook({"A1": 1})
    layouts = {"13-1": ["1_13-1_golden.xlsx", "1_13-1_init.xlsx"],
               "bare": ["golden.xlsx", "initial.xlsx"],
               "40": ["1_39_golden.xlsx", "2_39_golden.xlsx", "1_39_init.xlsx", "2_39_init.xlsx"]}
    for task, names in layouts.items():
        (root / "spreadsheet" / task).mkdir(parents=True)
        for name in names:
            shutil.copyfile(golden, root / "spreadsheet" / task / name)
    found = {task: {n: p.name for n, p in golden_files(root, task).items()} for task in layouts}
    assert found == {"13-1": {1: "1_13-1_golden.xlsx"}, "bare": {1: "golden.xlsx"},
                     "40": {1: "1_39_golden.xlsx", 2: "2_39_golden.xlsx"}}
    inputs = {task: {n: input_file(root / "spreadsheet" / task / name, task, n).name
                     for n, name in cases.items()} for task, cases in found.items()}
    assert inputs == {"13-1": {1: "1_13-1_init.xlsx"}, "bare": {1: "initial.xlsx"},
                      "40": {1: "1_39_init.xlsx", 2: "2_39_init.xlsx"}}
