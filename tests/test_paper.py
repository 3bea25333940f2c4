"""The paired table typeset for papers: headers, intervals, the note, --percent and --columns."""

import csv
import io
import json

from click.testing import CliRunner

from regrade.cli import main
from regrade.paired.tables import paired_table
from regrade.render.paper import PAPER_HEADERS, paper_table


def outcomes(condition, passes):
    return [{"stack": "s", "benchmark": "b", "condition": condition, "task_id": str(i), "passed": p}
            for i, p in enumerate(passes)]


# ten tasks: the baseline passes 0-3; skills passes 2-8: gains 4-8 (5), regressions 0-1 (2), retained 2-3 (2)
RECORDS = outcomes("none", [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]) + outcomes("skills", [0, 0, 1, 1, 1, 1, 1, 1, 1, 0])


def rows(**options):
    return [c.as_row() for c in paired_table(RECORDS, "none", **options) if c.grading == "original"]


def test_every_field_of_a_comparison_has_a_readable_header():
    assert set(rows()[0]) <= set(PAPER_HEADERS)


def test_markdown_in_percentage_points_with_the_interval_in_one_cell_and_its_note():
    table = paper_table(rows(), "markdown", percent=True).splitlines()
    assert table[0] == ("| Condition | Grading | N | Baseline pass rate | Treatment pass rate | Gains | Regressions "
                        "| Net | Δ | 95% CI | p | p (Bonferroni) |")
    # pass rates 4/10 and 7/10; delta (5 - 2) / 10 = +30.0 points; exact McNemar on 2 and 5:
    # 2 * (1 + 7 + 21) / 128 = 0.453
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    assert cells[:9] == ["skills", "original", "10", "40.0", "70.0", "5", "2", "+3", "+30.0"]
    lower, upper = rows()[0]["ci_lower"], rows()[0]["ci_upper"]
    assert cells[9] == f"[{100 * lower:+.1f}, {100 * upper:+.1f}]".replace("-", "−")
    assert cells[10:] == ["0.453", "0.453"]
    assert table[-1].startswith("*Note.* s / b, each condition against the baseline none. Rates, Δ and interval in "
                                "percentage points.")
    assert "95% Newcombe hybrid score interval" in table[-1] and "Bonferroni over a family of 1" in table[-1]


def test_latex_names_the_mid_p_test_the_wald_interval_and_holm_in_its_caption():
    chosen = rows(test="mid-p", ci="wald", correction="holm", alpha=0.1)
    latex = paper_table(chosen, "latex", alpha=0.1)
    caption = next(line for line in latex.splitlines() if line.startswith("\\caption{"))
    assert "90\\% paired Wald interval" in caption
    assert "mid-p McNemar test (Fagerland, Lydersen and Laake 2013)" in caption
    assert "adjusted p: Holm over a family of 1" in caption
    # mid-p on 2 and 5 discordant pairs: (2 * (1 + 7) + 21) / 128 = 0.289
    assert "& 0.289 & 0.289 \\\\" in latex
    assert latex.splitlines()[0] == "\\begin{table}" and latex.splitlines()[-1] == "\\end{table}"


def test_chosen_columns_in_their_order():
    table = paper_table(rows(), "markdown", columns=["gains", "condition", "interval"]).splitlines()
    assert table[0] == "| Gains | Condition | 95% CI |"
    assert table[1] == "|---:|---|---:|"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_cli_checks_columns_and_percent(tmp_path):
    source = tmp_path / "outcomes.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in RECORDS))
    result = invoke("table", source, "--columns", "condition,gains,net")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:3] == ["condition  gains  net", "---------  -----  ---", "skills         5    3"]
    wrong = invoke("table", source, "--columns", "condition,gainz")
    assert wrong.exit_code == 2 and "unknown field gainz" in wrong.output
    assert invoke("table", source, "--columns", "interval").exit_code == 2  # typeset formats only
    percent = invoke("table", source, "--percent")
    assert percent.exit_code == 2 and "--percent typesets latex and markdown" in percent.output
    csv_rows = list(csv.DictReader(io.StringIO(invoke("table", source, "--test", "mid-p", "--format", "csv").stdout)))
    assert (csv_rows[0]["test"], float(csv_rows[0]["p_value"])) == ("mid-p", 37 / 128)
