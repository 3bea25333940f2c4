"""What the server reads and writes: paths a job may name, and uploads unpacked safely.

A job names its run by paths under the roots the server was started with (``--root DIR``,
repeatable) or inside an upload (``upload:<id>`` or ``upload:<id>/sub/folder``). Every path is
resolved (links followed) before it is checked, so ``..`` or a link cannot leave the roots.

An upload is a zip (an outputs folder, a Harbor job, inspect_ai logs, a dataset) checked whole
before anything is written: refused when it is larger than the limit, not a zip, holds an
absolute path, a ``..`` part, a link or a device, too many members, or more bytes unpacked than
the limit or a member compressed more than a zip bomb's ratio. It is unpacked into a temporary
folder under ``DATA/uploads`` and renamed into place only when complete.
"""

from __future__ import annotations

import shutil
import stat
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class ServiceError(Exception):
    """A request refused: a stable ``id``, a one-line message and the HTTP status."""

    def __init__(self, error_id: str, message: str, status: int = 400):
        super().__init__(message)
        self.id, self.message, self.status = error_id, message, status


@dataclass(frozen=True)
class UploadLimits:
    bytes: int = 512 * 1024 * 1024  # the zip itself
    unpacked: int = 2 * 1024 * 1024 * 1024
    members: int = 100_000
    ratio: int = 200  # a member unpacking to more than this many times its compressed size is a bomb


def resolve(text: str, roots: list[Path], uploads: Path) -> Path:
    """The path a job names, checked to lie under a root or in an upload (see the module docstring)."""
    if text.startswith("upload:"):
        upload_id, _, sub = text[len("upload:"):].partition("/")
        base = uploads / upload_id
        if not upload_id or not upload_id.isalnum() or not base.is_dir():
            raise ServiceError("upload-not-found", f"no upload {upload_id!r} (POST /api/uploads returns its id)", 404)
        path, allowed = (base / sub).resolve(), [base.resolve()]
    else:
        path, allowed = Path(text).resolve(), [root.resolve() for root in roots]
    if not any(path == root or root in path.parents for root in allowed):
        raise ServiceError("path-outside-roots", f"{text} is not under a folder this server reads (its roots: "
                           f"{', '.join(str(r) for r in roots) or 'none, start it with --root DIR'}; or upload:ID)",
                           403)
    if not path.exists():
        raise ServiceError("path-not-found", f"{text} does not exist", 404)
    return path


def unpack_upload(data: bytes, uploads: Path, limits: UploadLimits) -> tuple[str, Path, int]:
    """An uploaded zip checked whole and unpacked into ``uploads/<id>``: its id, folder and file count."""
    if len(data) > limits.bytes:
        raise ServiceError("upload-too-large", f"the upload is {len(data)} bytes, more than the {limits.bytes} "
                           "this server takes (--max-upload-mb)", 413)
    uploads.mkdir(parents=True, exist_ok=True)
    upload_id = uuid.uuid4().hex[:16]
    scratch = uploads / f".{upload_id}.partial"
    scratch.mkdir()
    try:
        archive_path = scratch / "upload.zip"
        archive_path.write_bytes(data)
        if not zipfile.is_zipfile(archive_path):
            raise ServiceError("not-a-zip", "the upload is not a zip archive", 415)
        with zipfile.ZipFile(archive_path) as archive:
            members = [m for m in archive.infolist() if not m.is_dir()]
            _check_members(archive.infolist(), limits)
            target = scratch / "files"
            target.mkdir()
            for member in members:
                destination = target.joinpath(*PurePosixPath(member.filename).parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, destination.open("wb") as sink:
                    _copy_limited(source, sink, member.file_size)
        archive_path.unlink()
        final = uploads / upload_id
        (scratch / "files").rename(final)
        return upload_id, final, len(members)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check_members(members: list[zipfile.ZipInfo], limits: UploadLimits) -> None:
    if len(members) > limits.members:
        raise ServiceError("zip-too-many-members", f"the upload holds {len(members)} members, more than "
                           f"{limits.members}", 413)
    total = 0
    for member in members:
        name = member.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts or not parts:
            raise ServiceError("zip-unsafe-path", f"the upload holds a member outside its folder: {name!r}", 422)
        kind = stat.S_IFMT(member.external_attr >> 16)
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise ServiceError("zip-link", f"the upload holds a link or a device: {name!r}", 422)
        total += member.file_size
        if total > limits.unpacked:
            raise ServiceError("zip-bomb", f"the upload unpacks to more than {limits.unpacked} bytes", 413)
        if member.file_size > 1024 * 1024 and member.file_size > limits.ratio * max(member.compress_size, 1):
            raise ServiceError("zip-bomb", f"the upload's member {name!r} unpacks to {member.file_size} bytes from "
                               f"{member.compress_size}: a zip bomb", 413)


def _copy_limited(source, sink, size: int) -> None:
    """Copy a member, never more bytes than its header says (a header that lies is a bomb)."""
    copied = 0
    while block := source.read(1 << 20):
        copied += len(block)
        if copied > size:
            raise ServiceError("zip-bomb", "a member unpacks to more bytes than its header says", 413)
        sink.write(block)
