"""A Harbor environment without Docker, for tests: each trial's container is a folder.

Harbor (0.26) takes an environment by import path (``harbor run --env
tests.harbor_env.local_chroot:LocalChrootEnvironment``, this folder's parent on PYTHONPATH).
The environment's filesystem is ``<base>/<session>/root``: the machine's /usr (and /bin, /lib
as its links), /etc, /dev and /proc bound into it, and the task's paths (/app, /tests, /logs,
/solution) folders of its own; the task's ``environment/app`` is copied to /app, as its
Dockerfile's ``COPY app/ /app/`` would. Each command runs in a mount namespace of its own
(``unshare -m``) chrooted there, so harbor's agents and verifier write only inside the trial's
folder. Files move in and out by copying under the root. Root is needed (unshare, chroot).
This module runs inside harbor's Python (3.12), never in regrade's.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult

BASE = Path(os.environ.get("LOCAL_CHROOT_BASE", tempfile.gettempdir())) / "harbor-local-chroot"
BOUND = ("usr", "etc", "dev", "proc")


class LocalChrootEnvironment(BaseEnvironment):
    @staticmethod
    def type() -> str:
        return "local-chroot"

    def _validate_definition(self) -> None:
        return None

    @property
    def _root(self) -> Path:
        return BASE / self.session_id / "root"

    def _host(self, path: str) -> Path:
        return self._root / str(path).lstrip("/")

    async def start(self, force_build: bool) -> None:
        root = self._root
        for name in (*BOUND, "tmp", "app", "tests", "logs/agent", "logs/verifier", "logs/artifacts", "solution"):
            (root / name).mkdir(parents=True, exist_ok=True)
        for link in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink(f"/{link}") and not (root / link).is_symlink():
                (root / link).symlink_to(os.readlink(f"/{link}"))
        (root / "tmp").chmod(0o1777)
        if (self.environment_dir / "app").is_dir():  # the task's Dockerfile: COPY app/ /app/
            shutil.copytree(self.environment_dir / "app", root / "app", dirs_exist_ok=True)
        if self.task_env_config.workdir:
            self._host(self.task_env_config.workdir).mkdir(parents=True, exist_ok=True)

    async def stop(self, delete: bool) -> None:
        if delete:
            shutil.rmtree(BASE / self.session_id, ignore_errors=True)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._host(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, self._host(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self._host(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(self._host(source_dir), target_dir, dirs_exist_ok=True)

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        root = str(self._root)
        binds = " && ".join(f"mount --bind /{name} {shlex.quote(root + '/' + name)}" for name in BOUND)
        inner = f"cd {shlex.quote(cwd or self.task_env_config.workdir or '/')} && {command}"
        script = f"{binds} && exec chroot {shlex.quote(root)} /bin/bash -c {shlex.quote(inner)}"
        environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", **self._persistent_env, **(env or {})}
        process = await asyncio.create_subprocess_exec(
            "unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script, env=environment,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_sec)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            raise
        return ExecResult(stdout=stdout.decode(errors="replace"), stderr=stderr.decode(errors="replace"),
                          return_code=process.returncode or 0)
