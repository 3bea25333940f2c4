"""Grading on a Dask cluster (regrade.run.dask_cluster): the local pool's records, a killed worker losing nothing."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from regrade.run import RescoreSettings, rescore_run
from regrade.runs.cases import Case, RunError, golden_files, input_file, load_dataset
from tests.conftest import SHARED, SHARED_ABSENT, require_engines
from tests.test_runner import demo_cases

pytestmark = pytest.mark.slow  # the fast tier (-m 'not slow') leaves this module out

distributed = pytest.importorskip("distributed") if not os.environ.get("CI") else __import__("distributed")  # CI installs it
THREE = ("ironcalc", "libreoffice", "formulon")
SETTINGS = RescoreSettings("spreadsheetbench", "cached", THREE, 60.0, quorum=2)


@pytest.fixture(autouse=True)
def engines():
    require_engines(*THREE)


def test_a_local_cluster_gives_the_local_pool_s_records_on_the_demo():
    cases = demo_cases()
    local = rescore_run(cases, SETTINGS, workers=2)
    on_dask = rescore_run(cases, SETTINGS, workers=2, executor="dask")
    assert on_dask == local
    assert {r.verdict for r in on_dask} >= {"artifact", "confirmed-fail", "confirmed-pass", "false-pass"}


def small_shared_cases(count: int) -> list[Case]:
    """The first ``count`` cases of the shared split, each answer against itself and the task's
    input against it, among workbooks under 200 KB (no case near a time limit on a busy machine)."""
    corpus = SHARED
    cases: list[Case] = []
    for record in load_dataset(corpus):
        task = str(record["id"])
        for number, answer in golden_files(corpus, task).items():
            start = input_file(answer, task, number)
            if start is None or max(answer.stat().st_size, start.stat().st_size) > 200_000:
                continue
            common = {"task_id": task, "case": number, "answer_path": answer,
                      "answer_position": record["answer_position"], "answer_sheet": record.get("answer_sheet")}
            cases += [Case(condition="answers", output_path=answer, **common),
                      Case(condition="inputs", output_path=start, **common)]
            if len(cases) >= count:
                return cases
    return cases


@pytest.mark.skipif(not (SHARED / "dataset.json").is_file(), reason=SHARED_ABSENT)
def test_a_local_cluster_gives_the_local_pool_s_records_on_100_shared_cases():
    cases = small_shared_cases(100)
    assert len(cases) == 100
    assert rescore_run(cases, SETTINGS, workers=2, executor="dask") == rescore_run(cases, SETTINGS, workers=2)


def test_a_dask_worker_killed_mid_run_loses_no_case():
    import dask
    from distributed import Client, LocalCluster

    cases = demo_cases()
    expected = rescore_run(cases, SETTINGS, workers=2)
    with dask.config.set({"distributed.worker.daemon": False}), \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, host="127.0.0.1") as cluster, \
            Client(cluster) as client:
        done: list[int] = []
        records: list = []
        run = threading.Thread(target=lambda: records.extend(rescore_run(
            cases, SETTINGS, workers=2, executor="dask", scheduler=cluster.scheduler_address,
            on_record=lambda index, record, cached: done.append(index))))
        run.start()
        deadline = time.monotonic() + 300
        while len(done) < 5 and run.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(done) < len(cases), "the run ended before a worker could be killed"
        pids = client.run(os.getpid)
        os.kill(next(iter(pids.values())), signal.SIGKILL)  # one worker, mid-case
        run.join(600)
        assert not run.is_alive()
    assert sorted(done) == list(range(len(cases)))  # every case, once
    assert records == expected
    # the killed worker's case worker and its engines (soffice too) do not outlive it
    wait_until = time.monotonic() + 60  # the orphan check, then each engine closed
    while _cluster_processes() and time.monotonic() < wait_until:
        time.sleep(0.5)
    assert _cluster_processes() == []


def _cluster_processes() -> list[str]:
    """The processes left by this test process's Dask clusters (their environment names it),
    but for multiprocessing's resource tracker, which ends when the last process holding its
    pipe does (here, the test process itself)."""
    mark = f"__DASK_PARENT_PID={os.getpid()}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if mark in environ.read().split(b"\0"):
                    with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                        command = cmdline.read().replace(b"\0", b" ")[:120].decode(errors="replace")
                    if "multiprocessing.resource_tracker" not in command:
                        found.append(f"{name}: {command}")
        except OSError:
            continue
    return found


def test_dask_missing_is_one_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: import fails
    with pytest.raises(RunError, match=r"pip install 'regrade\[dask\]'"):
        rescore_run(demo_cases()[:2], SETTINGS, workers=2, executor="dask")


def test_controls_checked_on_a_local_cluster_make_the_local_pool_s_pack(tmp_path, monkeypatch):
    import regrade.run.dask_cluster
    from regrade.audit.generated import generate_pack
    from tests.conftest import DEMO

    sent: list[int] = []
    grade_on_dask = regrade.run.dask_cluster.grade_on_dask
    monkeypatch.setattr(regrade.run.dask_cluster, "grade_on_dask", lambda cases, todo, *rest: (
        sent.extend(todo), grade_on_dask(cases, todo, *rest))[1])
    dataset = DEMO / "dataset"
    local = generate_pack(dataset, tmp_path / "local", SETTINGS, tasks=2, seed=0, workers=2)
    assert sent == []
    on_dask = generate_pack(dataset, tmp_path / "dask", SETTINGS, tasks=2, seed=0, workers=2, executor="dask")
    assert len(sent) >= len(local.kept) >= 10  # every control checked went to the cluster; two tasks, 3 cases each
    assert on_dask.digest == local.digest  # the same files kept, the same not_checked, byte for byte
