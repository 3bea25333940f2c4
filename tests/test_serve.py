"""`regrade serve` end to end on loopback: the real server (uvicorn, a subprocess) in a temporary
data folder, the demo run submitted over HTTP, followed and fetched; a second submission answered
from the results cache; SIGKILL mid-job and a restart; twenty submissions at once; requests
without the token, hostile uploads and paths outside the roots refused with their error ids; the
served OpenAPI document the one checked into docs/."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from regrade.service.client import Client, ServerError
from tests.conftest import DEMO, ROOT, require_engines

pytest.importorskip("fastapi", reason="regrade serve needs fastapi and uvicorn: pip install -e '.[test]'")
DEMO_CONDITIONS = ("none", "community", "anthropic")


class Server:
    """A `regrade serve` subprocess over ``data``, reading runs under ``root``."""

    def __init__(self, data: Path, root: Path, port: int | None = None, more_roots: tuple[Path, ...] = (),
                 options: tuple[str, ...] = ()):
        self.data, self.roots, self.options = data, (root, *more_roots), options
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        roots = [f"--root={root}" for root in self.roots]
        self.process = subprocess.Popen([sys.executable, "-m", "regrade", "serve", "--data", str(self.data), *roots,
                                         "--port", str(self.port), *self.options],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.data.parent,
                                        start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                Client(self.url, "").json("GET", "/api/health")
                return self
            except ServerError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited: {self.process.stdout.read().decode()}")
                time.sleep(0.2)
        self.stop()  # never left running by a test that could not use it
        raise RuntimeError("the server did not answer within 60 s")

    def client(self) -> Client:
        return Client(self.url, (self.data / "token").read_text().strip())

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)  # its engines' workers too
            self.process.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_engines("ironcalc")
    folder = tmp_path_factory.mktemp("serve")
    (folder / "runs").mkdir()
    made = Server(folder / "data", DEMO, more_roots=(folder / "runs",)).start()
    yield made
    made.stop()


def demo_request(engines=("ironcalc",), **more) -> dict:
    return {"kind": "rescore", "dataset": str(DEMO / "dataset"), "engines": list(engines),
            "conditions": {c: str(DEMO / "outputs" / c) for c in DEMO_CONDITIONS}, **more}


def comparable(lines: bytes) -> list[dict]:
    """A results file's case records, apart from what differs between two runs of one input (paths aside)."""
    return [{k: v for k, v in json.loads(line).items()} for line in lines.splitlines()[1:]]


@pytest.mark.slow  # several engine starts: seconds on two cores
def test_a_run_submitted_over_http_gives_the_results_rescore_gives_and_again_from_the_cache(server, tmp_path):
    from regrade import api

    client = server.client()
    job = client.submit(demo_request())  # the first job of a new data folder: its results cache is empty
    assert job["state"] in ("queued", "running") and job["total"] in (0, 45)
    seen = []
    finished = client.wait(job["id"], lambda state: seen.append((state["state"], state["done"], state["total"])))
    assert finished["state"] == "done" and (finished["done"], finished["total"]) == (45, 45), finished
    assert all(done <= total or total == 0 for _, done, total in seen)
    served = comparable(client.results(job["id"]))
    api.rescore(DEMO / "dataset", {c: DEMO / "outputs" / c for c in DEMO_CONDITIONS}, engines=["ironcalc"],
                output=tmp_path / "local.jsonl", cache=False)
    assert served == comparable((tmp_path / "local.jsonl").read_bytes())  # the same records, field for field
    assert sum(r["verdict"] == "artifact" for r in served) == 18
    again = client.wait(client.submit(demo_request())["id"])
    assert again["state"] == "done"
    log = client.json("GET", f"/api/jobs/{again['id']}")["log"]
    assert any("45 of 45 cases from the results cache" in line for line in log), log
    report = client.call("GET", f"/api/jobs/{job['id']}/report").decode()
    assert "<!DOCTYPE html>" in report and "grader artifacts" in report
    listed = client.json("GET", "/api/results")
    assert {r["id"] for r in listed} >= {job["id"], again["id"]}
    compared = json.loads(client.call("GET", f"/api/compare?results={job['id']}&baseline=none&format=json"))
    assert {r["condition"] for r in compared["rows"]} == {"community", "anthropic"}


def test_requests_without_the_token_and_paths_outside_the_roots_are_refused(server, tmp_path):
    anonymous = Client(server.url, "")
    for method, path in (("GET", "/api/jobs"), ("POST", "/api/jobs"), ("GET", "/api/results"), ("GET", "/")):
        with pytest.raises(ServerError) as refused:
            anonymous.call(method, path, b"{}" if method == "POST" else None)
        assert (refused.value.status, refused.value.id) == (401, "unauthorized")
    with pytest.raises(ServerError) as wrong:
        Client(server.url, "not-the-token").json("GET", "/api/jobs")
    assert wrong.value.id == "unauthorized"
    client = server.client()
    outside = {**demo_request(), "dataset": str(tmp_path)}
    with pytest.raises(ServerError) as refused:
        client.submit(outside)
    assert (refused.value.status, refused.value.id) == (403, "path-outside-roots")
    climbing = {**demo_request(), "dataset": str(DEMO / "dataset" / ".." / ".." / "..")}
    with pytest.raises(ServerError) as refused:
        client.submit(climbing)
    assert refused.value.id == "path-outside-roots"
    with pytest.raises(ServerError) as refused:
        client.json("GET", "/api/jobs/jnosuchjob")
    assert (refused.value.status, refused.value.id) == (404, "job-not-found")
    with pytest.raises(ServerError) as refused:
        client.json("POST", "/api/jobs", {"kind": "rescore", "dataset": str(DEMO / "dataset")})
    assert (refused.value.status, refused.value.id) == (400, "bad-request")
    assert (server.data / "token").stat().st_mode & 0o777 == 0o600


def zipped(members: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)  # a symbolic link
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_hostile_uploads_are_refused_whole_and_nothing_is_written_outside_the_data_folder(server, tmp_path):
    client = server.client()
    before = sorted(p.name for p in (server.data / "uploads").iterdir()) if (server.data / "uploads").exists() else []
    cases = {"zip-unsafe-path": zipped({"ok.txt": b"x", "../../escaped.txt": b"x"}),
             "zip-link": zipped({"ok.txt": b"x"}, links=("link",)),
             "zip-bomb": zipped({"zeros.bin": bytes(64 * 1024 * 1024)}),
             "not-a-zip": b"this is no zip archive"}
    for error_id, body in cases.items():
        with pytest.raises(ServerError) as refused:
            client.call("POST", "/api/uploads", body, "application/zip")
        assert refused.value.id == error_id
    after = sorted(p.name for p in (server.data / "uploads").iterdir()) if (server.data / "uploads").exists() else []
    assert after == before  # nothing kept of a refused upload, not even a partial folder
    assert not (server.data.parent / "escaped.txt").exists() and not (server.data / "escaped.txt").exists()


def test_a_run_uploaded_as_zips_is_rescored(server):
    client = server.client()
    dataset = client.upload(DEMO / "dataset")
    conditions = {c: client.upload(DEMO / "outputs" / c) for c in DEMO_CONDITIONS}
    assert dataset.startswith("upload:")
    finished = client.wait(client.submit({"kind": "rescore", "dataset": dataset, "conditions": conditions,
                                          "engines": ["ironcalc"]})["id"])
    assert finished["state"] == "done" and finished["total"] == 45


@pytest.mark.slow
def test_a_job_is_cancelled_and_twenty_submissions_at_once_all_finish(server):
    client = server.client()
    queued = [client.submit(demo_request(cache=False)) for _ in range(2)]
    cancelled = client.json("DELETE", f"/api/jobs/{queued[1]['id']}")
    assert cancelled["state"] in ("cancelled", "running")
    assert client.wait(queued[1]["id"])["state"] == "cancelled"
    client.wait(queued[0]["id"])
    jobs: list[dict] = []

    def submit() -> None:
        jobs.append(server.client().submit(demo_request()))

    threads = [threading.Thread(target=submit) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({j["id"] for j in jobs}) == 20
    finished = [client.wait(j["id"]) for j in jobs]
    assert all((f["state"], f["done"], f["total"]) == ("done", 45, 45) for f in finished)
    for job in jobs[:3]:  # no case lost, none twice
        keys = [(r["condition"], r["task_id"], r["case"]) for r in comparable(client.results(job["id"]))]
        assert len(keys) == len(set(keys)) == 45
    peak_kb = int(next(line.split()[1] for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines()
                       if line.startswith("VmHWM")))
    assert peak_kb < 2 * 1024 * 1024, f"the server's peak memory is {peak_kb} kB"


def test_the_served_openapi_document_is_the_one_in_docs(server):
    served = server.client().json("GET", "/api/openapi.json")
    served["info"]["version"] = "VERSION"
    checked_in = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert served == checked_in, "regenerate it: python3 docs/generate.py"
    assert {"/api/jobs", "/api/jobs/{job_id}", "/api/jobs/{job_id}/results", "/api/jobs/{job_id}/report",
            "/api/uploads"} <= set(served["paths"])


@pytest.mark.slow
def test_a_server_killed_mid_job_resumes_it_at_the_next_start_with_every_case_once(tmp_path):
    require_engines("ironcalc", "libreoffice", "formulon")
    first = Server(tmp_path / "data", DEMO).start()
    try:  # a failed check here must not leave the server running
        client = first.client()
        job = client.submit(demo_request(engines=("ironcalc", "libreoffice", "formulon")))
        deadline = time.monotonic() + 120
        while (state := client.json("GET", f"/api/jobs/{job['id']}"))["done"] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state["state"] == "running" and 5 <= state["done"] < 45, state
    finally:
        first.stop(signal.SIGKILL)
    second = Server(tmp_path / "data", DEMO, first.port)
    try:
        second.start()
        finished = second.client().wait(job["id"])
        assert (finished["state"], finished["done"], finished["total"], finished["runs"]) == ("done", 45, 45, 2)
        keys = [(r["condition"], r["task_id"], r["case"]) for r in comparable(second.client().results(job["id"]))]
        assert len(keys) == len(set(keys)) == 45
        log = second.client().json("GET", f"/api/jobs/{job['id']}")["log"]
        assert any("queued again, to resume from the results cache" in line for line in log)
    finally:
        second.stop()


def test_any_request_body_or_job_id_gets_an_answer_the_openapi_document_allows(server):
    # property-based: whatever JSON is posted as a job, and whatever a job id is, the server
    # answers with a status its OpenAPI document lists and, for an error, a body with a stable id
    # and a message: never a 500, never an unlisted status
    import urllib.parse

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    client = server.client()
    document = client.json("GET", "/api/openapi.json")
    allowed = {int(code) for code in document["paths"]["/api/jobs"]["post"]["responses"]}
    scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
    bodies = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["kind", "dataset", "conditions", "engines", "baseline", "cache", "x"]), inner, max_size=4),
        max_leaves=8)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=bodies, job_id=st.text(min_size=1, max_size=30))
    def check(body, job_id):
        try:
            client.json("POST", "/api/jobs", body)
            status = 202
        except ServerError as exc:
            status = exc.status or 0
            assert exc.id and exc.message and exc.id != "http-error"
        assert status in allowed
        with pytest.raises(ServerError) as missing:
            client.json("GET", "/api/jobs/" + urllib.parse.quote(job_id, safe=""))
        assert missing.value.status in (404, 400) and missing.value.id in ("job-not-found", "not-found", "bad-request")

    check()


@pytest.mark.slow
def test_the_pages_render_in_headless_chromium(server):
    # the job list, a job's page with its progress, the results list and a comparison's page, as a
    # browser signed in by /login gets them; the job page's picture is the one in docs/serve.png
    from regrade.reporting.browser import rendered_dom
    from tests.test_report import parsed, require_chromium

    require_chromium()
    client = server.client()
    job = client.wait(client.submit(demo_request())["id"])
    token = client.token

    def page(path: str) -> str:
        return rendered_dom(f"{server.url}/login?token={token}&next={path}")

    jobs = parsed(page("/"))
    assert any(a.get("data-state") == "done" for t, a in jobs.found if t == "tr")
    job_page = page(f"/jobs/{job['id']}")
    assert "45 of 45 cases" in job_page and "<progress" in job_page and "the report" in job_page
    results = parsed(page("/results"))
    assert any(t == "input" and a.get("value") == job["id"] for t, a in results.found)
    compared = parsed(page(f"/compare?results={job['id']}&baseline=none"))
    assert sorted(a["data-condition"] for a in compared.having("tr", "comparison")) == ["anthropic", "community"]
    assert any(t == "html" and a.get("data-script") == "ran" for t, a in compared.found)  # the report's script ran
    assert compared.having("details", "case")  # every case's drill-down, as the report has it
    assert "not signed in" in rendered_dom(f"{server.url}/login?token=wrong")


@pytest.mark.slow
def test_a_refusal_slice_and_a_grader_audit_run_as_jobs(server, tmp_path_factory):
    import shutil

    from tests.refusal_agents import EXPECTED, counts_of, demo_pack, scripted_runs

    client = server.client()
    runs = server.roots[1]
    pack = demo_pack(tmp_path_factory)
    shutil.copytree(pack.folder, runs / "pack")
    shutil.copytree(pack.key_folder, runs / "pack.key")
    (runs / "agents").mkdir()
    folders = scripted_runs(pack, runs / "agents")
    job = client.wait(client.submit({"kind": "slice", "pack": str(runs / "pack"), "expect_digest": pack.digest,
                                     "conditions": {n: str(f) for n, f in folders.items()},
                                     "engines": ["ironcalc"], "baseline": "compliant"})["id"])
    assert job["state"] == "done", job
    table = json.loads(client.call("GET", f"/api/compare?results={job['id']}&baseline=compliant&format=json"))
    assert {r["condition"]: counts_of(r) for r in table["refusal"]} == EXPECTED
    assert "Refusal slice" in client.call("GET", f"/api/jobs/{job['id']}/report").decode()
    refused = client.wait(client.submit({"kind": "slice", "pack": str(runs / "pack"), "expect_digest": "0" * 64,
                                         "conditions": {"honest": str(folders["honest"])}})["id"])
    assert refused["state"] == "failed" and "not the expected" in refused["message"]
    audit = client.wait(client.submit({"kind": "audit-grader", "grader": "spreadsheetbench-official"})["id"])
    assert audit["state"] == "done" and audit["done"] == audit["total"] > 0, audit
    audited = json.loads(client.results(audit["id"]))
    assert audited["grader"] == "spreadsheetbench-official" and audited["categories"]
    with pytest.raises(ServerError) as no_report:
        client.call("GET", f"/api/jobs/{audit['id']}/report")
    assert no_report.value.id == "no-report"
    with pytest.raises(ServerError) as user_code:
        client.submit({"kind": "audit-grader", "grader": "my_module:grade"})
    assert user_code.value.id == "bad-request" and "no built-in grader" in user_code.value.message


@pytest.mark.slow
def test_a_server_on_a_dask_cluster_gives_the_same_records(server, tmp_path):
    pytest.importorskip("distributed", reason="the Dask executor needs distributed: pip install -e '.[test]'")
    on_dask = Server(tmp_path / "data", DEMO, options=("--executor", "dask", "--workers", "2")).start()
    try:
        client = on_dask.client()
        job = client.wait(client.submit(demo_request(cache=False))["id"], poll_s=0.2)
        assert job["state"] == "done" and job["done"] == 45, job
        local = server.client()
        alone = local.wait(local.submit(demo_request())["id"])
        assert comparable(client.results(job["id"])) == comparable(local.results(alone["id"]))
    finally:
        on_dask.stop()


def test_a_results_file_made_elsewhere_is_given_listed_and_compared(server, tmp_path):
    from regrade import api

    client = server.client()
    made = tmp_path / "elsewhere.jsonl"
    api.rescore(DEMO / "dataset", {c: DEMO / "outputs" / c for c in DEMO_CONDITIONS}, engines=["ironcalc"],
                output=made, stack="elsewhere")
    given = json.loads(client.call("POST", "/api/results", made.read_bytes(), "application/x-ndjson"))
    assert given["job_id"] is None and given["cases"] == 45 and given["provenance"]["record"] == "provenance"
    assert given["id"] in {r["id"] for r in client.json("GET", "/api/results")}
    table = client.call("GET", f"/api/compare?results={given['id']}&baseline=none&format=csv").decode()
    assert table.splitlines()[0].startswith("stack,benchmark,condition") and "elsewhere" in table
    with pytest.raises(ServerError) as refused:
        client.call("POST", "/api/results", b'{"record": "case", "nonsense": 1}\n', "application/x-ndjson")
    assert (refused.value.status, refused.value.id) == (422, "not-results")


@pytest.mark.slow
def test_a_grader_audit_on_controls_generated_from_a_dataset(server):
    require_engines("ironcalc", "libreoffice", "formulon")
    client = server.client()
    job = client.wait(client.submit({"kind": "audit-grader", "grader": "spreadsheetbench-official",
                                     "controls_from": str(DEMO / "dataset"), "controls_tasks": 1})["id"])
    assert job["state"] == "done" and job["total"] > 0, job
    audited = json.loads(client.results(job["id"]))
    assert audited["pack_digest"] and audited["categories"]
    log = client.json("GET", f"/api/jobs/{job['id']}")["log"]
    assert any(line.split(" ", 1)[1].startswith("generated ") for line in log), log
