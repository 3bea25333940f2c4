"""The documentation: every command and option documented, generated parts current, links inside the repository."""

import importlib.util
import re

import click
import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"


def generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATE = generator()
COMMANDS = GENERATE.commands()


def test_the_generated_docs_are_current():
    stale = [str(path.relative_to(ROOT)) for path, text in GENERATE.expected().items() if path.read_text() != text]
    assert not stale, f"run python3 docs/generate.py: {', '.join(stale)} differ from what the code gives"


def sections():
    """docs/cli.md cut at its '## regrade ...' headings."""
    text = (DOCS / "cli.md").read_text()
    parts = re.split(r"^## (regrade.*)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("name, command", COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_command_and_option_is_documented(name, command):
    documented = sections()
    assert name in documented, f"{name} has no section in docs/cli.md"
    for parameter in command.params:
        if isinstance(parameter, click.Option) and not parameter.hidden:
            for spelling in parameter.opts + parameter.secondary_opts:
                assert re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", documented[name]), \
                    f"{name} {spelling} is not in docs/cli.md"


def test_the_readme_is_for_users_and_short():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 12 * 1024
    for command in ("regrade rescore", "regrade table", "regrade report", "regrade diff"):
        assert command in readme
    assert not re.search(r"\b[0-9a-f]{7,40}\b", readme), "a commit hash in the README: dated notes go to docs/"


def markdown_files():
    return [ROOT / "README.md", ROOT / "fixtures" / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository_and_resolve(path):
    text = path.read_text()
    assert "DESIGN" not in text, f"{path.name} refers to the design notes outside the repository"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        resolved = (path.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name} links outside the repository: {target}"
        assert resolved.exists(), f"{path.name} links to {target}, which does not exist"


def test_no_source_file_cites_the_design_notes():
    cited = [str(p.relative_to(ROOT)) for folder in ("regrade", "tests", "bench", "fixtures")
             for p in (ROOT / folder).rglob("*.py") if re.search(r"DESIGN(\.md| §)", p.read_text())]
    assert not cited, f"cite docs/ instead: {', '.join(cited)}"
