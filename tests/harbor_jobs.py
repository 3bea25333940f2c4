"""Harbor jobs written by harbor itself, for the tests that read them.

harbor (0.26.0) needs Python >= 3.12; :func:`harbor_cli` makes a virtual environment from the
machine's interpreter (``REGRADE_PYTHON312``, else pyenv's 3.12 or later, else ``python3.12`` on PATH)
and installs harbor there once. :func:`write_task` lays out a SpreadsheetBench task as a
Harbor task (instruction, a solution that writes the answer files as outputs, a verifier that
writes a reward), and :func:`run_job` has harbor run it with the local environment of
``tests/harbor_env`` (no Docker) and one of harbor's own agents or ``tests/harbor_env/agents.py``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

HARBOR = "harbor==0.26.0"
TESTS = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "regrade-tests" / "harbor-0.26.0"
RATE_LIMITED = "harbor_env.agents:RateLimitedAgent"
SCRIPTED_SLICE = "harbor_env.agents:ScriptedSliceAgent"
ENVIRONMENT = "harbor_env.local_chroot:LocalChrootEnvironment"


def python312() -> str | None:
    """An interpreter of Python >= 3.12 on this machine that runs (a pyenv shim may not), or None."""
    candidates = [os.environ.get("REGRADE_PYTHON312", ""),
                  *sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.1[2-9]*" / "bin" / "python"))),
                  shutil.which("python3.12") or ""]
    return next((c for c in candidates if c and Path(c).is_file()
                 and subprocess.run([c, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                                    capture_output=True).returncode == 0), None)


def harbor_cli() -> Path | None:
    """harbor's command in a virtual environment of its own (made once), or None without Python 3.12."""
    harbor = CACHE / "bin" / "harbor"
    if harbor.is_file():
        return harbor
    python = python312()
    if python is None:
        return None
    subprocess.run([python, "-m", "venv", "--clear", str(CACHE)], check=True)
    subprocess.run([str(CACHE / "bin" / "pip"), "install", "-q", HARBOR], check=True)
    return harbor


TASK_TOML = """version = "1.0"

[agent]
timeout_sec = 120

[verifier]
timeout_sec = 120

[environment]
workdir = "/app"
"""

# The verifier: reward 1 when every output workbook the task asks for was written (a lax grader, so
# that a wrong workbook can carry a reward of 1, as stale caches let a benchmark's grader pass it)
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
for n in {cases}; do
  if [ ! -s /app/output/${{n}}_{task}_output.xlsx ]; then echo 0 > /logs/verifier/reward.txt; exit 0; fi
done
echo 1 > /logs/verifier/reward.txt
"""


def write_task(tasks: Path, dataset: Path, task_id: str) -> Path:
    """The task ``task_id`` of a SpreadsheetBench folder as a Harbor task under ``tasks``."""
    source = dataset / "spreadsheet" / task_id
    cases = sorted(int(p.name.split("_")[0]) for p in source.glob("*_answer.xlsx"))
    folder = _task_folder(tasks, task_id, "solution", f"write /app/output/<n>_{task_id}_output.xlsx")
    for n in cases:
        shutil.copyfile(source / f"{n}_{task_id}_input.xlsx", folder / "environment" / "app" / "input" / f"{n}_{task_id}_input.xlsx")
        shutil.copyfile(source / f"{n}_{task_id}_answer.xlsx", folder / "solution" / f"{n}_{task_id}_output.xlsx")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\nmkdir -p /app/output\ncp /solution/*_output.xlsx /app/output/\n")
    (folder / "tests" / "test.sh").write_text(TEST_SH.format(cases=" ".join(map(str, cases)), task=task_id))
    for script in (folder / "solution" / "solve.sh", folder / "tests" / "test.sh"):
        script.chmod(0o755)
    return folder


def _task_folder(tasks: Path, task_id: str, more: str, asked: str) -> Path:
    """A Harbor task's folder: task.toml, the instruction, the Dockerfile, and its subfolders."""
    folder = tasks / task_id
    for sub in ("environment/app/input", "environment/app/output", "tests", more):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(TASK_TOML)
    (folder / "instruction.md").write_text(f"Solve the spreadsheet task {task_id}; {asked}.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY app/ /app/\nRUN mkdir -p /app/output\n")
    return folder


def run_job(harbor: Path, tasks: Path, jobs: Path, name: str, agent: str, artifacts: tuple[str, ...] = ("/app/output",),
            attempts: int = 1, extra: tuple[str, ...] = ()) -> Path:
    """``harbor run`` over every task of ``tasks`` (``extra``: more of its options); the job folder."""
    command = [str(harbor), "run", "--path", str(tasks), "--agent", agent, *extra, "--env", ENVIRONMENT,
               "--jobs-dir", str(jobs), "--job-name", name, "--n-attempts", str(attempts), "--n-concurrent", "1",
               "--yes", "--quiet", *[f"--artifact={a}" for a in artifacts]]
    environment = {**os.environ, "PYTHONPATH": str(TESTS), "LOCAL_CHROOT_BASE": str(jobs.parent)}
    completed = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    job = jobs / name
    if not job.is_dir():
        sys.stderr.write(completed.stdout + completed.stderr)
        raise RuntimeError(f"harbor wrote no job {name} (exit {completed.returncode})")
    return job


def write_slice_task(tasks: Path, pack: Path, task_id: str, writes: dict[int, Path], abstains: bool) -> Path:
    """A refusal-slice pack's task as a Harbor task for :data:`SCRIPTED_SLICE`: its inputs, and an
    ``agent.sh`` that copies ``writes`` (case -> workbook) to /app/output as the case's output
    and, with ``abstains``, writes each case's ``<n>_<id>_abstain.json``."""
    source = pack / "spreadsheet" / task_id
    cases = sorted(int(p.name.split("_")[0]) for p in source.glob("*_input.xlsx"))
    folder = _task_folder(tasks, task_id, "environment/app/prepared", "or stop if you cannot")
    lines = ["#!/bin/bash", "mkdir -p /app/output"]
    for n in cases:
        shutil.copyfile(source / f"{n}_{task_id}_input.xlsx", folder / "environment" / "app" / "input" / f"{n}_{task_id}_input.xlsx")
        if n in writes:
            shutil.copyfile(writes[n], folder / "environment" / "app" / "prepared" / f"{n}_{task_id}_output.xlsx")
            lines.append(f"cp /app/prepared/{n}_{task_id}_output.xlsx /app/output/")
        if abstains:
            lines.append(f"echo '{{\"reason\": \"a required input is missing\"}}' > /app/output/{n}_{task_id}_abstain.json")
    (folder / "environment" / "app" / "agent.sh").write_text("\n".join(lines) + "\n")
    (folder / "tests" / "test.sh").write_text(TEST_SH.format(cases=" ".join(map(str, cases)), task=task_id))
    (folder / "tests" / "test.sh").chmod(0o755)
    return folder


def run_slice_jobs(harbor: Path, pack, plans: dict, root: Path) -> dict[str, Path]:
    """A Harbor job per scripted agent over a refusal-slice pack (``plans``: agent -> task ->
    (workbooks it writes, whether it stops)), each run by :data:`SCRIPTED_SLICE` with a model name."""
    jobs = {}
    for agent, plan in plans.items():
        for task_id, (writes, stops) in plan.items():
            write_slice_task(root / agent / "tasks", pack.folder, task_id, writes, stops)
        jobs[agent] = run_job(harbor, root / agent / "tasks", root / "jobs", agent, SCRIPTED_SLICE,
                              extra=("--model", "mock/model"))
    return jobs
