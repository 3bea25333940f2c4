"""`regrade report`: one self-contained HTML page, checked as text and in headless Chromium."""

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import DEMO, require_engines
from regrade.cli import main
from regrade.results.records import Results
from regrade.reporting.content import case_anchor

ALL_FULL = ("ironcalc", "libreoffice", "formulon")
# fixtures/demo-run/expected.json, worked out by hand in fixtures/make_demo.py: per condition,
# the verdict of every case; regraded, anthropic gains 3 tasks and loses none, community gains
# 32293 and loses 59511 (two false passes).
EXPECTED = json.loads((DEMO / "expected.json").read_text())


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo run rescored by the real engines, its report and its paired table as JSON."""
    require_engines(*ALL_FULL)
    folder = tmp_path_factory.mktemp("report")
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # a module fixture: no user cache
    results = folder / "results.jsonl"
    assert invoke("demo", "-o", results).exit_code == 0
    page = folder / "report.html"
    made = invoke("report", results, "-o", page)
    assert made.exit_code == 0, made.output
    table = json.loads(invoke("table", results, "--format", "json").stdout)
    return results, page, table, made


class Rows(HTMLParser):
    """The page's elements by class, with their attributes: what a reader without JavaScript gets."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def having(self, tag, cls):
        return [a for t, a in self.found if t == tag and cls in (a.get("class") or "").split()]


def parsed(text):
    rows = Rows()
    rows.feed(text)
    return rows


def test_the_page_holds_every_comparison_case_and_drill_down_without_javascript(demo):
    results, page, table, made = demo
    text = page.read_text()
    assert f"wrote {page}" in made.stderr
    rows = parsed(text)
    # two treatment conditions against none, one row each (original and regraded side by side)
    assert sorted(a["data-condition"] for a in rows.having("tr", "comparison")) == ["anthropic", "community"]
    cases = [a for t, a in rows.found if t == "tr" and "data-verdict" in a]
    assert len(cases) == sum(len(v) for v in EXPECTED.values()) == 45
    verdicts = sorted(a["data-verdict"] for a in cases)
    assert verdicts == sorted(v for condition in EXPECTED.values() for v in condition.values())
    # every case whose cells differ has its drill-down, with one row per differing cell
    records = Results.read(results).cases
    with_cells = [r for r in records if r.cells]
    anchors = {a["id"] for a in rows.having("details", "case")}
    assert anchors == {case_anchor(r) for r in with_cells}
    assert len(rows.having("tr", "cell")) == sum(len(r.cells) for r in with_cells)


def test_the_paired_row_shows_the_tables_numbers_for_both_gradings(demo):
    _, page, table, _ = demo
    text = page.read_text()
    row = re.search(r'<tr class="comparison" data-condition="anthropic">(.*?)</tr>', text).group(1)
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    by_grading = {r["grading"]: r for r in table["rows"] if r["condition"] == "anthropic"}
    expected = ["anthropic", "5"]
    for grading in ("original", "regraded"):
        r = by_grading[grading]
        sign = lambda v: "0.0" if round(100 * v, 1) == 0 else f"{100 * v:+.1f}".replace("-", "−")  # noqa: E731
        expected += [f"{100 * r['pass_rate_baseline']:.1f}", f"{100 * r['pass_rate_treatment']:.1f}",
                     str(r["gains"]), str(r["regressions"]), f"{r['net']:+d}".replace("-", "−") if r["net"] else "0",
                     sign(r["delta"]), f"[{sign(r['ci_lower'])}, {sign(r['ci_upper'])}]", f"{r['p_value']:.3f}",
                     f"{r['p_adjusted']:.3f}"]
    assert cells == expected
    # by hand (expected.json): anthropic's 15 failures were all artifacts, so regraded it gains three tasks
    assert cells[13:16] == ["3", "0", "+3"]
    assert cells[11:13] == ["40.0", "100.0"]  # two of five tasks pass under none; all five, regraded, under anthropic


def test_the_page_fetches_nothing(demo):
    _, page, _, _ = demo
    text = page.read_text()
    assert "default-src 'none'" in text  # the browser itself refuses any fetch
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|file:)""", text, re.I)
    assert not re.search(r"@import|url\((?!#)", text)  # url(#id) points inside the page (the plot's clip paths)
    addresses = set(re.findall(r"https?://[^\s\"'<>]+", text))
    assert addresses <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}  # SVG namespace names


def test_what_an_agent_wrote_is_escaped(demo, tmp_path):
    results, _, _, _ = demo
    lines = results.read_text().splitlines()
    record = json.loads(lines[1])
    record["cells"][0]["formula"] = '="<script>alert(1)</script>"'
    record["message"] = "<img src=x onerror=alert(1)>"
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    page = tmp_path / "hostile.html"
    assert invoke("report", hostile, "-o", page).exit_code == 0
    text = page.read_text()
    assert "<script>alert" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_case_in_two_results_files_is_an_error(demo, tmp_path):
    results, _, _, _ = demo
    result = invoke("report", results, results, "-o", tmp_path / "twice.html")
    assert result.exit_code != 0 and "is named twice" in result.output
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(Path(results).read_bytes())
    result = invoke("report", results, copy, "-o", tmp_path / "twice.html")
    assert result.exit_code != 0 and f"is in two of them ({results} and {copy})" in result.output
    assert not (tmp_path / "twice.html").exists()


def require_chromium():
    from regrade.reporting.browser import BrowserMissing, chromium

    try:
        chromium()
    except BrowserMissing as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have Chromium: {exc}")
        pytest.skip(str(exc))


@pytest.mark.slow
def test_the_demo_report_renders_in_headless_chromium(demo, tmp_path):
    require_chromium()
    import numpy
    from PIL import Image

    from regrade.reporting.browser import rendered_dom, screenshot

    _, page, _, _ = demo
    shot = screenshot(page, tmp_path / "report.png", 1280, 1600)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 1600)
    pixels = numpy.asarray(image).astype(int)
    ink = (pixels.sum(axis=2) < 600).mean()
    assert ink > 0.02, f"only {ink:.1%} of the screenshot is drawn"  # text, tables and the plot, not a blank page
    red, green, blue = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((blue > 140) & (red < 60) & (green < 120)).sum() > 50  # the plot's blue regraded markers are on screen
    dom = parsed(rendered_dom(page))
    assert any(t == "html" and a.get("data-script") == "ran" for t, a in dom.found)  # the script ran to its end
    assert sorted(a["data-condition"] for a in dom.having("tr", "comparison")) == ["anthropic", "community"]
    assert len(dom.having("select", "filter")) == 3  # condition, verdict, reason
    drill = dom.having("details", "case")[0]
    opened = parsed(rendered_dom(page, fragment=drill["id"]))
    target = next(a for a in opened.having("details", "case") if a["id"] == drill["id"])
    assert "open" in target  # following a case's link opens its cells


def test_every_verdict_cell_reason_and_rule_kind_has_a_meaning():
    from regrade.engines.rules import RULES
    from regrade.grading.reasons import REASONS, VERDICT_MEANINGS, meaning
    from regrade.grading.verdicts import CELL_REASONS, VERDICTS

    assert set(VERDICTS) == set(VERDICT_MEANINGS)
    assert set(CELL_REASONS) <= set(REASONS)
    assert {rule.reason for rule in RULES} <= set(REASONS)
    assert meaning(RULES[0].id) == RULES[0].why  # a rule id means what its rule says
    assert meaning("no-such-reason") == "no description: see docs/grading.md"


def test_tasks_in_only_one_condition_are_said(demo, tmp_path):
    results, _, _, _ = demo
    lines = results.read_text().splitlines()
    kept = [lines[0]] + [line for line in lines[1:]
                         if not (json.loads(line)["condition"] == "community" and json.loads(line)["task_id"] == "32293")]
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(kept) + "\n")
    page = tmp_path / "partial.html"
    assert invoke("report", partial, "-o", page).exit_code == 0
    assert ("warning: demo-agent / spreadsheetbench / community: 1 tasks are in only one of it and none, so out of "
            "n (32293)") in page.read_text()


def test_the_plot_is_the_same_svg_for_the_same_rows():
    from regrade.paired.tables import paired_table
    from regrade.reporting.forest import forest_svg

    records = [{"stack": "s", "benchmark": "b", "condition": c, "task_id": str(i), "passed": (i + len(c)) % 3 == 0}
               for c in ("none", "skills", "tools") for i in range(12)]
    rows = [r.as_row() for r in paired_table(records, "none")]
    first = forest_svg(rows)
    assert first == forest_svg(rows) and first.startswith("<svg")
    assert "skills" in first and "tools" in first  # the labels are text in the SVG, not paths
