import os
from pathlib import Path
from typing import Callable

import pytest

from regrade.xml_parser import let_openpyxl_use_the_c_parser

let_openpyxl_use_the_c_parser()  # openpyxl reads as it does in the regrade command (before any test imports it)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo-run"
SHARED = ROOT.parent / "shared" / "spreadsheetbench"  # the shared split, beside a clone; a fresh clone has none
SHARED_ABSENT = "the shared SpreadsheetBench split is absent"
VERIFIED = ROOT.parent / "shared" / "spreadsheetbench-verified"  # the Verified release's tasks of that split
VERIFIED_ABSENT = "the shared SpreadsheetBench split is absent (its Verified part)"  # fails under CI, as above


def pytest_collection_modifyitems(items):
    """Mark each test by what it needs, read from its own source and its module's: ``shared`` (the
    shared SpreadsheetBench split) and ``engines`` (a full engine run), so ``-m "not engines"`` or
    ``-m "not shared"`` select around them; ``slow`` is marked by hand."""
    import inspect

    sources: dict[object, str] = {}
    for item in items:
        module = item.module
        if module not in sources:
            sources[module] = inspect.getsource(module)
        function = getattr(item, "function", None)
        own = inspect.getsource(function) if function is not None else ""
        if "SHARED" in own or "VERIFIED" in own or "SHARED_ABSENT" in sources[module].split("def test_")[0]:
            item.add_marker(pytest.mark.shared)
        if "require_engines(" in own or "get_engine(" in own or "rescore_run(" in own or "open_engine(" in own or "shared_engine" in own:
            item.add_marker(pytest.mark.engines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test skipped because the shared split is absent fails under CI, which has it."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and SHARED_ABSENT in str(report.longrepr):
        report.outcome = "failed"


@pytest.fixture
def workbook(tmp_path):
    """Write a one-sheet workbook with openpyxl (formulas get no cached values)."""
    import openpyxl

    def make(cells: dict, name: str = "book.xlsx", title: str = "Sheet1") -> Path:
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = title
        for coordinate, value in cells.items():
            sheet[coordinate] = value
        path = tmp_path / name
        book.save(path)
        return path

    return make


def edit_first_sheet(path: Path, change: Callable[[str], str]) -> None:
    """The workbook at ``path`` written again with its first sheet's XML passed through ``change``."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    parts["xl/worksheets/sheet1.xml"] = change(parts["xl/worksheets/sheet1.xml"].decode()).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


def make_shared(path: Path, column: str, rows: range, text: str) -> None:
    """Cells ``column`` ``rows`` of the first sheet (formulas openpyxl wrote, with no cached value)
    made one shared formula whose first cell holds ``text``, as Excel writes one (openpyxl does not)."""
    import re

    def shared(sheet: str) -> str:
        area = f"{column}{rows[0]}:{column}{rows[-1]}"
        for row in rows:
            element = f'<f t="shared" ref="{area}" si="0">{text}</f>' if row == rows[0] else '<f t="shared" si="0"/>'
            sheet, count = re.subn(rf'<c r="{column}{row}"([^>]*)><f>[^<]*</f><v */></c>', rf'<c r="{column}{row}"\1>{element}</c>', sheet)
            assert count == 1
        return sheet

    edit_first_sheet(path, shared)


def require_engines(*names: str) -> None:
    """Skip when an engine is missing here, but fail under CI, which installs them all."""
    import os

    from regrade.engines.registry import get_engine

    missing = {name: get_engine(name).unavailable_reason() for name in names}
    missing = {name: why for name, why in missing.items() if why}
    if not missing:
        return
    message = "; ".join(f"{name}: {why}" for name, why in missing.items())
    if os.environ.get("CI"):
        pytest.fail(f"CI must have every engine: {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def shared_engine():
    """An engine in this process, opened once for the whole session per name and settings, so that
    LibreOffice starts once rather than once per test (about a second each). For tests that only
    compute files: a test of starting, stopping, limits or restarts opens its own engine."""
    from regrade.engines.base import EngineSettings
    from regrade.engines.registry import get_engine

    opened: dict = {}

    def engine(name: str, settings: EngineSettings = EngineSettings()):
        require_engines(name)
        if (name, settings) not in opened:
            opened[(name, settings)] = get_engine(name, settings)
        return opened[(name, settings)]

    yield engine
    for each in opened.values():
        each.close()


@pytest.fixture(scope="session")
def compiled_modules(tmp_path_factory):
    """One folder of compiled WebAssembly for the whole session (regrade.engines.wasm_cache):
    each process a test starts compiles Formulon's module once per session, not once a test."""
    return tmp_path_factory.mktemp("compiled-modules")


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch, compiled_modules):
    """Every test gets its own cache folder, outside its ``tmp_path``: none reads or fills the
    user's. Formulon's compiled module is the session's (tests/test_wasm_cache.py tests that
    cache on folders of its own)."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    (cache / "regrade").mkdir()
    (cache / "regrade" / "wasm").symlink_to(compiled_modules, target_is_directory=True)


def demo_task_dataset(root: Path, task: str = "59511") -> Path:
    """One task of the demo run (59511: three test cases) as a SpreadsheetBench folder at ``root``."""
    import json
    import shutil

    shutil.copytree(DEMO / "dataset" / "spreadsheet" / task, root / "spreadsheet" / task)
    records = [r for r in json.loads((DEMO / "dataset" / "dataset.json").read_text()) if str(r["id"]) == task]
    (root / "dataset.json").write_text(json.dumps(records))
    return root
