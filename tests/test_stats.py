"""Statistics against independent references: statsmodels, scipy and published values."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regrade.paired.stats import adjust, mcnemar, mcnemar_exact, mcnemar_mid_p, newcombe_interval, wald_interval, wilson

statsmodels = pytest.importorskip("statsmodels.stats.contingency_tables")
scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("regressions, gains", [(2, 10), (35, 62), (0, 0), (0, 5), (7, 7), (324, 553), (1, 0)])
def test_mcnemar_matches_statsmodels_and_scipy(regressions, gains):
    # the 2x2 table [[retained, regressions], [gains, residual]]; concordant cells do not matter
    table = [[13, regressions], [gains, 21]]
    reference = statsmodels.mcnemar(table, exact=True).pvalue
    assert mcnemar_exact(regressions, gains) == pytest.approx(reference, rel=1e-12, abs=1e-300)
    if regressions + gains:
        binomial = scipy_stats.binomtest(min(regressions, gains), regressions + gains, 0.5).pvalue
        assert mcnemar_exact(regressions, gains) == pytest.approx(binomial, rel=1e-12)


@given(st.integers(0, 80), st.integers(0, 80))
def test_mid_p_matches_scipy_binomial(regressions, gains):
    # mid-p = 2 (P[X <= k - 1] + P[X = k] / 2), X ~ Binomial(b + c, 1/2), k = min(b, c), capped at 1
    n, k = regressions + gains, min(regressions, gains)
    reference = 1.0 if n == 0 else min(1.0, 2 * (scipy_stats.binom.cdf(k - 1, n, 0.5) + scipy_stats.binom.pmf(k, n, 0.5) / 2))
    assert mcnemar_mid_p(regressions, gains) == pytest.approx(reference, rel=1e-9, abs=1e-300)
    assert mcnemar_mid_p(regressions, gains) <= mcnemar_exact(regressions, gains)
    assert mcnemar(regressions, gains, "mid-p") == mcnemar_mid_p(regressions, gains)


def test_mid_p_reproduces_fagerland_lydersen_laake_2013():
    # Their worked example (Bentur et al. 2009, airway hyper-responsiveness before and after
    # treatment): 1 and 7 discordant pairs; the paper gives exact p = 0.070 and mid-p = 0.039.
    assert round(mcnemar_exact(1, 7), 3) == 0.070
    assert round(mcnemar_mid_p(1, 7), 3) == 0.039
    with pytest.raises(ValueError, match="unknown test"):
        mcnemar(1, 7, "asymptotic")


# (retained, regressions, gains, residual) -> delta, 95% interval; the first row is Newcombe's (1998) example (a),
# the others were computed by an independent implementation of method 10
NEWCOMBE = [
    ((36, 2, 12, 0), 0.2000, (0.0569, 0.3404)),
    ((66, 2, 10, 16), 0.0851, (0.0114, 0.1608)),
    ((213, 35, 62, 82), 0.0689, (0.0197, 0.1175)),
    ((5, 0, 0, 5), 0.0, (-0.1666, 0.1666)),
    ((0, 3, 0, 7), -0.3000, (-0.6032, 0.0376)),
]


@pytest.mark.parametrize("counts, delta, interval", NEWCOMBE)
def test_newcombe_method_10_matches_the_reference_values(counts, delta, interval):
    retained, regressions, gains, residual = counts
    assert round((gains - regressions) / sum(counts), 4) == pytest.approx(delta)
    lower, upper = newcombe_interval(*counts)
    assert (round(lower, 4), round(upper, 4)) == pytest.approx(interval, abs=1e-4)


def test_wald_reproduces_the_two_study_rows():
    # N=94, no-skill pass rate 72.3% (68 tasks), c=10, b=2 -> (+1.5, +15.5) points, p=0.039
    retained = 68 - 2
    lower, upper = wald_interval(retained, 2, 10, 94 - retained - 12)
    assert (round(100 * lower, 1), round(100 * upper, 1)) == (1.5, 15.5)
    assert round(mcnemar_exact(2, 10), 3) == 0.039
    # N=392, 63.3% (248 tasks), c=62, b=35 -> (+2.0, +11.8) points, p=0.008
    retained = 248 - 35
    lower, upper = wald_interval(retained, 35, 62, 392 - retained - 97)
    assert (round(100 * lower, 1), round(100 * upper, 1)) == (2.0, 11.8)
    assert round(mcnemar_exact(35, 62), 3) == 0.008


def test_family_corrections_match_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.039, 0.008, 0.2, 0.0001, 0.5, 0.03]
    for ours, theirs in (("bonferroni", "bonferroni"), ("holm", "holm")):
        assert adjust(p, ours) == pytest.approx(list(multipletests(p, method=theirs)[1]))
    assert adjust(p, "none") == p
    assert 0.05 / 18 == pytest.approx(0.0028, abs=1e-4)  # the study's 18-comparison threshold


def test_no_discordant_pairs_gives_p_one_and_a_defined_interval():
    assert mcnemar_exact(0, 0) == 1.0
    for interval in (newcombe_interval(10, 0, 0, 0), wald_interval(10, 0, 0, 0), newcombe_interval(0, 0, 0, 1)):
        assert interval[0] <= 0.0 <= interval[1]


@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_swapping_baseline_and_treatment_mirrors_the_interval(retained, regressions, gains, residual):
    if retained + regressions + gains + residual == 0:
        return
    for interval in (newcombe_interval, wald_interval):
        lower, upper = interval(retained, regressions, gains, residual)
        swapped = interval(retained, gains, regressions, residual)
        assert swapped == pytest.approx((-upper, -lower), abs=1e-12)
        delta = (gains - regressions) / (retained + regressions + gains + residual)
        assert lower - 1e-12 <= delta <= upper + 1e-12
    assert mcnemar_exact(regressions, gains) == mcnemar_exact(gains, regressions)


@given(st.integers(0, 300), st.integers(1, 300))
def test_wilson_matches_statsmodels_and_is_exact_at_the_ends(successes, n):
    from statsmodels.stats.proportion import proportion_confint

    successes = min(successes, n)
    lower, upper = wilson(successes, n)
    assert (lower, upper) == pytest.approx(proportion_confint(successes, n, alpha=0.05, method="wilson"), abs=1e-12)
    # none (all) of n: the bound is 0 (1) exactly, not the formula's rounding (8.6e-19 for 0 of 280)
    assert (successes != 0 or lower == 0.0) and (successes != n or upper == 1.0)
