"""Formulon's compiled WebAssembly cached on disk (regrade.engines.wasm_cache): compiled once,
read back by the next engine, and a corrupt, foreign or unwritable cache costs a compile,
never a wrong module. A real module, compiled by wasmtime and run."""

from __future__ import annotations

from pathlib import Path

import pytest

wasmtime = pytest.importorskip("wasmtime")

from regrade.engines.wasm_cache import entry_key, load_or_compile  # noqa: E402

WAT = '(module (func (export "answer") (result i32) i32.const 42))'


@pytest.fixture
def wasm(tmp_path):
    path = tmp_path / "answer.wasm"
    path.write_bytes(wasmtime.wat2wasm(WAT))
    return path


def loaded(wasm: Path, directory: Path, compiled: list[Path]) -> int:
    """Load the module with a fresh engine through the cache, run it, and count compiles."""
    def compile_file(engine, path):
        compiled.append(Path(path))
        return wasmtime.Module.from_file(engine, path)

    engine = wasmtime.Engine()
    module = load_or_compile(engine, wasm, directory, compile_file)
    store = wasmtime.Store(engine)
    return wasmtime.Instance(store, module, []).exports(store)["answer"](store)


def test_a_module_is_compiled_once_and_read_back_by_the_next_engine(wasm, tmp_path):
    compiled: list[Path] = []
    assert loaded(wasm, tmp_path / "cache", compiled) == 42 and len(compiled) == 1
    assert loaded(wasm, tmp_path / "cache", compiled) == 42 and len(compiled) == 1  # read, not compiled
    key = entry_key(wasm)
    assert (tmp_path / "cache" / f"{key}.cwasm").is_file() and (tmp_path / "cache" / f"{key}.sha256").is_file()
    wasm.write_bytes(wasmtime.wat2wasm(WAT.replace("42", "7")))  # another module: another key
    assert entry_key(wasm) != key and loaded(wasm, tmp_path / "cache", compiled) == 7 and len(compiled) == 2


def test_a_corrupt_or_foreign_entry_is_ignored_and_compiled_afresh(wasm, tmp_path):
    compiled: list[Path] = []
    cache = tmp_path / "cache"
    loaded(wasm, cache, compiled)
    entry = cache / f"{entry_key(wasm)}.cwasm"
    entry.write_bytes(entry.read_bytes()[:1000])  # truncated: its digest no longer matches
    assert loaded(wasm, cache, compiled) == 42 and len(compiled) == 2
    garbage = b"\0" * 4096  # bytes that match their digest but are no compiled module wasmtime accepts
    entry.write_bytes(garbage)
    entry.with_suffix(".sha256").write_text(__import__("hashlib").sha256(garbage).hexdigest())
    assert loaded(wasm, cache, compiled) == 42 and len(compiled) == 3
    assert loaded(wasm, cache, compiled) == 42 and len(compiled) == 3  # rewritten whole


def test_a_cache_that_cannot_be_written_costs_a_compile_not_the_run(wasm, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    compiled: list[Path] = []
    assert loaded(wasm, blocked / "cache", compiled) == 42
    assert loaded(wasm, blocked / "cache", compiled) == 42 and len(compiled) == 2
