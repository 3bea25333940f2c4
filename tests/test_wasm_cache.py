"""Formulon's compiled WebAssembly cached on disk (regrade.engines.wasm_cache): compiled once,
read back by the next engine, and a corrupt, foreign or unwritable cache costs a compile,
never a wrong module. A real module, compiled by wasmtime and run."""

from __future__ import annotations

from pathlib import Path

import pytest

wasmtime = pytest.importorskip("wasmtime")

from regrade.engines.wasm_cache import cached_names, entry_key, load_or_compile  # noqa: E402

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


def test_names_the_module_alone_decides_are_asked_once_and_a_bad_entry_is_asked_again(wasm, tmp_path):
    asked: list[str] = []

    def ask() -> list[str]:  # what the module's exports say (here, its one export's name)
        asked.append("asked")
        store = wasmtime.Store()
        return sorted(wasmtime.Instance(store, wasmtime.Module.from_file(store.engine, str(wasm)), []).exports(store))

    cache = tmp_path / "cache"
    assert cached_names(wasm, "exports", ask, cache) == ["answer"] and len(asked) == 1
    assert cached_names(wasm, "exports", ask, cache) == ["answer"] and len(asked) == 1  # read back
    assert cached_names(wasm, "exports, another question", ask, cache) == ["answer"] and len(asked) == 2
    entry = next(cache.glob("*.names.json"))
    for bad in (b'["answer", "forged"]',  # its digest no longer matches
                b'{"answer": 1}'):  # a matching digest, but no list of names
        entry.write_bytes(bad)
        if bad.startswith(b"{"):
            entry.with_name(entry.name.replace(".json", ".sha256")).write_text(
                __import__("hashlib").sha256(bad).hexdigest())
        before = len(asked)
        assert cached_names(wasm, "exports", ask, cache) == ["answer"] and len(asked) == before + 1
    wasm.write_bytes(wasmtime.wat2wasm(WAT.replace('"answer"', '"other"')))  # another module: asked again
    assert cached_names(wasm, "exports", ask, cache) == ["other"]
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert cached_names(wasm, "exports", ask, blocked / "cache") == ["other"]  # unwritable: asked, not failed


def test_formulons_catalog_kept_on_disk_is_the_one_its_module_gives(tmp_path, monkeypatch):
    from tests.conftest import require_engines

    require_engines("formulon")
    from regrade.engines import formulon as formulon_engine

    formulon_engine.FormulonEngine().preload()  # its module compiled (or read from the user's cache) before ...
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # ... a fresh cache: asked of the module, then read back
    asked = frozenset(formulon_engine._catalog_implemented())
    for _ in range(2):
        formulon_engine._implemented.cache_clear()
        assert formulon_engine._implemented() == asked
    assert len(list((tmp_path / "regrade" / "wasm").glob("*.names.json"))) == 1
    assert {"SUM", "VLOOKUP", "XLOOKUP"} <= asked
