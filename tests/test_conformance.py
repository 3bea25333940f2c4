"""Conformance against Excel's cached values, on corpora whose answers are known by hand."""

import json
import shutil
import zipfile

import pytest

from regrade.engines.registry import open_engine
from regrade.grading.policies import get_policy
from regrade.audit.conformance import benchmark_files, conformance
from tests.conftest import DEMO, require_engines

ALL_FULL = ("ironcalc", "libreoffice", "gnumeric")


@pytest.fixture(scope="module")
def engines():
    require_engines(*ALL_FULL)
    return [open_engine(name) for name in ALL_FULL]


@pytest.mark.slow
def test_every_engine_matches_excel_on_the_demo_answers(engines):
    report = conformance(benchmark_files(DEMO / "dataset"), engines, get_policy("spreadsheetbench"))
    # graded formula cells: 34469 AH6, 32293 B14:B17, 37086 D2:D5, 59511 F2:F6, 57029 C1:C5,
    # three cases each: 3 * (1 + 4 + 4 + 5 + 5) = 57
    assert [(t.name, t.compared, t.agree, t.abstain) for t in report.engines] == [(n, 57, 57, 0) for n in ALL_FULL]
    assert (report.consensus.compared, report.consensus.agree) == (57, 57)
    assert report.mismatches == []


def _corpus_of_59511(tmp_path):
    """An empty corpus holding task 59511's record: (the corpus, the task's folder)."""
    corpus = tmp_path / "corpus"
    folder = corpus / "spreadsheet" / "59511"
    folder.mkdir(parents=True)
    record = json.loads((DEMO / "dataset" / "dataset.json").read_text())
    (corpus / "dataset.json").write_text(json.dumps([r for r in record if str(r["id"]) == "59511"]))
    return corpus, folder


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_a_cache_that_disagrees_with_its_formula_is_counted_and_listed(engines, tmp_path):
    corpus, folder = _corpus_of_59511(tmp_path)
    # case 1: ROUND formulas over ROUNDUP's cache; case 2: openpyxl formulas, no cache at all
    shutil.copyfile(DEMO / "outputs" / "community" / "1_59511_output.xlsx", folder / "1_59511_answer.xlsx")
    shutil.copyfile(DEMO / "outputs" / "anthropic" / "2_59511_output.xlsx", folder / "2_59511_answer.xlsx")
    report = conformance(benchmark_files(corpus), engines, get_policy("spreadsheetbench"))
    assert (report.files.examined, report.files.compared, report.files.without_cache) == (2, 1, 1)
    # E = 300, 2000, 3000, 7200, 8500: ROUND gives 0, 2, 3, 7, 9 where the cache says 1, 2, 3, 8, 9
    assert [(t.compared, t.agree) for t in report.engines] == [(5, 3)] * 3
    assert (report.consensus.agree, report.consensus.disagree) == (3, 0)
    assert {(m["cell"], m["excel"], m["value"]) for m in report.mismatches} == {
        ("Sheet1!F2", 1, 0), ("Sheet1!F5", 8, 7)}
    assert sorted({m["engine"] for m in report.mismatches}) == ["consensus", *sorted(ALL_FULL)]


def test_cells_that_depend_on_today_are_left_out_and_counted(tmp_path):
    corpus, folder = _corpus_of_59511(tmp_path)
    # Excel's answer, F2:F6 = ROUNDUP(E/1000,0) with Excel's caches; F3 is the master of the
    # shared formula F3:F6, which is made to read TODAY()
    f3 = b'<c r="F3" s="6"><f t="shared" ref="F3:F6" si="0">'
    _copy_with(DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx", folder / "1_59511_answer.xlsx",
               [(f3, f3 + b"TODAY()*0+")])
    report = conformance(benchmark_files(corpus), [open_engine("ironcalc")], get_policy("spreadsheetbench"))
    assert report.volatile == 4
    assert [(t.compared, t.agree) for t in report.engines] == [(1, 1)]  # F2 alone


def _copy_with(source, target, replacements: list[tuple[bytes, bytes]]) -> None:
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for item in original.infolist():
            data = original.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                for old, new in replacements:
                    assert old in data
                    data = data.replace(old, new)
            copy.writestr(item, data)


def test_cells_whose_excel_caches_contradict_each_other_are_left_out_and_counted(tmp_path):
    corpus, folder = _corpus_of_59511(tmp_path)
    # Excel's answer: F2 = ROUNDUP(E2/1000,0) over E2 = 300, cached 1
    answer = DEMO / "dataset" / "spreadsheet" / "59511" / "1_59511_answer.xlsx"
    shutil.copyfile(answer, folder / "1_59511_answer.xlsx")
    f2 = b'<c r="F2" s="6"><f>ROUNDUP(E2/1000,0)</f><v>1</v></c>'
    # case 2: the same formula over the same E2, cached 5: Excel's caches contradict each other
    _copy_with(answer, folder / "2_59511_answer.xlsx", [(f2, f2.replace(b"<v>1</v>", b"<v>5</v>"))])
    # case 3: cached 5 too, but over E2 = 4500, where 5 is right: a different question
    _copy_with(answer, folder / "3_59511_answer.xlsx", [(f2, f2.replace(b"<v>1</v>", b"<v>5</v>")),
                                                        (b'<c r="E2" s="5"><v>300</v>', b'<c r="E2" s="5"><v>4500</v>')])
    report = conformance(benchmark_files(corpus), [open_engine("ironcalc")], get_policy("spreadsheetbench"))
    assert report.inconsistent == 2  # F2 of cases 1 and 2
    assert [(t.compared, t.agree) for t in report.engines] == [(13, 13)]  # 3 x F2:F6, less those two
    assert report.mismatches == []
    assert report.to_json()["inconsistent"] == 2


def test_percentile_is_nearest_rank():
    from regrade.audit.conformance import percentile

    # ten values 1..10: the median is the 5th (5), the 90th percentile the 9th (9)
    assert percentile([float(v) for v in range(10, 0, -1)], 0.5) == 5.0
    assert percentile([float(v) for v in range(1, 11)], 0.9) == 9.0
    assert percentile([], 0.5) is None
