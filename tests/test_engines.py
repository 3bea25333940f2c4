"""Real engines on real files; every expected value is computed by hand beside it."""

import datetime as dt
import os
import signal
import time

import pytest

from regrade.engines.base import EngineSettings
from regrade.engines.rules import abstention
from regrade.values import CannotEvaluate, CellRef, ExcelError
from regrade.engines.cached import CachedEngine
from regrade.engines.ironcalc.engine import IronCalcEngine
from regrade.engines.readings import unknown_functions
from regrade.engines.isolation import IsolatedEngine
from tests.conftest import DEMO


def ref(coordinate: str, sheet: str = "Sheet1") -> CellRef:
    from openpyxl.utils.cell import coordinate_from_string, column_index_from_string

    column, row = coordinate_from_string(coordinate)
    return CellRef(sheet, row, column_index_from_string(column))


def test_ironcalc_recomputes_formulas_that_have_no_cached_value(workbook):
    path = workbook({"A1": 2, "A2": 3.5, "A3": "=A1*A2", "A4": '=IF(A3>5,"big","small")', "A5": "=A1>A2",
                     "A6": "=1/0", "A7": '=_xlfn.XLOOKUP("b",B1:B2,C1:C2)', "B1": "a", "B2": "b", "C1": 10, "C2": 20})
    cells = [ref(c) for c in ("A3", "A4", "A5", "A6", "A7")]
    values = IronCalcEngine().evaluate(path, cells).cells
    assert values[ref("A3")] == 7.0  # 2 * 3.5
    assert values[ref("A4")] == "big"  # 7 > 5
    assert values[ref("A5")] is False  # 2 > 3.5 is false
    assert values[ref("A6")] == ExcelError("#DIV/0!")
    assert values[ref("A7")] == 20.0  # "b" is found in B2, so C2
    cached = CachedEngine().evaluate(path, cells).cells
    assert cached[ref("A3")] is None  # openpyxl wrote no cached value


def test_ironcalc_recomputes_rather_than_echoing_a_stale_cache():
    # community's 1_59511 output: F2 holds =ROUND(E2/1000,0) with E2=300, but the cached
    # value left by Excel's ROUNDUP is 1. ROUND(0.3, 0) is 0.
    path = DEMO / "outputs" / "community" / "1_59511_output.xlsx"
    assert CachedEngine().evaluate(path, [ref("F2")]).cells[ref("F2")] == 1
    assert IronCalcEngine().evaluate(path, [ref("F2")]).cells[ref("F2")] == 0.0


def test_dates_are_read_as_openpyxl_reads_a_cached_date(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "=DATE(2024,1,2)"
    book.active["A1"].number_format = "yyyy-mm-dd"
    book.save(tmp_path / "d.xlsx")
    values = IronCalcEngine().evaluate(tmp_path / "d.xlsx", [ref("A1", "Sheet")]).cells
    assert values[ref("A1", "Sheet")] == dt.datetime(2024, 1, 2)


def test_unknown_functions_abstain_instead_of_guessing(workbook):
    # PHONETIC is a real Excel function IronCalc 0.9.1 does not have
    path = workbook({"A1": 1, "A2": 2, "A3": "=PHONETIC(B1)", "A4": "=IFERROR(PHONETIC(B1),7)",
                     "A5": "=A3+1", "A6": "=A1+A2", "B1": "x"})
    values = IronCalcEngine().evaluate(path, [ref(c) for c in ("A3", "A4", "A5", "A6")]).cells
    assert values[ref("A3")] == CannotEvaluate("unsupported-function", "IronCalc lacks PHONETIC", rule="ironcalc-lacks-function")
    assert isinstance(values[ref("A4")], CannotEvaluate)  # IFERROR would hide it behind 7
    assert isinstance(values[ref("A5")], CannotEvaluate)  # #NAME? flows in from A3
    assert values[ref("A6")] == 3.0  # 1 + 2: unaffected cells are still computed


def test_an_error_outside_the_unknown_functions_cone_is_a_real_result(workbook):
    path = workbook({"A1": "=PHONETIC(B1)", "A2": "=1/0", "A3": "=A1&A2", "B1": "x"})
    values = IronCalcEngine().evaluate(path, [ref("A2"), ref("A3")]).cells
    assert values[ref("A2")] == ExcelError("#DIV/0!")  # 1/0 reads nothing PHONETIC touches
    assert values[ref("A3")] == CannotEvaluate(
        "unsupported-function", "#NAME? from a formula that calls PHONETIC, which IronCalc lacks",
        rule="ironcalc-error-from-missing-function")


def test_unknown_function_names_ignore_string_literals():
    assert unknown_functions('=_xlfn.aggregate(9,6,A1:A2)&"foo(x)"') == ["AGGREGATE"]
    assert unknown_functions("=SUM(A1:A2)") == []


def test_missing_and_corrupt_files_are_workbook_failures(tmp_path):
    corrupt = tmp_path / "corrupt.xlsx"
    corrupt.write_bytes(b"this is not a zip file")
    for engine in (CachedEngine(), IronCalcEngine()):
        assert engine.evaluate(tmp_path / "nope.xlsx", []).failure.reason == "missing-file"
    assert CachedEngine().evaluate(corrupt, []).failure.reason == "unreadable-output"
    assert IronCalcEngine().evaluate(corrupt, []).failure.reason == "unreadable-output"  # screened before loading


class PanickingEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        import ironcalc

        ironcalc.test_panic()  # a real Rust panic: a BaseException, not an Exception


class SegfaultingEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        os.kill(os.getpid(), signal.SIGSEGV)


class SleepingEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        time.sleep(30)


class BurningEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        while True:
            sum(i * i for i in range(10_000))


class GreedyEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        return bytearray(2 * 1024**3)


@pytest.mark.parametrize(
    "engine, reason, words",
    [
        (PanickingEngine(), "crashed", "PanicException"),
        (SegfaultingEngine(), "crashed", "SIGSEGV"),
        (BurningEngine(), "timeout", "more than 1 s of CPU time"),
        (SleepingEngine(), "timeout", "still at work after 4 s"),  # computing nothing: the wall-clock backstop
        (GreedyEngine(), "memory-limit", "more than 512 MB"),
    ],
)
@pytest.mark.slow
def test_isolation_turns_crashes_timeouts_and_memory_into_failures(engine, reason, words, workbook):
    path = workbook({"A1": 1})
    engine.settings = EngineSettings(timeout_s=1, memory_mb=512)
    failure = IsolatedEngine(engine).evaluate(path, [ref("A1")]).failure
    assert failure.reason == reason
    assert words in failure.detail


def test_isolated_engine_returns_the_same_values(workbook):
    path = workbook({"A1": 4, "A2": "=A1*A1"})
    assert IsolatedEngine(IronCalcEngine()).evaluate(path, [ref("A2")]).cells == {ref("A2"): 16.0}


class SleepyOnceEngine(IronCalcEngine):
    """Sleeps past the limit on a workbook named slow.xlsx, computes the others."""

    def evaluate(self, path, cells):
        if path.name == "slow.xlsx":
            time.sleep(30)
        return super().evaluate(path, cells)


class CrashOnSecondEngine(IronCalcEngine):
    """Dies on the second workbook a worker process serves: a fault left by its predecessor."""

    served = 0

    def evaluate(self, path, cells):
        CrashOnSecondEngine.served += 1  # counted in the worker process
        if CrashOnSecondEngine.served == 2:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().evaluate(path, cells)


@pytest.mark.slow
def test_the_worker_serves_workbook_after_workbook_and_is_replaced_after_a_timeout(workbook):
    fast = workbook({"A1": 4, "A2": "=A1*A1"}, name="fast.xlsx")
    slow = workbook({"A1": 1}, name="slow.xlsx")
    engine = IsolatedEngine(SleepyOnceEngine(EngineSettings(timeout_s=1)))
    assert engine.evaluate(fast, [ref("A2")]).cells == {ref("A2"): 16.0}
    first = engine._worker.pid
    assert engine.evaluate(fast, [ref("A2")]).cells == {ref("A2"): 16.0}
    assert engine._worker.pid == first  # the same worker
    assert engine.evaluate(slow, [ref("A1")]).failure.reason == "timeout"
    assert engine.evaluate(fast, [ref("A2")]).cells == {ref("A2"): 16.0}  # a new worker answers
    assert engine._worker.pid != first
    engine.close()


class ShortLivedEngine(IronCalcEngine):
    workbooks_per_worker = 2


def test_a_worker_is_replaced_after_its_engines_number_of_workbooks(workbook):
    from regrade.engines.libreoffice.engine import LibreOfficeEngine

    path = workbook({"A1": 4, "A2": "=A1*A1"})
    engine = IsolatedEngine(ShortLivedEngine())
    pids = []
    for _ in range(3):
        assert engine.evaluate(path, [ref("A2")]).cells == {ref("A2"): 16.0}
        pids.append(engine._worker.pid)
    engine.close()
    assert pids[0] == pids[1] != pids[2]  # two workbooks, then a fresh worker
    assert IsolatedEngine(IronCalcEngine()).workbooks_per_worker == 100
    assert IsolatedEngine(LibreOfficeEngine()).workbooks_per_worker == 1000  # soffice's start is dear


def test_a_crash_in_a_worker_that_served_others_is_tried_again_in_a_fresh_one(workbook):
    path = workbook({"A1": 4, "A2": "=A1*A1"})
    engine = IsolatedEngine(CrashOnSecondEngine())
    assert engine.evaluate(path, [ref("A2")]).cells == {ref("A2"): 16.0}
    assert engine.evaluate(path, [ref("A2")]).cells == {ref("A2"): 16.0}  # crashed, then computed afresh
    engine.close()


def test_a_worker_folder_left_by_a_killed_run_is_removed_by_the_next_worker(workbook, tmp_path, monkeypatch):
    import subprocess
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that ran and ended: the maker of a folder a SIGKILL left
    stale = tmp_path / f"regrade-ironcalc-worker-{gone.pid}-abcd1234"
    live = tmp_path / f"regrade-ironcalc-worker-{os.getpid()}-efgh5678"  # this process's: still in use
    other = tmp_path / "regrade-ironcalc-worker-abcd1234"  # not named after a process: not regrade's to judge
    for folder in (stale, live, other):
        folder.mkdir()
    (stale / "linked-copy.xlsx").write_bytes(b"a workbook copy")
    engine = IsolatedEngine(IronCalcEngine())
    path = workbook({"A1": 2, "A2": "=A1+1"})
    assert engine.evaluate(path, [ref("A2")]).cells == {ref("A2"): 3.0}
    assert not stale.exists() and live.is_dir() and other.is_dir()
    [own] = [p for p in tmp_path.glob(f"regrade-ironcalc-worker-{os.getpid()}-*") if p != live]  # this worker's
    engine.close()
    assert not own.exists()


class SleepyAnnouncingEngine(IronCalcEngine):
    """Writes its worker's pid to $REGRADE_TEST_PID_FILE, then sleeps 30 s on every workbook."""

    def evaluate(self, path, cells):
        with open(os.environ["REGRADE_TEST_PID_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(30)
        return super().evaluate(path, cells)


def test_a_worker_busy_on_a_workbook_dies_with_the_process_that_started_it(workbook, tmp_path):
    """The parent killed mid-workbook (kill PID, SIGKILL here): its worker, busy where no orphan
    check runs, does not compute on for the rest of the workbook."""
    import subprocess
    import sys

    slow = workbook({"A1": 1}, name="slow.xlsx")
    announced = tmp_path / "worker.pid"
    script = (
        "from tests.test_engines import SleepyAnnouncingEngine; "
        "from regrade.engines.base import EngineSettings; from regrade.engines.isolation import IsolatedEngine; "
        "from regrade.values import CellRef; from pathlib import Path; "
        "engine = IsolatedEngine(SleepyAnnouncingEngine(EngineSettings(timeout_s=300))); "
        f"engine.evaluate(Path({str(slow)!r}), [CellRef('Sheet1', 1, 1)])"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=os.path.dirname(os.path.dirname(__file__)),
                              env={**os.environ, "REGRADE_TEST_PID_FILE": str(announced)})
    deadline = time.monotonic() + 120
    while not (announced.is_file() and announced.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(announced.read_text())  # asleep in the workbook
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker), "the worker computes on after its parent was killed"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


class ChattyEngine(IronCalcEngine):
    def evaluate(self, path, cells):
        print("Unexpected feature XmlNode { name: vertAlign }")  # what IronCalc prints on some files
        os.write(2, b"thread panicked\n")
        return super().evaluate(path, cells)


def test_a_worker_prints_nothing_to_the_users_stdout_or_stderr(workbook, capfd):
    path = workbook({"A1": 2, "A2": "=A1+1"})
    values = IsolatedEngine(ChattyEngine()).evaluate(path, [ref("A2")])
    assert values.cells == {ref("A2"): 3.0}
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_a_cell_that_reads_another_workbook_is_an_abstention(workbook, tmp_path):
    import zipfile

    plain = workbook({"B1": 3, "A1": "=[1]Data!A1*2", "A2": "=A1+1", "A3": "=B1*2"})
    linked = tmp_path / "linked.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(linked, "w") as target:
        for item in source.infolist():
            target.writestr(item, source.read(item.filename))
        target.writestr("xl/externalLinks/externalLink1.xml", "<externalLink/>")  # what marks a linked workbook
    values = IronCalcEngine().evaluate(linked, [ref("A1"), ref("A2"), ref("A3")]).cells
    external = abstention("external-link")
    assert values[ref("A1")] == values[ref("A2")] == external  # A2 reads A1
    assert values[ref("A3")] == 6.0  # 3 * 2


def test_cells_the_bridge_had_to_leave_to_ironcalc_are_abstentions(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # A1:A3 = a, b, a. In Excel the array formula B1 is SUM(COUNTIF(A1:A3, A1:A3)) = 2 + 1 + 2 = 5,
    # which needs the bridge; C1 = B1 + 1 depends on it; D1 = COUNTA(A1:A3) = 3 does not.
    path = workbook({"A1": "a", "A2": "b", "A3": "a", "B1": ArrayFormula("B1", "=SUM(COUNTIF(A1:A3,A1:A3))"),
                     "C1": "=B1+1", "D1": "=COUNTA(A1:A3)"})
    cells = [ref("B1"), ref("C1"), ref("D1")]
    assert list(IronCalcEngine().evaluate(path, cells).cells.values()) == [5, 6, 3]
    # a bridge budget of no work: every workbook is past it, and only what IronCalc lacks is bridged
    values = IronCalcEngine(EngineSettings(bridge_work=0)).evaluate(path, cells).cells
    assert [values[c].rule for c in cells[:2]] == ["ironcalc-bridge-left"] * 2
    assert "COUNTIF" in values[cells[1]].detail
    assert values[cells[2]] == 3


def test_bridged_calls_that_read_no_bridged_cell_are_resolved_once_and_a_chain_in_passes(workbook, monkeypatch):
    from openpyxl.worksheet.formula import ArrayFormula

    from regrade.engines.ironcalc import bridge

    # A1:A3 = 1, 5, 3 and B1:B3 = 10, 20, 30. C1 (an array formula) takes twice, in two rounds of the
    # bridge over the same argument, the MAX of B where A > 2: of 20 and 30, 30. D1 = AGGREGATE(4, 6,
    # B1:B3) = 30. Neither reads a bridged cell: one resolution settles both. E1 = AGGREGATE(9, 6,
    # C1:D1) = 60 reads both: the bridge repeats its resolution until nothing changes.
    cells = {"A1": 1, "A2": 5, "A3": 3, "B1": 10, "B2": 20, "B3": 30,
             "C1": ArrayFormula("C1", '=IF(MAX(IF(A1:A3>2,B1:B3)),MAX(IF(A1:A3>2,B1:B3)),"")'),
             "D1": "=_xlfn.AGGREGATE(4,6,B1:B3)"}
    resolutions = []
    resolve = bridge._resolve_on_copy
    monkeypatch.setattr(bridge, "_resolve_on_copy", lambda *args: resolutions.append(1) or resolve(*args))
    apart = workbook(cells, name="apart.xlsx")
    assert list(IronCalcEngine().evaluate(apart, [ref("C1"), ref("D1")]).cells.values()) == [30, 30]
    assert len(resolutions) == 1
    resolutions.clear()
    chain = workbook({**cells, "E1": "=_xlfn.AGGREGATE(9,6,C1:D1)"}, name="chain.xlsx")
    assert list(IronCalcEngine().evaluate(chain, [ref("C1"), ref("D1"), ref("E1")]).cells.values()) == [30, 30, 60]
    assert len(resolutions) >= 2


def test_a_bridged_call_that_reads_let_names_is_an_abstention_not_name_error(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # A1:A3 = a, b, a. B1 binds x to A1:A3 and needs the bridge for COUNTIF(x, x): outside
    # the LET, x means nothing, so the bridge cannot evaluate it (it used to give #NAME?).
    # C1's bridged call reads no LET name: SUM(COUNTIF(A1:A3, A1:A3)) + y = (2 + 1 + 2) + 1 = 6.
    path = workbook({"A1": "a", "A2": "b", "A3": "a",
                     "B1": ArrayFormula("B1", "=_xlfn.LET(_xlpm.x,A1:A3,SUM(COUNTIF(_xlpm.x,_xlpm.x)))"),
                     "C1": ArrayFormula("C1", "=_xlfn.LET(_xlpm.y,1,SUM(COUNTIF(A1:A3,A1:A3))+_xlpm.y)")})
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("C1")]).cells
    assert values[ref("B1")].rule == "ironcalc-bridge-left" and "COUNTIF" in values[ref("B1")].detail
    assert values[ref("C1")] == 6


def test_textjoin_over_a_computed_array_is_bridged(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # IronCalc answers #N/IMPL! for TEXTJOIN over anything but a range, which IFERROR hid
    # ("none" in B1). A1:A3 = 1, 2, 3.
    path = workbook({"A1": 1, "A2": 2, "A3": 3,
                     "B1": '=IFERROR(_xlfn.TEXTJOIN("-",1,_xlfn._xlws.FILTER(A1:A3,A1:A3>1)),"none")',
                     "B2": ArrayFormula("B2", '=_xlfn.TEXTJOIN(", ",TRUE,IF(A1:A3>1,A1:A3*1.5,""))'),
                     "B3": ArrayFormula("B3", '=_xlfn.TEXTJOIN("/",FALSE,IF(A1:A3>1,A1:A3,""))'),
                     "B4": '=_xlfn.TEXTJOIN("-",,{1,2})'})
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("B2"), ref("B3"), ref("B4")]).cells
    assert values[ref("B1")] == "2-3"  # the values above 1
    assert values[ref("B2")] == "3, 4.5"  # 2 * 1.5 and 3 * 1.5; the empty text skipped
    assert values[ref("B3")] == "/2/3"  # FALSE keeps the empty text of row 1
    # ignore_empty written as nothing: regrade does not know what Excel makes of it, so it abstains
    assert values[ref("B4")].reason == "unsupported-function"


def test_a_lookup_of_an_empty_cell_is_an_abstention(workbook):
    # B1:B3 = (empty), x, (empty); D1 is empty. IronCalc's VLOOKUP(D1, B1:C3, 2, 0) matches B1,
    # the first empty cell, and answers 1; Excel does not match it (SpreadsheetBench 7902
    # caches #N/A's fallback there), and LibreOffice gives #N/A. E4 depends on E1.
    # E5 looks D1 up in C1:C3, which holds no empty cell: #N/A, as in Excel, so IronCalc computes it.
    path = workbook({"B2": "x", "C1": 1, "C2": 2, "C3": 3, "E1": "=VLOOKUP(D1,B1:C3,2,0)",
                     "E2": '=IFERROR(_xlfn.XLOOKUP(D1,B1:B3,C1:C3),"none")', "E3": '=VLOOKUP("x",B1:C3,2,0)', "E4": "=E1*2",
                     "E5": "=VLOOKUP(D1,C1:C3,1,0)"})
    values = IronCalcEngine().evaluate(path, [ref("E1"), ref("E2"), ref("E3"), ref("E4"), ref("E5")]).cells
    assert [values[c].rule for c in (ref("E1"), ref("E2"), ref("E4"))] == ["ironcalc-lookup-of-empty"] * 3
    assert "VLOOKUP" in values[ref("E1")].detail
    assert values[ref("E3")] == 2  # x is in row 2
    assert values[ref("E5")] == ExcelError("#N/A")


def test_an_error_at_either_end_of_an_index_range_is_the_ranges_value(workbook):
    # SpreadsheetBench 42034: SUM(INDEX(..., MATCH(blank, ...)):INDEX(...)) is #N/A in Excel (IFNA
    # turns it into ""); written as a plain error end, IronCalc made it #VALUE!.
    # A1:A3 = 1, 2, 4; B1 = "x". MATCH("zz", ...) finds nothing: #N/A.
    path = workbook({"A1": 1, "A2": 2, "A3": 4, "B1": "x",
                     "C1": '=_xlfn.IFNA(SUM(INDEX(A1:A3,MATCH("zz",B1:B3,0)):INDEX(A1:A3,3)),"")',
                     "C2": '=_xlfn.IFNA(SUM(INDEX(A1:A3,2):INDEX(A1:A3,MATCH("zz",B1:B3,0))),"")',
                     "C3": '=SUM(INDEX(A1:A3,MATCH("zz",B1:B3,0)):A3)',
                     "C4": '=SUM(A1:INDEX(A1:A3,MATCH("zz",B1:B3,0)))',
                     "C5": '=SUM(INDEX(A1:A3,2):INDEX(A1:A3,3))'})
    values = IronCalcEngine().evaluate(path, [ref(c) for c in ("C1", "C2", "C3", "C4", "C5")]).cells
    assert values[ref("C1")] == "" and values[ref("C2")] == ""
    assert values[ref("C3")] == ExcelError("#N/A") and values[ref("C4")] == ExcelError("#N/A")
    assert values[ref("C5")] == 6  # A2 + A3 = 2 + 4


def test_text_of_numeric_text_and_text_sections_is_bridged(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # IronCalc's TEXT gives text back unchanged. Excel reads "0405" as 405 (SpreadsheetBench
    # 49467: "04:05 am" + 0.5 is 16:05, 0.670138889) and shows text with the fourth section
    # (57716: TEXT("ab","0;;;\0") is "0"). A1 = "0405 pm"; B1:D1 = "x100", "ab", (empty).
    path = workbook({"A1": "0405 pm", "B1": "x100", "C1": "ab",
                     "A2": '=TEXT(LEFT(A1,4),"00\\:00 \\a\\m")+IF(RIGHT(A1,2)="pm",0.5)',
                     "A3": '=SUMPRODUCT(--TEXT(RIGHT(B1:D1,3),"0;;;\\0"))',
                     "A4": ArrayFormula("A4", '=_xlfn.TEXTJOIN("|",FALSE,TEXT(B1:D1,"0.0;;;\\[@\\]"))'),
                     "A5": '=TEXT(A1,"0")'})
    values = IronCalcEngine().evaluate(path, [ref("A2"), ref("A3"), ref("A4"), ref("A5")]).cells
    assert values[ref("A2")] == pytest.approx(0.5 + (4 * 60 + 5) / 1440)  # noon plus 04:05
    assert values[ref("A3")] == 100  # "100" + "0" (for "ab") + "0" (for "")
    assert values[ref("A4")] == "[x100]|[ab]|"  # the empty cell is 0, and the zero section is empty
    assert values[ref("A5")] == "0405 pm"  # no text section: the text as it is


def test_a_cell_that_reads_a_name_defined_by_a_formula_or_constant_is_an_abstention(tmp_path):
    import openpyxl
    from openpyxl.workbook.defined_name import DefinedName

    # IronCalc evaluates only names that are one reference: SUM(Days) over {0,1,2} is #NAME?
    # (SpreadsheetBench 57716), and Twice (=Sheet1!$A$1*2) is 0 where Excel gives 6.
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet["A1"] = 3
    for name, definition in (("Days", "{0,1,2}"), ("Twice", "Sheet1!$A$1*2"), ("First", "Sheet1!$A$1")):
        book.defined_names[name] = DefinedName(name, attr_text=definition)
    sheet["B1"], sheet["B2"], sheet["B3"], sheet["B4"] = "=SUM(Days)", "=IFERROR(Twice,0)", "=B2+1", "=First+1"
    book.save(tmp_path / "names.xlsx")
    values = IronCalcEngine().evaluate(tmp_path / "names.xlsx", [ref(c) for c in ("B1", "B2", "B3", "B4")]).cells
    assert [values[ref(c)].reason for c in ("B1", "B2", "B3")] == ["unsupported-name"] * 3
    assert "Twice" in values[ref("B3")].detail
    assert values[ref("B4")] == 4  # A1 + 1: a name for one reference IronCalc reads


def test_count_over_a_computed_array_ignores_its_errors(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 57090 counts distinct values with COUNT(1/FREQUENCY(...)); the bridge's
    # COUNT returned the first #DIV/0!. A1:A5 = 1, 2, 2, 3, 5: FREQUENCY over itself is
    # {1;2;0;1;1;0}, so 1/... has four numbers and two #DIV/0!.
    path = workbook({"A1": 1, "A2": 2, "A3": 2, "A4": 3, "A5": 5,
                     "B1": ArrayFormula("B1", "=COUNT(1/FREQUENCY(A1:A5,A1:A5))"),
                     "B2": ArrayFormula("B2", "=SUM(1/FREQUENCY(A1:A5,A1:A5))")})
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("B2")]).cells
    assert values[ref("B1")] == 4
    assert values[ref("B2")] == ExcelError("#DIV/0!")  # SUM does not ignore them


def test_lookup_over_a_range_that_ends_in_empty_cells(workbook):
    # SpreadsheetBench 59160: LOOKUP(9^9, D1:E1), the last number of the row, with E1 empty.
    # IronCalc answered 0; Excel skips the empty cells: 44114 (A1), and B3's result vector gives "b".
    path = workbook({"A1": 44114, "C1": "x", "A2": "a", "B2": "b", "C2": "c",
                     "A3": "=LOOKUP(9^9,A1:B1)", "B3": "=LOOKUP(9^9,A1:D1,A2:D2)", "C3": '=LOOKUP("zz",A1:D1)'})
    values = IronCalcEngine().evaluate(path, [ref("A3"), ref("B3"), ref("C3")]).cells
    assert values[ref("A3")] == 44114
    assert values[ref("B3")] == "a"  # the only number is in column A
    assert values[ref("C3")] == "x"  # the last text, C1


def test_a_bridged_call_over_a_function_ironcalc_lacks_is_an_abstention(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 54144: SUM(SUMIFS(D:D, C:C, FILTERXML(...))). IronCalc lacks FILTERXML;
    # the bridge computed SUMIFS over its #NAME? and wrote 0, which hid the missing function.
    path = workbook({"C1": "a", "C2": "b", "D1": 1, "D2": 2,
                     "F1": ArrayFormula("F1", '=SUM(SUMIFS(D1:D2,C1:C2,_xlfn.FILTERXML("<k><m>a</m><m>b</m></k>","//m")))')})
    value = IronCalcEngine().evaluate(path, [ref("F1")]).cells[ref("F1")]
    assert value.rule == "ironcalc-lacks-function" and "FILTERXML" in value.detail


def test_xmatch_of_an_array_of_values_gives_an_array(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # SpreadsheetBench 34180: is any word of "Attila S P M" one of the parts of "CHC.ATTILA"?
    # XMATCH of {"Attila","S","P","M"} in {"CHC","ATTILA"} is {2,#N/A,#N/A,#N/A} (case-insensitive):
    # TRUE. IronCalc answered FALSE.
    path = workbook({"B1": "Attila S P M", "C1": "CHC.ATTILA", "B2": "Jack S",
                     "D1": ArrayFormula("D1", '=OR(ISNUMBER(_xlfn.XMATCH(_xlfn.TEXTSPLIT(B1," "),_xlfn.TEXTSPLIT(C1,"."))))'),
                     "D2": ArrayFormula("D2", '=OR(ISNUMBER(_xlfn.XMATCH(_xlfn.TEXTSPLIT(B2," "),_xlfn.TEXTSPLIT(C1,"."))))'),
                     "D3": ArrayFormula("D3", '=SUM(_xlfn.XMATCH({"chc","attila"},_xlfn.TEXTSPLIT(C1,".")))')})
    values = IronCalcEngine().evaluate(path, [ref("D1"), ref("D2"), ref("D3")]).cells
    assert values[ref("D1")] is True
    assert values[ref("D2")] is False  # neither Jack nor S
    assert values[ref("D3")] == 3  # positions 1 and 2


def test_a_date_read_from_text_is_an_abstention_whatever_ironcalc_gives(workbook):
    # SpreadsheetBench 51958: DATEVALUE("9 Aug 2021") is 44417 in Excel, #VALUE! in IronCalc,
    # which reads fewer date texts. "2021-08-09" it reads (44417), but reading dates from text is
    # a hazard IronCalc is not cleared of (TIMEVALUE("1:30PM") is #VALUE! in Excel 365, 0.5625 in
    # IronCalc), so both abstain; what does not read one stands.
    path = workbook({"A1": "9 Aug", "B1": '=DATEVALUE(A1&" 2021")', "B2": '=DATEVALUE("2021-08-09")', "B3": "=1/0+A2"})
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("B2"), ref("B3")]).cells
    assert values[ref("B1")].rule == values[ref("B2")].rule == "date-from-text"
    assert values[ref("B3")] == ExcelError("#DIV/0!")


def test_subtotal_over_offset_of_an_array_is_one_value_per_reference(workbook):
    from openpyxl.worksheet.formula import ArrayFormula

    # OFFSET with an array of offsets is one reference per element in Excel, and SUBTOTAL one value
    # per reference (IronCalc alone takes the first element). A1:A3 = 1, 2, 3; C1:C3 = 5, 1, 2 and
    # D1:D3 = 7, 8, 9.
    path = workbook({"A1": 1, "A2": 2, "A3": 3, "C1": 5, "C2": 1, "C3": 2, "D1": 7, "D2": 8, "D3": 9,
                     "B1": "=SUMPRODUCT(SUBTOTAL(9,OFFSET(A1,ROW(A1:A3)-ROW(A1),0)))",  # 1 + 2 + 3
                     "B2": ArrayFormula("B2", "=SUM(SUBTOTAL(4,OFFSET(C1:C3,0,{0,1})))"),  # MAX(C) + MAX(D) = 5 + 9
                     "B3": "=SUMPRODUCT(SUBTOTAL(3,OFFSET(A1,ROW(A1:A5)-ROW(A1),0)))",  # A4, A5 empty: 3
                     "B4": "=SUMPRODUCT(--(SUBTOTAL(4,OFFSET(C1:C3,,ROW(1:2)-1))=C1:C2))"})  # {5;9}={5;1}: one match
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("B2"), ref("B3"), ref("B4")]).cells
    assert [values[ref(c)] for c in ("B1", "B2", "B3", "B4")] == [6, 14, 3, 1]


def _filtered_book(path, cells: dict):
    """A2:A5 = 1, 2, 4, 8 under a filter showing 1 and 4 (rows 3 and 5 hidden by it); A7 = 16 in a
    row hidden by hand; and ``cells``."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet["A1"] = "v"
    for row, value in ((2, 1), (3, 2), (4, 4), (5, 8), (7, 16)):
        sheet.cell(row, 1, value)
    sheet.auto_filter.ref = "A1:A5"
    sheet.auto_filter.add_filter_column(0, ["1", "4"])
    for row in (3, 5, 7):
        sheet.row_dimensions[row].hidden = True
    for coordinate, value in cells.items():
        sheet[coordinate] = value
    book.save(path)
    return path


def test_every_subtotal_skips_the_rows_a_filter_hides(tmp_path):
    # SUBTOTAL 1-11 skip the filtered rows only, 101-111 every hidden row (support.microsoft.com,
    # SUBTOTAL function); IronCalc alone counts the filtered rows in 1-11, and the bridge computes them.
    path = _filtered_book(tmp_path / "filtered.xlsx", {
        "B1": "=SUBTOTAL(9,A2:A7)*2",  # (1 + 4 + 16) * 2
        "B2": "=SUBTOTAL(109,A2:A7)+0",  # 1 + 4
        "B3": "=SUMPRODUCT(SUBTOTAL(3,OFFSET(A2,ROW(A2:A7)-ROW(A2),0)))",  # rows 2, 4, 7: 3
        "B4": "=SUBTOTAL(9,A2:A7)"})  # a direct call: 21
    cells = [ref("B1"), ref("B2"), ref("B3"), ref("B4")]
    values = IronCalcEngine().evaluate(path, cells).cells
    assert [values[c] for c in cells] == [42, 5, 3, 21]
    # past the bridge's work budget IronCalc's own SUBTOTAL is left: the direct call is mended, the rest abstain
    values = IronCalcEngine(EngineSettings(bridge_work=0)).evaluate(path, cells).cells
    assert values[ref("B4")] == 21
    assert all(isinstance(values[c], CannotEvaluate) for c in cells[:3])


def test_a_subtotal_the_bridge_cannot_take_where_a_filter_hides_rows_is_an_abstention(tmp_path):
    # a formula calling a function IronCalc lacks is not bridged, so its SUBTOTAL keeps the filtered
    # rows: what reads it abstains (IronCalc's B6 would be 0 + 1 + 2 + 4 + 8 + 16, Excel's 0 + 21);
    # B1 does not read it: (1 + 4 + 16) * 2
    path = _filtered_book(tmp_path / "filtered.xlsx", {
        "B5": '=IFERROR(GETPIVOTDATA("x",A1),0)+SUBTOTAL(9,A2:A7)', "B6": "=B5*1", "B1": "=SUBTOTAL(9,A2:A7)*2"})
    values = IronCalcEngine().evaluate(path, [ref("B1"), ref("B6")]).cells
    assert values[ref("B1")] == 42
    assert values[ref("B6")].rule == "ironcalc-bridge-left"


def test_a_bridged_reference_to_a_sheet_whose_name_has_a_space_is_a_reference(tmp_path):
    import openpyxl

    # 'My Data'!A1:A3 = 1, 2, 4 with row 2 hidden by hand. AGGREGATE(9, 5, ...) skips hidden rows:
    # 1 + 4 = 5. The bridge used to drop the space from the sheet's name, fail to place the
    # reference and evaluate it as an array with no rows hidden, which AGGREGATE 1-13 reject
    # (#VALUE!).
    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    data = book.create_sheet("My Data")
    for row, value in ((1, 1), (2, 2), (3, 4)):
        data.cell(row, 1, value)
    data.row_dimensions[2].hidden = True
    book["Sheet1"]["B1"] = "=_xlfn.AGGREGATE(9,5,'My Data'!A1:A3)"
    path = tmp_path / "spaced.xlsx"
    book.save(path)
    assert IronCalcEngine().evaluate(path, [ref("B1")]).cells[ref("B1")] == 5


def test_year_month_day_of_the_clock_are_ironcalcs_own_and_a_cone_reading_today_resolves_once(workbook, monkeypatch):
    """IronCalc's calendar departs from Excel's only below serial 61 and at 0 (an empty cell),
    where the bridge computes YEAR, MONTH and DAY; the clock's serial is never there, so
    YEAR(TODAY()) is IronCalc's own. The SUMPRODUCTs over dates that read it (task 55392's
    shape) are then read apart, TODAY() being one value within the computation: one resolution
    of the bridge settles them, not a second pass to find nothing changed."""
    import regrade.engines.ironcalc.bridge as bridge
    from regrade.engines.ironcalc.calls import BridgeContext, innermost_call

    today = dt.datetime.now(dt.timezone.utc).date()  # IronCalc's TODAY() is of UTC, the model's time zone
    june = dt.date(2020, 6, 15)
    path = workbook({"A1": today, "A2": june, "A4": 30,  # A3 empty: serial 0; 30 is 30 January 1900
                     "B1": "=YEAR(TODAY())", "B2": "=MONTH(TODAY())", "B3": "=DAY(NOW())",
                     "C1": "=SUMPRODUCT((YEAR(A1:A4)=B1)*1)", "C2": "=SUMPRODUCT((MONTH(A1:A4)=B2)*1)"})
    context = BridgeContext(frozenset(), {})
    assert innermost_call((0, 1, 2), "=YEAR(TODAY())", context) is None
    assert innermost_call((0, 1, 2), "=YEAR(A1)", context) is not None
    resolutions = []
    resolve = bridge._resolve_on_copy
    monkeypatch.setattr(bridge, "_resolve_on_copy", lambda *args: resolutions.append(1) or resolve(*args))
    cells = [ref(c) for c in ("B1", "B2", "B3", "C1", "C2")]
    values = IronCalcEngine().evaluate(path, cells).cells
    # Excel's calendar: MONTH of serial 0 and of 30 is January; YEAR of both is 1900
    months = [today.month, june.month, 1, 1]
    assert [values[c] for c in cells] == [today.year, today.month, today.day, 1 + (june.year == today.year),
                                          months.count(today.month)]
    assert len(resolutions) == 1
    path = workbook({"A1": today, "B2": "=MONTH(NOW())", "C2": "=SUMPRODUCT((MONTH(A1:A4)=B2)*1)"}, name="now.xlsx")
    resolutions.clear()
    assert IronCalcEngine().evaluate(path, [ref("C2")]).cells[ref("C2")] == 1 + (today.month == 1) * 3
    assert len(resolutions) == 2  # NOW() is not one value from one evaluation to the next: a second pass checks


def test_ironcalc_computes_again_when_midnight_passes_during_its_computation(workbook, monkeypatch):
    """A resolution of the bridge that read TODAY() is kept only if the day did not change before
    the model's last evaluation: when it did, the whole computation is made again."""
    import regrade.engines.ironcalc.engine as engine

    days = iter([dt.date(2026, 1, 1), dt.date(2026, 1, 2), dt.date(2026, 1, 2), dt.date(2026, 1, 2)])
    monkeypatch.setattr(engine, "_utc_day", lambda: next(days))
    computed = []
    original = IronCalcEngine._computed
    monkeypatch.setattr(IronCalcEngine, "_computed", lambda self, *args: computed.append(1) or original(self, *args))
    path = workbook({"A1": 2, "B1": "=A1*21"})
    assert IronCalcEngine().evaluate(path, [ref("B1")]).cells[ref("B1")] == 42
    assert len(computed) == 2


def test_only_expressions_that_are_one_value_whatever_the_cells_hold_skip_sizing():
    from regrade.engines.ironcalc.argument_texts import plainly_scalar as _plainly_scalar

    assert all(_plainly_scalar(t) for t in ("P$4&0", "TODAY()", "YEAR(A1)+1", "'My Data'!B2*2", '"a"&B2'))
    assert not any(_plainly_scalar(t) for t in ("A1:A3", "{1,2}", "SEQUENCE(3)", "Name1", "A1#", 'INDIRECT("A1:A3")',
                                                "MONTH(A1:A3)"))


def test_a_formulon_module_preloaded_here_serves_its_workers_within_their_memory_limit(workbook):
    """Formulon's compiled module, preloaded in the process that forks the workers, is
    inherited by them (no worker compiles it again), and its 4 GiB reservation is then part
    of what a worker inherits: the worker's address-space limit is what it inherited plus
    its memory_mb, not 4 GiB more."""
    import resource

    from regrade.engines.formulon import FormulonEngine
    from tests.conftest import require_engines

    require_engines("formulon")
    path = workbook({"A1": 2, "A2": "=A1*21"})
    engine = IsolatedEngine(FormulonEngine(EngineSettings(timeout_s=60, memory_mb=1024)))
    engine.preload()
    try:
        assert engine.evaluate(path, [ref("A2")]).cells[ref("A2")] == 42.0  # 2 * 21
        with open("/proc/self/statm") as statm:
            here = int(statm.read().split()[0]) * resource.getpagesize()
        with open(f"/proc/{engine._worker.pid}/limits") as limits:
            line = next(row for row in limits if row.startswith("Max address space"))
        beyond = int(line.split()[3]) - here  # the worker's limit past what this process maps
        assert here > 4 * 1024 ** 3  # the module's reservation is here, so the worker inherits it
        assert abs(beyond - 1024 * 1024 ** 2) < 256 * 1024 ** 2  # about memory_mb, not memory_mb + 4 GiB
    finally:
        engine.close()


def test_workbook_values_cross_a_pipe_unchanged():
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from regrade.values import WorkbookFailure, WorkbookValues

    a1, b2, c3 = ref("A1"), ref("B2"), ref("C3", "Other sheet")
    every_kind = WorkbookValues(["Sheet1", "Other sheet"],
                                {a1: 1.5, b2: ExcelError("#N/A"), c3: CannotEvaluate("timeout", "60 s")},
                                {b2: "=NA()"}, {a1: "0.00", b2: "General", c3: "@"})
    same_cells = WorkbookValues(["Sheet1"], {a1: "x", b2: dt.datetime(2024, 1, 2)}, {}, {a1: "General", b2: "yyyy-mm-dd"})
    failed = WorkbookValues(failure=WorkbookFailure("timeout", "60 s"))
    for values in (every_kind, same_cells, failed, WorkbookValues()):
        crossed = pickle.loads(ForkingPickler.dumps(values))
        assert crossed == values
        for by_cell in (crossed.cells, crossed.formulas, crossed.number_formats):
            assert all(type(key) is CellRef for key in by_cell)


def test_an_engine_workers_answer_aligned_to_the_cells_asked_is_the_same_values():
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from regrade.values import AlignedValues, WorkbookFailure, WorkbookValues, aligned_answer, values_from_answer

    a1, b2, c3, d4 = ref("A1"), ref("B2"), ref("C3", "Other sheet"), ref("D4")
    asked = [a1, b2, c3, d4]
    some_absent = WorkbookValues(["Sheet1", "Other sheet"], {b2: ExcelError("#N/A"), a1: None, c3: CannotEvaluate("t", "")},
                                 {b2: "=NA()"}, {a1: "0.00", b2: "General"})
    for values, aligned in ((some_absent, True), (WorkbookValues(["Sheet1"]), True),
                            (WorkbookValues(["Sheet1"], {a1: 1, ref("Z9"): 2}), False),  # a cell not asked
                            (WorkbookValues(["Sheet1"], {a1: 1}, {ref("Z9"): "=1"}), False),
                            (WorkbookValues(failure=WorkbookFailure("timeout", "60 s")), False)):
        answer = pickle.loads(ForkingPickler.dumps(aligned_answer(values, asked)))
        assert isinstance(answer, AlignedValues) == aligned
        back = values_from_answer(answer, asked)
        assert back == values
        assert list(back.cells) == [r for r in asked if r in values.cells] or not aligned
        assert all(type(key) is CellRef for by_cell in (back.cells, back.formulas, back.number_formats) for key in by_cell)
    assert not isinstance(aligned_answer(WorkbookValues(["Sheet1"], {a1: 1}), [a1, a1]), AlignedValues)  # asked twice


def test_graded_boxes_cross_to_an_engine_worker_as_their_boxes_and_come_back_the_same_cells():
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from regrade.grading.policies import get_policy
    from regrade.runs.positions import parse_answer_position
    from regrade.values import CellBoxes, PackedBoxes, packed_cells, unpacked_cells

    class Extent:  # a golden sheet of 2,000 rows and 6 columns, and another
        def __init__(self, name):
            self.name, self.max_row, self.max_column = name, 2000, 6

    position = "'Sheet 1'!A1:C1000,B:B,'Other'!D2"
    boxed = get_policy("spreadsheetbench").targets(position, None, [Extent("Sheet 1"), Extent("Other")])
    by_hand = ([CellRef("Sheet 1", row, column) for row in range(1, 1001) for column in (1, 2, 3)]
               + [CellRef("Sheet 1", row, 2) for row in range(1, 2001)] + [CellRef("Other", 2, 4)])
    assert isinstance(boxed, CellBoxes) and boxed == by_hand and len(parse_answer_position(position).boxes) == 3
    sent = pickle.loads(ForkingPickler.dumps(packed_cells(boxed)))
    assert isinstance(sent, PackedBoxes) and len(ForkingPickler.dumps(packed_cells(boxed))) < 300
    received = unpacked_cells(sent)
    assert received == by_hand and type(received) is list and all(type(cell) is CellRef for cell in received)
    assert unpacked_cells(packed_cells(by_hand)) == by_hand  # a plain list: each cell as a tuple
    for change in (lambda c: c.append(by_hand[0]), lambda c: c.__setitem__(0, by_hand[1]), lambda c: c.sort(),
                   lambda c: c.__delitem__(0), lambda c: c.extend([]), lambda c: c.__iadd__([by_hand[0]])):
        with pytest.raises(TypeError):
            change(boxed)  # what it holds is always what its boxes say
    assert boxed == by_hand and pickle.loads(pickle.dumps(boxed)) == by_hand
