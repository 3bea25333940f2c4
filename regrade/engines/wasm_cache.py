"""Formulon's WebAssembly module compiled once per machine, not once per process.

wasmtime compiles ``formulon_capi.wasm`` (3.8 MB) to machine code in about 4 s each time a
process loads it: most of what a cold ``regrade rescore`` spends before any workbook is read.
wasmtime can serialise a compiled module and load it back in a millisecond
(``Module.serialize``, ``Module.deserialize``). :func:`cached_module_loading` makes
formulon's own ``Module.from_file`` of that file go through a cache on disk:

- an entry is keyed by the sha256 of the ``.wasm`` file, the wasmtime version and the
  machine (``platform.machine()`` and the CPU's feature flags), so another version or CPU
  never reads it; wasmtime itself refuses a compiled module of another engine configuration;
- an entry is written atomically with the sha256 of its bytes beside it, and read only when
  those bytes match: a truncated, corrupt or foreign entry is ignored and compiled afresh,
  and any failure to read or write the cache costs a compile, never a run;
- the cache lives under ``$XDG_CACHE_HOME/regrade/wasm`` (``~/.cache/regrade/wasm``), beside
  the results cache: the user's own, written by no one else (an entry is machine code the
  process runs, so the folder must not be writable by others).

Every other module wasmtime loads is compiled as before. The values Formulon computes do not
change: the compiled code is the one wasmtime would make.

What regrade asks of the module alone, and that only the module decides (Formulon's catalog of
the functions it computes: some 1,600 calls into it, a quarter of a second), is kept beside it
the same way (:func:`cached_names`): keyed by the module's sha256 and what was asked, read only
when its digest matches and it is a list of names, else asked afresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Any, Callable

MARKER = "_regrade_cached"  # set on the wrapper, so that it is installed once


def cache_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "regrade" / "wasm"


def cached_module_loading(wasm: Path, directory: Path | None = None) -> None:
    """Make ``wasmtime.Module.from_file`` of ``wasm`` read and fill the cache (once per process)."""
    import wasmtime

    if getattr(wasmtime.Module.from_file, MARKER, False):
        return
    compile_file = wasmtime.Module.from_file
    target = wasm.resolve()

    @functools.wraps(compile_file)
    def from_file(engine: Any, path: str | os.PathLike[str]) -> Any:
        if Path(path).resolve() != target:
            return compile_file(engine, path)
        return load_or_compile(engine, target, directory or cache_directory(), compile_file)

    setattr(from_file, MARKER, True)
    wasmtime.Module.from_file = from_file  # type: ignore[method-assign, assignment]


def load_or_compile(engine: Any, wasm: Path, directory: Path, compile_file: Any) -> Any:
    """The compiled module of ``wasm`` from the cache, or compiled (and then cached)."""
    import wasmtime

    key = entry_key(wasm)
    try:
        if (data := _read(directory, f"{key}.cwasm", f"{key}.sha256")) is not None:
            return wasmtime.Module.deserialize(engine, data)
    except Exception:  # absent, unreadable, corrupt or another engine's: compiled afresh
        pass
    module = compile_file(engine, str(wasm))
    try:
        _write(directory, f"{key}.cwasm", f"{key}.sha256", module.serialize())
    except Exception:  # a cache that cannot be written costs the next process a compile, nothing more
        pass
    return module


def entry_key(wasm: Path) -> str:
    """What decides the compiled code: the module's bytes, wasmtime's version, the machine and its CPU features."""
    import importlib.metadata

    parts = [_digest(wasm), importlib.metadata.version("wasmtime"), platform.machine(), _cpu_features()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_names(wasm: Path, asked: str, ask: Callable[[], list[str]], directory: Path | None = None) -> list[str]:
    """``ask()``, a list of names that the module ``wasm`` alone decides, kept on disk: keyed by
    the module's sha256 and ``asked`` (what was asked and of which version of its bindings), and
    read back only when the entry's digest matches and it holds a list of texts. A missing,
    corrupt or foreign entry is asked afresh (and written again); a cache that cannot be written
    costs the next process the asking, nothing more."""
    directory = directory or cache_directory()
    key = hashlib.sha256(f"{_digest(wasm)}\n{asked}".encode()).hexdigest()
    try:
        if (data := _read(directory, f"{key}.names.json", f"{key}.names.sha256")) is not None:
            names = json.loads(data)
            if isinstance(names, list) and all(isinstance(name, str) for name in names):
                return names
    except Exception:  # absent, unreadable or corrupt: asked afresh
        pass
    names = ask()
    try:
        _write(directory, f"{key}.names.json", f"{key}.names.sha256", json.dumps(names).encode())
    except Exception:
        pass
    return names


def _digest(wasm: Path) -> str:
    return hashlib.sha256(wasm.read_bytes()).hexdigest()


def _cpu_features() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor()


def _read(directory: Path, entry: str, digest: str) -> bytes | None:
    """The bytes of ``entry`` where ``digest`` holds their sha256 (as :func:`_write` wrote them),
    else None; OSError where either file cannot be read."""
    data = (directory / entry).read_bytes()
    return data if (directory / digest).read_text().strip() == hashlib.sha256(data).hexdigest() else None


def _write(directory: Path, entry: str, digest: str, data: bytes) -> None:
    """``data`` as ``entry`` and its sha256 as ``digest``, each written atomically."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, content in ((entry, data), (digest, hashlib.sha256(data).hexdigest().encode())):
        handle = tempfile.NamedTemporaryFile(dir=directory, prefix=f".{name}.", delete=False)
        try:
            with handle:
                handle.write(content)
            os.replace(handle.name, directory / name)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise
