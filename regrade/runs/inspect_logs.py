"""inspect_ai evaluation logs as outcomes for ``regrade table``.

An inspect_ai log is either a ``.json`` file (one object: ``eval``, ``samples``, ...) or an
``.eval`` file, a zip whose members (``header.json``, ``summaries.json``,
``samples/<id>_epoch_<n>.json``) are usually zstd-compressed (zip method 93, which Python's
zipfile does not read before 3.14; :func:`_member` decompresses them with ``zstandard``).
Each scored sample becomes one outcome: the sample id is the task, the epoch the trial, the
log's model the stack and its task the benchmark. A score passes when it is ``C`` (inspect_ai's
CORRECT), ``True``, or a number of at least 1; ``I``, ``N`` (no answer), ``P`` (partial), ``False``
and smaller numbers fail. A sample without a score (it errored) is not an outcome: it is
counted in :attr:`InspectLog.unscored` and said, never read as a fail.
"""

from __future__ import annotations

import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ZSTD_METHOD = 93
MAX_MEMBER_BYTES = 512 * 1024 * 1024  # a log member larger than this, decompressed, is refused
LOG_SUFFIXES = (".eval", ".json")


class InspectLogError(ValueError):
    """A file that is not an inspect_ai log regrade can read, or a score it cannot read as pass or fail."""


@dataclass
class InspectLog:
    path: Path
    task: str
    model: str
    status: str
    scorer: str | None
    outcomes: list[dict] = field(default_factory=list)  # stack, benchmark, condition, task_id, trial, passed
    unscored: list[str] = field(default_factory=list)  # "<id> epoch <n>" of samples without a score


def is_inspect_log(path: Path) -> bool:
    """Whether ``path`` looks like an inspect_ai log (by its suffix and first bytes), without reading it all."""
    if path.suffix == ".eval":
        return zipfile.is_zipfile(path)
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open("rb") as handle:
        start = handle.read(65536)
    return start.lstrip().startswith(b"{") and b'"eval"' in start


def read_inspect_log(path: Path, condition: str | None, scorer: str | None = None) -> InspectLog:
    """The outcomes of one log, all under ``condition`` (None: the log's own ``metadata.condition``).
    ``scorer`` picks one of several scorers."""
    if path.suffix == ".eval":
        header, samples = _eval_file(path)
    elif path.suffix == ".json":
        header = _object(_json(path.read_bytes(), path), path)
        samples = header.get("samples") or []
    else:
        raise InspectLogError(f"{path} is not an inspect_ai log (.eval or .json)")
    if not isinstance(header.get("eval"), dict):
        raise InspectLogError(f"{path} is not an inspect_ai log: it has no eval record")
    info = header["eval"]
    condition = condition or (info.get("metadata") or {}).get("condition")
    if not condition:
        raise InspectLogError(f"{path}: which condition is this log? Name it: NAME={path} (or set the eval's "
                              "metadata condition)")
    log = InspectLog(path, str(info.get("task", "")), str(info.get("model", "")), str(header.get("status", "")), None)
    names = sorted({name for sample in samples for name in (sample.get("scores") or {})})
    if not names and log.status == "error":
        raise InspectLogError(f"{path}: the run failed (status error: {_run_error(header)}) and none of its samples "
                              "were scored")
    name, key = _scorer_and_key(scorer, names)
    if name is not None and name not in names:
        raise InspectLogError(f"{path} has no scorer {name!r} (its scorers: {', '.join(names) or 'none'})")
    if name is None and len(names) > 1:
        raise InspectLogError(f"{path} has several scorers ({', '.join(names)}): choose one with --scorer")
    log.scorer = name or (names[0] if names else None)
    for sample in samples:
        score = (sample.get("scores") or {}).get(log.scorer) if log.scorer else None
        label = f"{sample.get('id')} epoch {sample.get('epoch', 1)}"
        if score is None:
            log.unscored.append(label)
            continue
        value = score.get("value") if isinstance(score, dict) else score
        try:
            passed = score_passes(_keyed(value, log.scorer or "", key))
        except InspectLogError as exc:
            raise InspectLogError(f"{path} sample {label}: {exc}") from None
        log.outcomes.append({"stack": log.model, "benchmark": log.task, "condition": condition,
                             "task_id": str(sample.get("id")), "case": 1, "trial": int(sample.get("epoch") or 1),
                             "passed": passed})
    return log


def _scorer_and_key(scorer: str | None, names: list[str]) -> tuple[str | None, str | None]:
    """``--scorer NAME`` or ``NAME.KEY`` (one value of a dict-valued score): a name the log has
    is taken whole, so a scorer whose own name holds a dot is still found."""
    if scorer is None or scorer in names or "." not in scorer:
        return scorer, None
    name, _, key = scorer.rpartition(".")
    return name, key


def _keyed(value: object, scorer: str, key: str | None) -> object:
    """The score's value, or with ``key`` its value under that key (a dict-valued score)."""
    if isinstance(value, dict):
        if key is None:
            raise InspectLogError(f"scorer {scorer!r} gives several values ({', '.join(map(str, value))}): "
                                  f"choose one with --scorer {scorer}.KEY")
        if key not in value:
            raise InspectLogError(f"scorer {scorer!r} has no value {key!r} (its values: {', '.join(map(str, value))})")
        return value[key]
    if key is not None:
        raise InspectLogError(f"scorer {scorer!r} gives one value, not several: name it without .{key}")
    return value


def _run_error(header: dict) -> str:
    error = header.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or "no message").strip().splitlines()[0][:200]


def score_passes(value: object) -> bool:
    """An inspect_ai score value as a pass or a fail (see the module docstring)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("C", "I", "P", "N"):
        return value == "C"
    if isinstance(value, (int, float)):
        return value >= 1
    raise InspectLogError(f"score {value!r} is not a pass or a fail (C/I/P/N, a boolean or a number)")


def log_files(path: Path) -> list[Path]:
    """A log file, or every log in a folder (not recursing), in name order."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in LOG_SUFFIXES and is_inspect_log(p))
    return [path]


def log_samples(path: Path) -> tuple[dict, list[dict]]:
    """A log's header and its samples whole (their store, events and usage, which the summaries
    of an ``.eval`` file leave out)."""
    if path.suffix == ".eval":
        return _eval_file(path, whole=True)
    header = _object(_json(path.read_bytes(), path), path)
    if not isinstance(header.get("eval"), dict):
        raise InspectLogError(f"{path} is not an inspect_ai log: it has no eval record")
    return header, header.get("samples") or []


def _eval_file(path: Path, whole: bool = False) -> tuple[dict, list[dict]]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            header_name = "header.json" if "header.json" in names else "_journal/start.json"
            if header_name not in names:
                raise InspectLogError(f"{path} is a zip without header.json: not an inspect_ai .eval log")
            header = _object(_json(_member(path, archive, header_name), path), path)
            if "summaries.json" in names and not whole:
                samples = _json(_member(path, archive, "summaries.json"), path)
            else:  # a log still being written, or an older one: the samples themselves
                samples = [_json(_member(path, archive, name), path) for name in sorted(names)
                           if name.startswith("samples/") and name.endswith(".json")]
    except (zipfile.BadZipFile, OSError, NotImplementedError) as exc:  # the last: a compression zipfile lacks
        raise InspectLogError(f"{path} cannot be read as an .eval log: {exc}") from exc
    if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
        raise InspectLogError(f"{path}: its samples are not a list of records")
    return header, samples


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes, zstd-compressed ones too; none larger than MAX_MEMBER_BYTES."""
    info = archive.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise InspectLogError(f"{path}: member {name} is {info.file_size} bytes, more than regrade reads")
    if info.compress_type != ZSTD_METHOD:
        return archive.read(name)
    import zstandard

    with path.open("rb") as handle:
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise InspectLogError(f"{path}: member {name} has no local header")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        data = handle.read(info.compress_size)
    try:
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=MAX_MEMBER_BYTES)
    except zstandard.ZstdError as exc:
        raise InspectLogError(f"{path}: member {name} is not valid zstd: {exc}") from exc


def _json(data: bytes, path: Path) -> object:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InspectLogError(f"{path} holds a member that is not JSON: {exc}") from exc


def _object(value: object, path: Path) -> dict:
    if not isinstance(value, dict):
        raise InspectLogError(f"{path} is not an inspect_ai log: its header is not a JSON object")
    return value
