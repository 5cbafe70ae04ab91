"""Reliability statistics against published worked examples, the krippendorff package and statsmodels."""

import krippendorff
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa, to_table
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from analysis.bootstrap import percentile_interval
from analysis.reliability import (
    FEW_ITEMS,
    NO_SPREAD,
    ONE_CATEGORY,
    Estimate,
    bootstrap_weights,
    category_counts,
    cohen_kappa,
    krippendorff_alpha,
    randolph_kappa,
    reliability_with_ci,
)

nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C (nominal data, 4 observers x 12
# units, missing values): rows are observers A-D, columns units 1-12. Published: alpha_nominal = 0.743.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
).T  # items x raters

# 3 coders x 15 units with missing values, the krippendorff package's documented example (the data of
# Wikipedia's "Krippendorff's alpha" computational example): alpha_nominal = 0.691358.
WIKIPEDIA = np.array(
    [
        [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
        [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
        [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
    ]
).T

# Fleiss (1971) as tabulated in Wikipedia's "Fleiss' kappa" worked example: 10 subjects, 14 raters each,
# counts in 5 categories. Published there: P-bar = 0.378, Fleiss' kappa = 0.210.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def matrix_from_counts(counts: np.ndarray) -> np.ndarray:
    """An items x raters matrix whose rows hold each category code as often as `counts` says."""
    return np.array([np.repeat(np.arange(counts.shape[1]), row) for row in counts], dtype=float)


def random_matrix(seed: int, items: int, raters: int, categories: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, items)[:, None]
    noisy = np.where(rng.random((items, raters)) < 0.6, truth, rng.integers(0, categories, (items, raters)))
    return np.where(rng.random((items, raters)) < missing, nan, noisy.astype(float))


def test_krippendorff_alpha_reproduces_krippendorff_2011_nominal_example():
    alpha = krippendorff_alpha(KRIPPENDORFF_2011)
    assert round(alpha, 3) == 0.743
    assert abs(alpha - krippendorff.alpha(KRIPPENDORFF_2011.T, level_of_measurement="nominal")) < 1e-12


def test_krippendorff_alpha_reproduces_the_documented_three_coder_example():
    assert round(krippendorff_alpha(WIKIPEDIA), 6) == 0.691358


@pytest.mark.parametrize("seed", range(12))
def test_krippendorff_alpha_equals_the_krippendorff_package_on_random_matrices_with_missing_values(seed):
    rng = np.random.default_rng(100 + seed)
    matrix = random_matrix(seed, int(rng.integers(5, 200)), int(rng.integers(2, 9)), int(rng.integers(2, 5)), 0.35)
    expected = krippendorff.alpha(matrix.T, level_of_measurement="nominal")
    assert abs(krippendorff_alpha(matrix) - expected) < 1e-9
    assert abs(reliability_with_ci(matrix, "krippendorff_alpha", rng=rng, resamples=10).estimate - expected) < 1e-9


def test_randolph_kappa_reproduces_the_online_kappa_calculator_example():
    """Randolph's Online Kappa Calculator (justusrandolph.net/kappa, quoted in statsmodels' tests): 2 cases,
    8 raters, 2 categories, counts [[7, 1], [3, 5]] -> overall agreement 0.607143, free-marginal kappa 0.214286.

    By hand: P_1 = (7*6 + 1*0) / (8*7) = 42/56 = 0.75, P_2 = (3*2 + 5*4) / 56 = 26/56; P_o = 68/112 = 0.607143;
    P_e = 1/2; kappa = (0.607143 - 0.5) / 0.5 = 0.214286.
    """
    table = np.array([[7, 1], [3, 5]])
    assert randolph_kappa(table, 2) == pytest.approx(0.214286, abs=1e-6)
    assert randolph_kappa(table, 2) == pytest.approx((68 / 112 - 0.5) / 0.5, abs=1e-15)
    assert randolph_kappa(table, 2) == pytest.approx(fleiss_kappa(table, method="randolph"), abs=1e-15)
    assert randolph_kappa([[7, 0], [7, 0]], 2) == 1.0


def test_randolph_kappa_on_fleiss_1971_table():
    """Wikipedia's Fleiss' kappa example gives P-bar = 0.378 (the mean of the per-subject agreements P_i); with
    k = 5 free-marginal categories P_e = 1/5, so kappa_free = (0.378 - 0.2) / (1 - 0.2) = 0.2225."""
    assert randolph_kappa(FLEISS_1971, 5) == pytest.approx(0.2225, abs=5e-4)
    assert randolph_kappa(FLEISS_1971, 5) == pytest.approx(fleiss_kappa(FLEISS_1971, method="randolph"), abs=1e-12)
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.210, abs=5e-4)  # the table is the published one
    estimate = reliability_with_ci(matrix_from_counts(FLEISS_1971), "randolph_kappa", rng=np.random.default_rng(0),
                                   n_categories=5)  # fmt: skip
    assert estimate.estimate == pytest.approx(randolph_kappa(FLEISS_1971, 5), abs=1e-15)
    assert (estimate.n_items, estimate.n_raters) == (10, 14)


@pytest.mark.parametrize("seed", range(5))
def test_randolph_kappa_equals_statsmodels_on_random_complete_ratings(seed):
    matrix = random_matrix(seed, 60, 4, 3, 0.0)
    table, _ = aggregate_raters(matrix)
    assert randolph_kappa(category_counts(matrix), 3) == pytest.approx(fleiss_kappa(table, "randolph"), abs=1e-12)


def test_randolph_kappa_ignores_items_with_fewer_than_two_ratings():
    assert randolph_kappa([[2, 0], [1, 0], [0, 0], [1, 1]], 2) == pytest.approx(((1 + 0) / 2 - 0.5) / 0.5)
    assert randolph_kappa([[1, 0], [0, 1]], 2) is None


def test_cohen_kappa_reproduces_the_textbook_two_by_two_table():
    """Wikipedia's "Cohen's kappa" example: 50 proposals, both Yes 20, A Yes/B No 5, A No/B Yes 10, both No 15.
    p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4."""
    a = np.r_[np.ones(25), np.zeros(25)]
    b = np.r_[np.ones(20), np.zeros(5), np.ones(10), np.zeros(15)]
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-15)
    assert cohen_kappa(a, b) == pytest.approx(sm_cohens_kappa([[20, 5], [10, 15]]).kappa, abs=1e-15)


def test_cohen_kappa_reproduces_the_sas_three_category_example():
    """SAS PROC FREQ's simple kappa example (statsmodels' tests): table [[0, 4, 1], [0, 8, 0], [0, 1, 5]] ->
    kappa 0.4842. Direct: row totals (5, 8, 6), column totals (0, 13, 6); p_o = 13/19 = 0.68421,
    p_e = (5*0 + 8*13 + 6*6) / 19^2 = 140/361 = 0.38781; kappa = (0.68421 - 0.38781) / (1 - 0.38781) = 0.48416."""
    table = np.array([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    a = np.repeat(np.repeat(np.arange(3), 3), table.ravel()).astype(float)
    b = np.repeat(np.tile(np.arange(3), 3), table.ravel()).astype(float)
    total = table.sum()
    p_o = np.trace(table) / total
    p_e = (table.sum(axis=1) * table.sum(axis=0)).sum() / total**2
    assert cohen_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-15)
    assert round(cohen_kappa(a, b), 4) == 0.4842


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_equals_statsmodels_on_random_pairs_with_missing_values(seed):
    matrix = random_matrix(seed, 80, 2, 3, 0.1)
    both = matrix[~np.isnan(matrix).any(axis=1)].astype(int)
    expected = sm_cohens_kappa(to_table(both, bins=np.arange(4))[0]).kappa
    assert cohen_kappa(matrix[:, 0], matrix[:, 1]) == pytest.approx(expected, abs=1e-12)
    estimate = reliability_with_ci(matrix, "cohen_kappa", rng=np.random.default_rng(seed), resamples=50)
    assert estimate.estimate == pytest.approx(expected, abs=1e-12)
    assert estimate.n_items == both.shape[0]


def test_category_counts_counts_codes_per_item():
    matrix = [[0, 1, nan], [1, 1, 1], [nan, nan, nan]]
    np.testing.assert_array_equal(category_counts(matrix), [[1, 1], [0, 3], [0, 0]])
    np.testing.assert_array_equal(category_counts(matrix, categories=[0, 1, 2]), [[1, 1, 0], [0, 3, 0], [0, 0, 0]])
    with pytest.raises(ValueError):
        category_counts(matrix, categories=[0, 2])


def naive_statistic(metric: str, matrix: np.ndarray, n_categories: int) -> float:
    if metric == "randolph_kappa":
        return randolph_kappa(category_counts(matrix), n_categories)
    if metric == "krippendorff_alpha":
        return krippendorff.alpha(matrix.T, level_of_measurement="nominal")
    return cohen_kappa(matrix[:, 0], matrix[:, 1])


@pytest.mark.parametrize("metric", ["randolph_kappa", "krippendorff_alpha", "cohen_kappa"])
def test_bootstrap_interval_equals_a_naive_loop_over_resampled_items(metric):
    """Same item weights (the same seed): resampling the items in a Python loop, recomputing the statistic with
    the reference implementation each time, gives the same percentile interval as the vectorised form."""
    raters = 2 if metric == "cohen_kappa" else 4
    matrix = random_matrix(7, 40, raters, 3, 0.0 if metric == "cohen_kappa" else 0.25)
    matrix = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]  # the items the statistic uses
    resamples = 300
    estimate = reliability_with_ci(matrix, metric, rng=np.random.default_rng(3), resamples=resamples, n_categories=3)

    weights = bootstrap_weights(matrix.shape[0], resamples, np.random.default_rng(3)).astype(int)
    values = []
    for row in weights:
        resampled = matrix[np.repeat(np.arange(matrix.shape[0]), row)]
        values.append(naive_statistic(metric, resampled, 3))
    naive = percentile_interval(values)
    assert estimate.ci_low == pytest.approx(naive.low, abs=1e-12)
    assert estimate.ci_high == pytest.approx(naive.high, abs=1e-12)
    assert estimate.ci_low <= estimate.estimate <= estimate.ci_high
    assert estimate.note == ""


def test_reliability_interval_defaults_to_scipys_percentile_bootstrap_with_1000_resamples():
    """Without `resamples`: the interval `scipy.stats.bootstrap(n_resamples=1000, method="percentile")` gives
    over the items with the same seed (it draws the same item indices), and the generator is left where those
    1,000 resamples leave it."""
    matrix = random_matrix(7, 40, 2, 3, 0.0)
    rng = np.random.default_rng(5)
    estimate = reliability_with_ci(matrix, "cohen_kappa", rng=rng)

    reference_rng = np.random.default_rng(5)
    reference = stats.bootstrap(
        (np.arange(40),),
        lambda items: cohen_kappa(matrix[items, 0], matrix[items, 1]),
        vectorized=False,
        n_resamples=1000,
        method="percentile",
        rng=reference_rng,
    ).confidence_interval
    assert estimate.ci_low == pytest.approx(reference.low, abs=1e-12)
    assert estimate.ci_high == pytest.approx(reference.high, abs=1e-12)
    assert rng.bit_generator.state == reference_rng.bit_generator.state


def test_bootstrap_weights_are_multinomial_counts():
    weights = bootstrap_weights(25, 2000, np.random.default_rng(0))
    assert weights.shape == (2000, 25)
    assert (weights.sum(axis=1) == 25).all()
    assert weights.mean() == pytest.approx(1, abs=0.02)
    assert weights.var() == pytest.approx(1 - 1 / 25, abs=0.05)  # Multinomial(n, 1/n): var = 1 - 1/n


def test_reliability_estimate_counts_items_and_raters_that_were_used():
    matrix = np.array([[0, 0, nan], [1, 0, nan], [nan, nan, 1], [1, 1, 1], [0, 1, 0]])
    estimate = reliability_with_ci(matrix, "krippendorff_alpha", rng=np.random.default_rng(0))
    assert (estimate.n_items, estimate.n_raters) == (4, 3)
    assert estimate.estimate == pytest.approx(krippendorff.alpha(matrix.T, level_of_measurement="nominal"))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("metric", ["randolph_kappa", "krippendorff_alpha", "cohen_kappa"])
def test_degenerate_matrices_are_not_estimable(metric):
    rng = np.random.default_rng(0)
    one_item = reliability_with_ci([[0, 1]], metric, rng=rng)
    assert one_item == Estimate(None, None, None, 1, 2, FEW_ITEMS)
    one_rater = reliability_with_ci([[0], [1], [1]] if metric != "cohen_kappa" else [[0, nan], [1, nan]], metric,
                                    rng=rng)  # fmt: skip
    assert one_rater.estimate is None and one_rater.note == FEW_ITEMS
    empty = reliability_with_ci(np.empty((0, 2)), metric, rng=rng)
    assert empty.estimate is None and empty.note == FEW_ITEMS

    all_equal = reliability_with_ci(np.ones((30, 2)), metric, rng=rng)
    assert (all_equal.ci_low, all_equal.ci_high) == (None, None)
    if metric == "randolph_kappa":  # perfect agreement is kappa_free = 1; there is just nothing to resample
        assert all_equal.estimate == 1.0 and all_equal.note == NO_SPREAD
    else:
        assert all_equal.estimate is None and all_equal.note == ONE_CATEGORY
    assert all_equal.note.startswith("not estimable: ")


def test_point_statistics_return_none_when_undefined():
    assert krippendorff_alpha(np.ones((5, 3))) is None
    assert krippendorff_alpha([[1, nan], [nan, 2]]) is None
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None
    assert cohen_kappa([1, nan], [nan, 1]) is None
    assert cohen_kappa([0, 0, 0], [1, 1, 1]) == 0.0  # disjoint categories: p_e = 0, p_o = 0
    assert randolph_kappa(np.empty((0, 2)), 2) is None


def test_cohen_kappa_needs_exactly_two_raters():
    estimate = reliability_with_ci(np.zeros((5, 3)), "cohen_kappa", rng=np.random.default_rng(0))
    assert estimate.estimate is None and "exactly 2 raters" in estimate.note


def test_resamples_where_alpha_is_undefined_are_dropped_and_counted():
    """One disagreeing item among 19 unanimous ones: resamples that miss it (about (1 - 1/20)^20 = 36%) have
    D_e = 0, so alpha is undefined there; the interval uses the rest and says how many were dropped."""
    matrix = np.zeros((20, 2))
    matrix[0] = [0, 1]
    estimate = reliability_with_ci(matrix, "krippendorff_alpha", rng=np.random.default_rng(0))
    assert estimate.estimate == pytest.approx(krippendorff.alpha(matrix.T, level_of_measurement="nominal"))
    assert estimate.ci_low is not None and "resamples (dropped)" in estimate.note


def test_unknown_metric_and_bad_category_count_raise():
    with pytest.raises(ValueError):
        reliability_with_ci(np.zeros((3, 2)), "fleiss_kappa", rng=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        reliability_with_ci([[0, 1], [2, 2]], "randolph_kappa", rng=np.random.default_rng(0), n_categories=2)
