"""Hostile and broken workbooks: refused with a typed reason, graded otherwise, never harmful.

The corpus (tests/hostile_corpus.py) is generated into a temporary folder; its two slow
kinds (a million filled rows, 10,000 sheets) are left to bench/hostile.py here and
appear below only where a limit must trip on them.
"""

from __future__ import annotations

import http.server
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from regrade.engines.base import EngineSettings
from regrade.values import CellRef
from regrade.engines.isolation import IsolatedEngine
from regrade.engines.registry import ENGINES, get_engine
from regrade.workbook.screening import Limits, screen
from regrade.results.provenance import sha256_file
from tests.conftest import require_engines
from tests.hostile_corpus import HEAVY, answer_book, build, formula_cell, kinds, package, worksheet, cell_rows

pytestmark = pytest.mark.slow  # the fast tier (-m 'not slow') leaves this module out

ROOT = Path(__file__).resolve().parents[1]
A1 = CellRef("Sheet1", 1, 1)


def fingerprints(folder: Path) -> dict[Path, tuple]:
    """sha256 and mtime of every regular file; (kind, mtime) of everything else, not followed."""
    found = {}
    for path in sorted(folder.iterdir()):
        info = os.lstat(path)
        regular = stat.S_ISREG(info.st_mode)
        found[path] = (sha256_file(path) if regular else stat.S_IFMT(info.st_mode), info.st_mtime_ns)
    return found


def write_manifest(folder: Path, golden: Path, made) -> Path:
    manifest = folder / "manifest.jsonl"
    with manifest.open("w", encoding="utf-8") as handle:
        for kind, path in made:
            handle.write(json.dumps({"stack": "hostile", "benchmark": "corpus", "condition": "hostile",
                                     "task_id": kind.name, "case": 1, "output_path": str(path),
                                     "answer_path": str(golden), "answer_position": "A1"}) + "\n")
    return manifest


def rescore(manifest: Path, output: Path, *options: str, cache: Path | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "regrade.cli", "rescore", "--manifest", str(manifest), "-o", str(output), *options]
    command += ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    golden, made = build(folder, {k.name for k in kinds() if k.name not in HEAVY})
    return folder, golden, made


def test_the_corpus_has_at_least_fifty_kinds():
    assert len(kinds()) >= 50
    assert len({k.name for k in kinds()}) == len(kinds())


def test_screening_refuses_each_hostile_file_with_its_reason(corpus):
    folder, _, made = corpus
    refused = {"unreadable-output", "encrypted", "legacy-format", "zip-bomb", "hostile-xml", "missing-output"}
    checked = 0
    for kind, path in made:
        if kind.expected in refused and kind.stage == "screen":
            failure = screen(path).failure
            assert failure is not None, kind.name
            assert failure.reason == kind.expected.replace("missing-output", "missing-file"), (kind.name, failure)
            checked += 1
    assert checked >= 25


def test_a_rescore_of_the_corpus_completes_with_each_outcome_and_changes_no_file(corpus, tmp_path):
    require_engines("ironcalc", "libreoffice")
    folder, golden, made = corpus
    manifest = write_manifest(folder, golden, made)
    before = fingerprints(folder)
    done = rescore(manifest, tmp_path / "results.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()[1:]]
    outcomes = {r["task_id"]: (r["verdict"], r["reasons"], r["message"]) for r in records}
    assert len(outcomes) == len(made)
    for kind, _ in made:
        verdict, reasons, message = outcomes[kind.name]
        if kind.expected in VERDICT_NAMES:
            assert verdict == kind.expected, (kind.name, outcomes[kind.name])
        else:
            assert verdict == "confirmed-fail" and kind.expected in reasons, (kind.name, outcomes[kind.name])
            assert message, kind.name  # a clear message, never a bare reason
    assert fingerprints(folder) == before  # no input file changes, not even its mtime
    assert not Path("/tmp/regrade-evil.txt").exists()  # the traversal part was never extracted


VERDICT_NAMES = {"confirmed-pass", "confirmed-fail", "artifact", "false-pass", "unevaluable", "engines-disagree",
                 "invalid-golden"}


def test_limits_trip_on_files_a_smaller_limit_refuses(tmp_path):
    book = tmp_path / "book.xlsx"
    book.write_bytes(answer_book(*[f'<c r="B{n}"><v>{n}</v></c>' for n in range(2, 3000)]))
    inflated = sum(i.file_size for i in zipfile.ZipFile(book).infolist())
    assert screen(book).failure is None
    assert screen(book, Limits(max_file_bytes=1000)).failure.reason == "too-large"
    assert screen(book, Limits(max_inflated_bytes=inflated - 1)).failure.reason == "zip-bomb"
    assert screen(book, Limits(max_parts=3)).failure.reason == "zip-bomb"
    ratio = screen(book, Limits(max_ratio=2.0, ratio_floor_bytes=1000)).failure
    assert ratio.reason == "zip-bomb" and "compressed" in ratio.detail


@pytest.fixture(scope="module")
def million_rows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dense")
    _, made = build(folder, {"dense-million-rows"})
    return made[0][1]


def test_a_real_workbook_trips_the_time_limit(million_rows):
    # openpyxl reads 1,048,576 cells twice (values and formulas): far more than a second anywhere
    failure = IsolatedEngine(get_engine("cached", EngineSettings(timeout_s=1))).evaluate(million_rows, [A1]).failure
    assert failure.reason == "timeout" and "more than 1 s of CPU time" in failure.detail


def test_a_real_workbook_trips_the_memory_limit(million_rows):
    # pycel loads the whole workbook with openpyxl: a million cells take well over 150 MB (the
    # value-only reading streams the rows it needs and no longer gets near the limit)
    failure = IsolatedEngine(get_engine("pycel", EngineSettings(timeout_s=120, memory_mb=150))).evaluate(million_rows, [A1]).failure
    assert failure.reason == "memory-limit" and "150 MB" in failure.detail


def test_the_rescore_of_a_case_whose_reading_times_out_is_unevaluable(million_rows, tmp_path):
    golden = tmp_path / "golden.xlsx"
    golden.write_bytes(answer_book())
    dense = next(k for k in kinds() if k.name == "dense-million-rows")
    manifest = write_manifest(tmp_path, golden, [(dense, million_rows)])
    done = rescore(manifest, tmp_path / "r.jsonl", "--timeout", "1", "--engines", "ironcalc")
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[1])
    assert (record["verdict"], record["reasons"]) == ("unevaluable", ["timeout"])


class Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        Recorder.requests.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"42")

    def log_message(self, *args):
        pass


def test_no_engine_reaches_the_network(tmp_path):
    """A server on loopback counts requests; workbooks that would make an engine fetch from it
    (WEBSERVICE, a web query refreshed on load, an external link, INDIRECT to a URL) must not."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    Recorder.requests.clear()
    books = {
        "webservice.xlsx": package([("Sheet1", worksheet(cell_rows(
            formula_cell("A1", f'_xlfn.WEBSERVICE("{url}ws")', "0") + formula_cell("B1", f'WEBSERVICE("{url}b")', "0"))))]),
        "indirect.xlsx": answer_book(formula_cell("B2", f"INDIRECT(\"'{url}[x.xlsx]Sheet1'!A1\")", "0")),
        "hyperlink.xlsx": answer_book(formula_cell("B2", f'HYPERLINK("{url}h",1)', "1")),
    }
    try:
        for name, data in books.items():
            (tmp_path / name).write_bytes(data)
        for engine_name in ENGINES:
            engine = get_engine(engine_name)
            if engine.unavailable_reason() is not None:
                continue
            for name in books:
                engine.evaluate(tmp_path / name, [A1, CellRef("Sheet1", 1, 2), CellRef("Sheet1", 2, 2)])
            getattr(engine, "close", lambda: None)()
        time.sleep(0.5)
        assert Recorder.requests == []
    finally:
        server.shutdown()


def test_libreoffice_runs_without_a_network_where_the_system_allows(tmp_path):
    require_engines("libreoffice")
    from regrade.engines.libreoffice.engine import network_sandbox

    if not network_sandbox():
        pytest.skip("unshare cannot make a network namespace here")
    # the sandbox itself: inside it, even loopback is down
    probe = subprocess.run([*network_sandbox(), sys.executable, "-c",
                            "import socket; socket.create_connection(('127.0.0.1', 9), 2)"], capture_output=True, text=True)
    assert probe.returncode != 0 and "unreachable" in probe.stderr.lower()


def final_records(path: Path) -> list[str]:
    """The results file without the provenance record's timestamp and the run's measured work
    (the engines' CPU and the wall time differ from run to run; the verdicts may not)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    provenance = json.loads(lines[0])
    provenance.pop("created", None)
    provenance.pop("engine_work", None)
    return [json.dumps(provenance, sort_keys=True), *lines[1:]]


def test_a_run_killed_at_a_random_point_resumes_to_identical_results(tmp_path):
    """SIGKILL mid-run, then the same command again: the results equal an uninterrupted run's,
    byte for byte apart from the provenance timestamp; a complete older results file stays in
    place until the new one is complete."""
    from tests.conftest import DEMO

    manifest = tmp_path / "manifest.jsonl"
    dataset = json.loads((DEMO / "dataset" / "dataset.json").read_text())
    with manifest.open("w") as handle:
        for record in dataset:
            for output in sorted((DEMO / "outputs").glob(f"*/*_{record['id']}_output.xlsx")):  # every condition
                number = output.name.split("_", 1)[0]
                handle.write(json.dumps({"stack": "demo", "benchmark": "spreadsheetbench",
                                         "condition": output.parent.name, "task_id": str(record["id"]),
                                         "case": int(number), "output_path": str(output),
                                         "answer_path": str(DEMO / "dataset" / "spreadsheet" / str(record["id"])
                                                            / f"{number}_{record['id']}_answer.xlsx"),
                                         "answer_position": record["answer_position"]}) + "\n")
    options = ["--engines", "ironcalc", "--workers", "2"]
    whole = tmp_path / "whole.jsonl"
    cache = tmp_path / "cache"
    assert rescore(manifest, whole, *options, cache=cache).returncode == 0
    shutil.rmtree(cache)  # the interrupted run starts as cold, with the same settings

    results = tmp_path / "results.jsonl"
    results.write_text("an older, complete results file\n")
    command = [sys.executable, "-m", "regrade.cli", "rescore", "--manifest", str(manifest), "-o", str(results),
               *options, "--cache-dir", str(cache)]
    finished = random.Random(20261130).randint(3, 30)  # seeded: kill after this many of the 45 cases
    partial = results.with_name(f".{results.name}.partial")
    killed = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 300
    while killed.poll() is None and time.monotonic() < deadline:
        if partial.exists() and len(partial.read_text(encoding="utf-8").splitlines()) >= finished:
            break
        time.sleep(0.01)
    assert killed.poll() is None, "the run ended before it could be killed"
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert results.read_text() == "an older, complete results file\n"  # never truncated or half-written
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert cache.is_dir()  # the killed run had finished some cases
    assert final_records(results) == final_records(whole)


def test_libreoffice_runs_under_its_memory_limit(tmp_path):
    require_engines("libreoffice")
    from regrade.engines.libreoffice.engine import LibreOfficeEngine

    book = tmp_path / "book.xlsx"
    book.write_bytes(answer_book())
    starved = LibreOfficeEngine(EngineSettings(timeout_s=60, memory_mb=300))  # soffice alone maps about 1 GB
    try:
        failure = starved.evaluate(book, [A1]).failure
    finally:
        starved.close()
    assert failure is not None and failure.reason == "crashed"
    roomy = LibreOfficeEngine(EngineSettings(timeout_s=60, memory_mb=2048))
    try:
        assert roomy.evaluate(book, [A1]).cells == {A1: 42.0}
    finally:
        roomy.close()
