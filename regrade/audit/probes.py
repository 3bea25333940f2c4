"""The probe pack: small workbooks whose right answers were worked out by hand.

``fixtures/probes/expected.json`` holds, per probe, the values its checked cells
must have (``fixtures/make_probes.py`` writes the workbooks and says why each value
is right). Running an engine over the pack gives, per probe, one outcome:

- ``right``: every checked cell equals the expected value (SpreadsheetBench rules);
- ``wrong``: some checked cell holds another value;
- ``abstain``: no cell is wrong, but the engine could not compute some cell.

The outcomes of every engine form a matrix (probe x engine), recorded in
``fixtures/probes/matrix.json`` so that any change of coverage is seen. The engines'
versions at the time are recorded beside it (``engine_versions.json``): a matrix holds
for one release line of each engine (LibreOffice 25.2 computes XLOOKUP, 7.4 does not).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Callable

from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

from regrade.engines.base import Engine
from regrade.values import CannotEvaluate, CellRef, CellResult, ExcelError
from regrade.grading.policies import get_policy

PACK = Path(__file__).resolve().parents[2] / "fixtures" / "probes"
MATRIX = PACK / "matrix.json"
VERSIONS = PACK / "engine_versions.json"
OUTCOMES = ("right", "wrong", "abstain")


def load_matrix() -> dict[str, dict[str, str]]:
    """The recorded matrix (probe -> engine -> outcome); empty when none is recorded."""
    return json.loads(MATRIX.read_text(encoding="utf-8")) if MATRIX.is_file() else {}


def record_matrix(matrix: dict[str, dict[str, str]], engines: list[Engine]) -> None:
    """Write the matrix and the versions of the engines that produced it.

    Engines not run this time keep their recorded outcomes and versions.
    """
    recorded = load_matrix()
    merged = {probe: {**recorded.get(probe, {}), **outcomes} for probe, outcomes in matrix.items()}
    MATRIX.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    versions = {**_recorded_versions(), **{engine.name: engine.version() for engine in engines}}
    VERSIONS.write_text(json.dumps(versions, indent=1, sort_keys=True) + "\n")


def _recorded_versions() -> dict[str, str]:
    return json.loads(VERSIONS.read_text(encoding="utf-8")) if VERSIONS.is_file() else {}


def _release_line(version: str) -> str:
    found = re.search(r"\d+\.\d+", version)  # "LibreOffice 25.2.3.2" -> "25.2"
    return found.group(0) if found else version


def version_mismatches(engines: list[Engine]) -> dict[str, tuple[str, str]]:
    """Engines whose release line differs from the one the matrix was recorded with: name -> (recorded, here)."""
    recorded = _recorded_versions()
    return {engine.name: (recorded.get(engine.name, "none"), engine.version()) for engine in engines
            if _release_line(recorded.get(engine.name, "none")) != _release_line(engine.version())}


def load_expected(pack: Path = PACK) -> dict[str, dict]:
    path = pack / "expected.json"
    if not path.is_file():
        raise ValueError(f"{pack} holds no expected.json: regenerate it with fixtures/make_probes.py")
    return json.loads(path.read_text(encoding="utf-8"))


def _expected_value(value: object) -> CellResult:
    if isinstance(value, dict) and "error" in value:
        return ExcelError(value["error"])
    return value  # type: ignore[return-value]


def _ref(text: str) -> CellRef:
    sheet, _, coordinate = text.rpartition("!")
    column, row = coordinate_from_string(coordinate)
    return CellRef(sheet, row, column_index_from_string(column))


def probe_outcome(engine: Engine, path: Path, checks: dict[str, object], rules: Counter[str] | None = None) -> str:
    """right, wrong or abstain; ``rules`` counts each abstention by rule id (by reason where
    no rule made it), as "engine: id"."""
    policy = get_policy("spreadsheetbench")
    refs = {_ref(text): _expected_value(value) for text, value in checks.items()}
    values = engine.evaluate(path, list(refs))
    if values.failure is not None:
        if rules is not None:
            rules[f"{engine.name}: {values.failure.reason}"] += 1
        return "abstain"
    outcome = "right"
    for ref, expected in refs.items():
        value = values.cells.get(ref, CannotEvaluate("missing-sheet"))
        if isinstance(value, CannotEvaluate):
            if rules is not None:
                rules[f"{engine.name}: {value.key}"] += 1
            outcome = "abstain"
        elif not policy.equal(expected, value):
            return "wrong"
    return outcome


def run_pack(
    engines: list[Engine], pack: Path = PACK, on_probe: Callable[[str], None] | None = None,
    rules: Counter[str] | None = None,
) -> dict[str, dict[str, str]]:
    """The matrix: probe id -> engine name -> outcome (``rules``: see :func:`probe_outcome`)."""
    matrix: dict[str, dict[str, str]] = {}
    for probe_id, spec in load_expected(pack).items():
        if on_probe is not None:
            on_probe(probe_id)
        matrix[probe_id] = {e.name: probe_outcome(e, pack / f"{probe_id}.xlsx", spec["checks"], rules) for e in engines}
    return matrix


def scores(matrix: dict[str, dict[str, str]]) -> dict[str, dict[str, int]]:
    """Per engine, how many probes had each outcome."""
    totals: dict[str, dict[str, int]] = {}
    for outcomes in matrix.values():
        for engine, outcome in outcomes.items():
            totals.setdefault(engine, dict.fromkeys(OUTCOMES, 0))[outcome] += 1
    return totals
