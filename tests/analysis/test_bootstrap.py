"""BCa and percentile intervals against scipy.stats.bootstrap (same resamples: equal; fresh resamples: close)."""

import warnings

import numpy as np
import pytest
from scipy import stats

from analysis.bootstrap import (
    ALL_EQUAL,
    BCA_UNDEFINED,
    NO_RATINGS,
    ONE_RATING,
    Interval,
    bca_acceleration,
    bca_from_distribution,
    intervals,
    percentile_interval,
    proportion_cis,
)


def scipy_resamples(data: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The resamples scipy.stats.bootstrap draws with rng=default_rng(seed) and no `batch`: one
    `rng.integers(0, n, (resamples, n))` call (`_bootstrap_resample` via `rng_integers`), rows indexing the data.
    """
    return data[np.random.default_rng(seed).integers(0, data.size, (resamples, data.size))]


def jackknife(data: np.ndarray, statistic) -> np.ndarray:
    return np.array([statistic(np.delete(data, i)) for i in range(data.size)])


DATASETS = {
    "binary p=0.3 n=50": (np.random.default_rng(1).random(50) < 0.3).astype(float),
    "binary p=0.04 n=250": (np.random.default_rng(2).random(250) < 0.04).astype(float),
    "normal n=37": np.random.default_rng(3).normal(size=37),
    "exponential n=200": np.random.default_rng(4).exponential(size=200),
    "integers with ties n=15": np.random.default_rng(5).integers(0, 4, 15).astype(float),
}


@pytest.mark.parametrize("statistic", [np.mean, np.median, np.std], ids=["mean", "median", "std"])
@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("resamples, seed", [(1000, 0), (999, 7)])
def test_bca_from_distribution_equals_scipy_given_the_same_resamples(name, statistic, resamples, seed):
    data = DATASETS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about degenerate cases (median of binary data); we compare
        reference = stats.bootstrap(
            (data,), statistic, method="BCa", n_resamples=resamples, rng=np.random.default_rng(seed)
        )
    boot = statistic(scipy_resamples(data, resamples, seed), axis=-1)
    np.testing.assert_array_equal(boot, reference.bootstrap_distribution)

    low, high = bca_from_distribution(statistic(data), boot, jackknife(data, statistic), 0.95)
    np.testing.assert_allclose([low, high], [reference.confidence_interval.low, reference.confidence_interval.high],
                               rtol=0, atol=1e-12, equal_nan=True)  # fmt: skip


def test_bca_from_distribution_equals_scipy_at_other_confidence_levels():
    data = DATASETS["exponential n=200"]
    for confidence in (0.8, 0.9, 0.99):
        reference = stats.bootstrap(
            (data,), np.mean, method="BCa", confidence_level=confidence, rng=np.random.default_rng(3)
        )
        boot = scipy_resamples(data, 9999, 3).mean(axis=-1)
        low, high = bca_from_distribution(data.mean(), boot, jackknife(data, np.mean), confidence)
        assert abs(low - reference.confidence_interval.low) < 1e-12
        assert abs(high - reference.confidence_interval.high) < 1e-12


def test_bca_vectorised_over_cells_equals_per_cell_calls_and_scipy():
    """Cells of different sizes in one call: jackknife values padded with NaN."""
    cells = list(DATASETS.values())
    seeds = range(len(cells))
    boots = np.stack([scipy_resamples(data, 1000, seed).mean(axis=-1) for data, seed in zip(cells, seeds, strict=True)])
    width = max(data.size for data in cells)
    padded = np.full((len(cells), width), np.nan)
    for row, data in enumerate(cells):
        padded[row, : data.size] = jackknife(data, np.mean)
    hats = np.array([data.mean() for data in cells])

    low, high = bca_from_distribution(hats, boots, padded, 0.95)

    for row, (data, seed) in enumerate(zip(cells, seeds, strict=True)):
        one_low, one_high = bca_from_distribution(hats[row], boots[row], jackknife(data, np.mean), 0.95)
        assert (low[row], high[row]) == (one_low, one_high)
        reference = stats.bootstrap((data,), np.mean, method="BCa", n_resamples=1000, rng=np.random.default_rng(seed))
        assert abs(low[row] - reference.confidence_interval.low) < 1e-12
        assert abs(high[row] - reference.confidence_interval.high) < 1e-12


def test_closed_form_acceleration_of_a_proportion_equals_the_jackknife_one():
    """Jackknife of k/n: (k-1)/(n-1) k times, k/(n-1) n-k times, so a = (n - 2k) / (6 sqrt(n k (n - k)))."""
    for n, k in [(2, 1), (10, 3), (200, 7), (1000, 990)]:
        data = np.r_[np.ones(k), np.zeros(n - k)]
        expected = (n - 2 * k) / (6 * np.sqrt(n * k * (n - k)))
        assert abs(bca_acceleration(jackknife(data, np.mean)) - expected) < 1e-12


def test_proportion_cis_equal_bca_on_the_same_binomial_draws_cell_by_cell():
    """The vectorised call equals `bca_from_distribution` per cell on the same draws and an explicit jackknife."""
    k = np.array([3, 40, 117, 199, 1])
    n = np.array([10, 200, 250, 200, 2])
    result = proportion_cis(k, n, rng=np.random.default_rng(11), resamples=1000)

    draws = np.random.default_rng(11).binomial(n, k / n, size=(1000, k.size))
    for cell in range(k.size):
        data = np.r_[np.ones(k[cell]), np.zeros(n[cell] - k[cell])]
        low, high = bca_from_distribution(k[cell] / n[cell], draws[:, cell] / n[cell], jackknife(data, np.mean))
        assert abs(result[cell].low - low) < 1e-12
        assert abs(result[cell].high - high) < 1e-12
        assert result[cell].note == ""


def test_proportion_cis_default_to_1000_resamples_drawn_from_the_given_generator():
    """Without `resamples`: BCa on exactly 1,000 binomial draws per cell made by hand from the same seed, and the
    generator is left where those draws leave it (no more, no fewer numbers consumed)."""
    k, n = np.array([3, 40, 117]), np.array([10, 200, 250])
    rng = np.random.default_rng(21)
    result = proportion_cis(k, n, rng=rng)

    reference = np.random.default_rng(21)
    draws = reference.binomial(n, k / n, size=(1000, k.size))
    assert rng.bit_generator.state == reference.bit_generator.state
    for cell in range(k.size):
        data = np.r_[np.ones(k[cell]), np.zeros(n[cell] - k[cell])]
        low, high = bca_from_distribution(k[cell] / n[cell], draws[:, cell] / n[cell], jackknife(data, np.mean))
        assert abs(result[cell].low - low) < 1e-12
        assert abs(result[cell].high - high) < 1e-12


def test_binomial_draws_have_the_index_resampling_distribution():
    """The mean of n resampled 0/1 values is Binomial(n, k/n)/n: 100,000 resamples drawn both ways have the same
    quantiles (to one step of 1/n, the grid both live on), mean and variance."""
    n, k, resamples = 300, 45, 100_000
    data = np.r_[np.ones(k), np.zeros(n - k)]
    rng = np.random.default_rng(5)
    by_index = np.concatenate([data[rng.integers(0, n, (10_000, n))].mean(axis=1) for _ in range(10)])
    by_binomial = np.random.default_rng(6).binomial(n, k / n, resamples) / n
    levels = [0.001, 0.01, 0.025, 0.1, 0.5, 0.9, 0.975, 0.99, 0.999]
    assert np.all(np.abs(np.quantile(by_index, levels) - np.quantile(by_binomial, levels)) <= 1 / n + 1e-12)
    assert abs(by_index.mean() - by_binomial.mean()) < 3 * np.sqrt(0.15 * 0.85 / n / resamples) * np.sqrt(2)
    assert abs(by_index.var() / by_binomial.var() - 1) < 0.02


PROPORTIONS = [(200, 4), (200, 20), (200, 60), (200, 100), (500, 35), (1000, 820), (300, 297)]


def scipy_bca(n: int, k: int, resamples: int, seed: int) -> tuple[float, float]:
    data = np.r_[np.ones(k), np.zeros(n - k)]
    interval = stats.bootstrap(
        (data,), np.mean, method="BCa", n_resamples=resamples, rng=np.random.default_rng(seed)
    ).confidence_interval
    return interval.low, interval.high


def test_proportion_cis_agree_with_scipy_bca_averaged_over_runs():
    """With 1,000 resamples, one run's BCa bound has Monte Carlo noise of a few thousandths and, for n = 200, moves
    on a grid of 1/n = 0.005, so two single runs can differ by 0.01 (seen for k = 4). Averaging 20 runs of each
    (different seeds) shrinks the noise below 0.003 (observed); the bounds must then agree within 0.01."""
    k, n = np.array([k for _, k in PROPORTIONS]), np.array([n for n, _ in PROPORTIONS])
    ours = np.array([[(i.low, i.high) for i in proportion_cis(k, n, rng=np.random.default_rng(100 + run))]
                     for run in range(20)]).mean(axis=0)  # fmt: skip
    theirs = np.array([[scipy_bca(n_, k_, 1000, 200 + run) for n_, k_ in PROPORTIONS] for run in range(20)]).mean(0)
    assert np.abs(ours - theirs).max() < 0.01


def test_proportion_cis_agree_with_scipy_bca_with_many_resamples():
    """With 20,000 resamples both bounds are nearly free of Monte Carlo noise; what remains is the 1/n grid
    (0.005 at n = 200): agreement within 0.01 (observed: at most 0.002)."""
    k, n = np.array([k for _, k in PROPORTIONS]), np.array([n for n, _ in PROPORTIONS])
    ours = proportion_cis(k, n, rng=np.random.default_rng(1), resamples=20_000)
    for (n_, k_), interval in zip(PROPORTIONS, ours, strict=True):
        low, high = scipy_bca(n_, k_, 20_000, 2)
        assert abs(interval.low - low) < 0.01
        assert abs(interval.high - high) < 0.01
        assert interval.low < k_ / n_ < interval.high


@pytest.mark.filterwarnings("error")
def test_proportion_cis_degenerate_cells_get_notes_in_place():
    result = proportion_cis([0, 3, 1, 0, 5, 7], [0, 10, 1, 4, 5, 20], rng=np.random.default_rng(0))
    assert [r.note for r in result] == [NO_RATINGS, "", ONE_RATING, ALL_EQUAL, ALL_EQUAL, ""]
    for interval in result:
        assert (interval.low is None) == (interval.high is None) == bool(interval.note)
        assert interval.low is None or interval.low <= interval.high
    assert proportion_cis([], [], rng=np.random.default_rng(0)) == []
    assert proportion_cis([0, 2], [2, 2], rng=np.random.default_rng(0)) == [Interval(None, None, ALL_EQUAL)] * 2


def test_proportion_cis_reject_impossible_counts():
    with pytest.raises(ValueError):
        proportion_cis([3], [2], rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        proportion_cis([1, 2], [2], rng=np.random.default_rng(0))


@pytest.mark.filterwarnings("error")
def test_bca_undefined_cells_are_nan_like_scipy_and_become_notes():
    """All resamples above the estimate (z0 = -inf) and constant jackknife values (a = 0/0) make BCa undefined."""
    boot = np.array([[0.6, 0.7, 0.8], [0.4, 0.5, 0.6]])
    low, high = bca_from_distribution([0.5, 0.5], boot, [[0.4, 0.6], [0.5, 0.5]])
    assert np.isnan(low).all() and np.isnan(high).all()
    assert intervals(low, high) == [Interval(None, None, BCA_UNDEFINED)] * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reference = stats.bootstrap((np.ones(10),), np.mean, method="BCa", rng=np.random.default_rng(0))
    assert np.isnan(reference.confidence_interval.low)
    assert any(issubclass(w.category, stats.DegenerateDataWarning) for w in caught)
    low, high = bca_from_distribution(1.0, np.ones(9999), np.ones(10))
    assert np.isnan(low) and np.isnan(high)


def test_percentile_interval_equals_scipy_percentile_given_the_same_resamples():
    data = DATASETS["exponential n=200"]
    reference = stats.bootstrap((data,), np.mean, method="percentile", rng=np.random.default_rng(4))
    interval = percentile_interval(scipy_resamples(data, 9999, 4).mean(axis=-1), 0.95)
    assert abs(interval.low - reference.confidence_interval.low) < 1e-12
    assert abs(interval.high - reference.confidence_interval.high) < 1e-12
    assert interval.note == ""


def test_percentile_interval_drops_undefined_resamples_and_says_so():
    values = np.r_[np.linspace(0, 1, 700), np.full(300, np.nan)]
    interval = percentile_interval(values, 0.9)
    np.testing.assert_allclose([interval.low, interval.high], np.quantile(np.linspace(0, 1, 700), [0.05, 0.95]))
    assert "300 of 1000" in interval.note

    too_many = percentile_interval(np.r_[np.ones(499), np.full(501, np.nan)])
    assert too_many == Interval(None, None, "not estimable: statistic undefined in 501 of 1000 resamples")
    assert percentile_interval([]).note.startswith("not estimable")


def test_percentile_interval_with_exactly_half_the_resamples_undefined_is_still_given():
    """Not estimable only when more than half are undefined: 500 of 1,000 still give the interval of the rest."""
    defined = np.linspace(0, 1, 500)
    interval = percentile_interval(np.r_[defined, np.full(500, np.nan)])

    np.testing.assert_allclose([interval.low, interval.high], np.quantile(defined, [0.025, 0.975]))
    assert interval.note == "statistic undefined in 500 of 1000 resamples (dropped)"
    assert percentile_interval([0.2, np.nan]) == Interval(0.2, 0.2, "statistic undefined in 1 of 2 resamples (dropped)")
