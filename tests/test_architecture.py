"""The house keeps its shape: every module is named in docs/architecture.md, and a layer imports
only from the layers below it (the order that page gives), with no cycle between modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "regrade"
# From the bottom; a module may import its own layer and those below
LAYERS = [("values", "messages", "xml_parser", "processes"), ("workbook",), ("engines",), ("runs", "grading"),
          ("results",), ("run",), ("paired",), ("audit", "refusal"), ("render", "reporting"), ("api", "demo"),
          ("service",), ("cli", "__init__", "__main__")]
LAYER = {name: index for index, names in enumerate(LAYERS) for name in names}


MODULES = {".".join(path.relative_to(ROOT).with_suffix("").parts): path for path in PACKAGE.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """The regrade modules a file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("regrade"):
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("regrade")}
    return {module for module in found if module in MODULES}


def layer(module: str) -> int:
    return LAYER[module.split(".")[1]]


def test_every_module_is_named_in_the_architecture_page():
    """By its file name, or (a module of a folder inside a layer, engines/functions/) by its folder."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [name for name, path in MODULES.items() if path.name not in ("__init__.py", "__main__.py")
               and path.name not in page and not (len(path.relative_to(PACKAGE).parts) > 2 and f"{path.parent.name}/" in page)]
    assert not unnamed, f"not in docs/architecture.md: {unnamed}"


def test_every_top_level_module_and_folder_has_a_layer():
    assert {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))} <= set(LAYER)


def test_a_layer_imports_only_from_the_layers_below_it():
    upward = [f"{module} imports {imported}" for module, path in MODULES.items() for imported in imports(path)
              if layer(imported) > layer(module)]
    assert not upward, upward


def test_no_two_modules_import_each_other_through_a_cycle():
    """A package's __init__ re-exporting its modules is no cycle: edges into an __init__, and from
    one into its own package, are left out."""
    graph = {module: {i for i in imports(path) if i != module and MODULES[i].name != "__init__.py"
                      and not (path.name == "__init__.py" and i.startswith(module + "."))}
             for module, path in MODULES.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [module, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


def test_the_command_line_and_the_api_start_without_pandas():
    """pandas (0.4 s to import) is loaded by the functions that make a DataFrame, not by every command."""
    import subprocess
    import sys

    code = "import sys, regrade.cli.app, regrade.api; print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "False"
