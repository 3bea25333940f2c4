"""Paired transitions, counted by hand on small tables."""

import pytest

from hypothesis import given
from hypothesis import strategies as st

from regrade.paired.tables import PairingError, case_grade, paired_table, typed
from regrade.paired.stats import mcnemar_exact, newcombe_interval, wald_interval


def rec(condition, task, shallow, full, case=1, original=None, stack="s"):
    return {"stack": stack, "benchmark": "b", "condition": condition, "task_id": task, "case": case,
            "shallow_pass": shallow, "full_pass": full, "original_pass": original}


def test_transitions_before_and_after_regrading():
    records = [
        rec("none", "t1", True, True), rec("skill", "t1", False, True),   # artifact: regression -> retained
        rec("none", "t2", False, False), rec("skill", "t2", True, True),  # gain in both
        rec("none", "t3", True, True), rec("skill", "t3", True, False),   # false pass: retained -> regression
        rec("none", "t4", False, None), rec("skill", "t4", False, None),  # unevaluable: original kept
        rec("skill", "t5", True, True),                                   # unpaired
    ]
    original, regraded = paired_table(records, "none")
    assert (original.grading, original.n, original.gains, original.regressions, original.retained, original.residual) == (
        "original", 4, 1, 1, 1, 1)
    assert (regraded.gains, regraded.regressions, regraded.retained, regraded.residual, regraded.net) == (1, 1, 1, 1, 0)
    assert original.unpaired == 1
    assert original.pass_rate_baseline == pytest.approx(2 / 4)
    assert regraded.pass_rate_treatment == pytest.approx(2 / 4)


def test_task_passes_only_when_all_cases_pass():
    records = [rec("none", "t", True, True, case=1), rec("none", "t", True, True, case=2),
               rec("skill", "t", True, True, case=1), rec("skill", "t", False, False, case=2)]
    (original, _) = paired_table(records, "none")
    assert (original.regressions, original.retained) == (1, 0)


def test_original_pass_overrides_the_shallow_grade():
    assert case_grade(typed([rec("x", "t", True, False, original=False)])[0], "original") is False
    assert case_grade(typed([rec("x", "t", True, None, original=False)])[0], "regraded") is False
    assert case_grade(typed([rec("x", "t", False, True, original=False)])[0], "regraded") is True


def test_missing_baseline_is_a_clear_error():
    with pytest.raises(PairingError, match="no baseline condition 'none'"):
        paired_table([rec("skill", "t", True, True)], "none")


def test_statistics_per_comparison_and_the_family_correction():
    # skill: 3 gains, 0 regressions, 2 retained over 5 tasks; other: 1 gain, 1 regression
    records = []
    for task, (base, skill, other) in enumerate([(False, True, True), (False, True, False), (False, True, False),
                                                 (True, True, False), (True, True, True)]):
        records += [rec("none", f"t{task}", base, base), rec("skill", f"t{task}", skill, skill),
                    rec("other", f"t{task}", other, other)]
    rows = {(c.grading, c.condition): c for c in paired_table(records, "none", correction="bonferroni")}
    skill = rows[("original", "skill")]
    assert (skill.gains, skill.regressions, skill.retained, skill.residual, skill.delta) == (3, 0, 2, 0, 0.6)
    assert skill.p_value == mcnemar_exact(0, 3) == 0.25  # 2 * (1/2)^3
    assert (skill.family_size, skill.p_adjusted) == (2, 0.5)
    assert (skill.ci_lower, skill.ci_upper) == newcombe_interval(2, 0, 3, 0)
    assert skill.regression_tax == 0.0 and skill.normalized_gain == pytest.approx((1.0 - 0.4) / (1 - 0.4))
    other = rows[("original", "other")]
    assert (other.gains, other.regressions, other.regression_tax) == (1, 1, 1.0)
    wald = {c.condition: c for c in paired_table(records, "none", ci="wald", correction="holm") if c.grading == "original"}
    assert (wald["skill"].ci_lower, wald["skill"].ci_upper) == wald_interval(2, 0, 3, 0)
    assert wald["skill"].p_adjusted == pytest.approx(0.5)  # Holm: the smaller p (0.25) times 2


def test_trials_pair_on_the_majority_and_estimate_the_noise_floor():
    records = []
    # baseline, 3 trials: t1 passes 2 of 3 (majority pass), t2 1 of 3 (fail), t3 always passes, t4 never
    for trial, outcome in enumerate([(True, True, True, False), (True, False, True, False), (False, False, True, False)], 1):
        for task, passed in zip(("t1", "t2", "t3", "t4"), outcome):
            records.append(rec("none", task, passed, passed) | {"trial": trial})
    # treatment, 2 trials: t4 passes once (a tie: fail), t1 passes twice
    for trial, outcome in enumerate([(True, True, True, True), (True, True, True, False)], 1):
        for task, passed in zip(("t1", "t2", "t3", "t4"), outcome):
            records.append(rec("skill", task, passed, passed) | {"trial": trial})
    (row,) = [c for c in paired_table(records, "none") if c.grading == "original"]
    # majorities: baseline P F P F, treatment P P P F -> one gain (t2)
    assert (row.gains, row.regressions, row.retained, row.residual) == (1, 0, 2, 1)
    assert row.pass_rate_baseline == pytest.approx((3 / 4 + 2 / 4 + 1 / 4) / 3)  # mean of per-trial rates
    assert row.pass_rate_treatment == pytest.approx((4 / 4 + 3 / 4) / 2)
    # baseline trial pairs disagree on: (1,2) t2; (1,3) t1, t2; (2,3) t1 -> (1 + 2 + 1) / 3 pairs / 4 tasks
    assert row.noise_discordance == pytest.approx(4 / 12)
    assert row.noise_gains == row.noise_regressions == pytest.approx(4 * (4 / 12) / 2)
    assert (row.trials_baseline, row.trials_treatment) == (3, 2)


def test_no_discordant_pairs_and_a_single_task():
    records = [rec("none", "t", True, True), rec("skill", "t", True, True)]
    (row, _) = paired_table(records, "none")
    assert (row.n, row.p_value, row.delta, row.regression_tax) == (1, 1.0, 0.0, None)
    assert row.ci_lower <= 0 <= row.ci_upper
    assert row.normalized_gain is None  # the baseline already passes everything


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=40))
def test_net_is_n_delta_and_swapping_conditions_negates_delta(pairs):
    records = []
    for task, (base, treated) in enumerate(pairs):
        records += [rec("a", f"t{task}", base, base), rec("b", f"t{task}", treated, treated)]
    forward = next(c for c in paired_table(records, "a") if c.grading == "original")
    backward = next(c for c in paired_table(records, "b") if c.grading == "original")
    assert forward.net == pytest.approx(forward.n * forward.delta)
    assert backward.delta == pytest.approx(-forward.delta)
    assert (backward.gains, backward.regressions) == (forward.regressions, forward.gains)
    assert (backward.ci_lower, backward.ci_upper) == pytest.approx((-forward.ci_upper, -forward.ci_lower))


def test_the_pandas_api_and_an_outcomes_file_from_another_grader(tmp_path):
    import pandas as pd

    import regrade
    from regrade.results.files import ResultsError
    from regrade.results.outcomes import read_outcomes

    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("stack,benchmark,condition,task_id,passed\n"
                        "s,b,none,t1,true\ns,b,none,t2,false\ns,b,none,t3,false\n"
                        "s,b,skill,t1,true\ns,b,skill,t2,1\ns,b,skill,t3,pass\n")
    _, records = read_outcomes(outcomes)
    table = regrade.paired_table(pd.DataFrame([r.model_dump() for r in records]), baseline="none", ci="wald")
    assert list(table["grading"]) == ["original"]  # no regrade results: only the grader's own grades
    row = table.iloc[0]
    assert (row["gains"], row["regressions"], row["retained"], row["residual"], row["net"]) == (2, 0, 1, 0, 2)
    assert (row["ci_lower"], row["ci_upper"]) == pytest.approx(wald_interval(1, 0, 2, 0))
    assert row["p_value"] == pytest.approx(0.5)  # 2 * (1/2)^2
    bad = tmp_path / "bad.csv"
    bad.write_text("stack,benchmark,condition,task_id,passed\ns,b,none,t1,maybe\n")
    with pytest.raises(ResultsError, match="row 1: passed 'maybe' is not a pass or a fail"):
        read_outcomes(bad)


def test_soft_scores_pair_the_fraction_of_cases_that_pass():
    from scipy.stats import norm

    records = []
    # baseline / treatment cases passed out of 3: t1 1 -> 3, t2 2 -> 2, t3 3 -> 1, t4 0 -> 0, t5 1 -> 2
    for task, (base, treated) in {"t1": (1, 3), "t2": (2, 2), "t3": (3, 1), "t4": (0, 0), "t5": (1, 2)}.items():
        for case in (1, 2, 3):
            records.append(rec("none", task, case <= base, case <= base, case=case))
            records.append(rec("skill", task, case <= treated, case <= treated, case=case))
    (row,) = [c for c in paired_table(records, "none", aggregate="soft") if c.grading == "original"]
    assert (row.gains, row.regressions, row.retained, row.residual) == (2, 1, 1, 1)  # t1, t5 up; t3 down
    differences = [2 / 3, 0, -2 / 3, 0, 1 / 3]
    mean = sum(differences) / 5
    assert row.delta == pytest.approx(mean)
    assert row.pass_rate_baseline == pytest.approx((1 + 2 + 3 + 0 + 1) / 15)
    sem = (sum((d - mean) ** 2 for d in differences) / 4 / 5) ** 0.5
    assert (row.ci_lower, row.ci_upper) == pytest.approx((mean - norm.ppf(0.975) * sem, mean + norm.ppf(0.975) * sem))
    assert (row.ci_method, row.p_value) == ("normal", mcnemar_exact(1, 2))  # the sign test on 2 up, 1 down
