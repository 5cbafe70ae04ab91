"""Prediction-powered inference against the reference package, a hand computation and a coverage simulation."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis.ppi import (
    JUDGE_ASSISTED_COLUMNS,
    NO_UNLABELLED,
    equivalent_human_items,
    human_only_mean,
    judge_assisted,
    judge_assisted_table,
    judge_only_mean,
    ppi_mean,
)

# A fixture: 12 items labelled by people (Y) and the judge (f), 20 more by the judge only.
Y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0], dtype=float)
F = np.array([1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0], dtype=float)
F_UNLABELLED = np.array([1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0], dtype=float)
# ppi_py 0.2.3 on this fixture (`ppi_mean_pointestimate`, `ppi_mean_ci(alpha=0.05)`), recorded: lam=1 (plain PPI)
# and lam=None (PPI++'s power tuning). The package is not a dependency: it pulls numba, llvmlite, scikit-learn and
# gdown (~300 MB) for this one comparison, and silences warnings process-wide on import.
PPI_PY = {
    1.0: (0.25, -0.04894359196321679, 0.5489435919632168),
    None: (0.29866702451243515, 0.06912495422881632, 0.528209094796054),
}


@pytest.mark.parametrize("lam", [1.0, None])
def test_ppi_equals_the_reference_package_recorded(lam):
    result = ppi_mean(Y, F, F_UNLABELLED, confidence=0.95, lam=lam)
    assert (result.estimate, result.ci_low, result.ci_high) == pytest.approx(PPI_PY[lam], abs=1e-12)


def test_plain_ppi_equals_the_formula_by_hand():
    # theta = mean(f~) + mean(Y - f) = 5/20 + 0; se^2 = Var(f~)/N + Var(Y - f)/n with population variances:
    # Var(f~) = 0.25 * 0.75; Y - f has one +1 and one -1 in 12 -> Var = 2/12.
    se = np.sqrt(0.25 * 0.75 / 20 + (2 / 12) / 12)
    result = ppi_mean(Y, F, F_UNLABELLED)
    assert result.estimate == 0.25 and result.lam == 1.0 and result.se == pytest.approx(se)
    assert (result.ci_low, result.ci_high) == pytest.approx(
        (0.25 - 1.959963984540054 * se, 0.25 + 1.959963984540054 * se)
    )
    assert (result.n_human, result.n_judge) == (12, 32)
    # A people-only interval as wide needs Var(Y) / se^2 items: (1/3)(2/3) / se^2 = 9.55, fewer than the 12
    # used: on this fixture the judge adds noise rather than saving ratings.
    assert equivalent_human_items(Y, result) == pytest.approx((2 / 9) / se**2)
    assert ppi_mean(Y, F, F_UNLABELLED[:1]).note == NO_UNLABELLED


def test_people_only_and_judge_only_use_wilson_for_labels_and_normal_for_shares():
    people = human_only_mean(Y)
    assert people.estimate == pytest.approx(4 / 12)
    assert (people.ci_low, people.ci_high) == pytest.approx(proportion_confint(4, 12, alpha=0.05, method="wilson"))
    judge = judge_only_mean(np.concatenate([F, F_UNLABELLED]))
    assert judge.estimate == pytest.approx(9 / 32) and judge.n_judge == 32
    shares = np.array([0.0, 1 / 3, 2 / 3, 1.0, 1 / 3])
    normal = human_only_mean(shares)
    half = 1.959963984540054 * shares.std(ddof=1) / np.sqrt(5)
    assert (normal.ci_low, normal.ci_high) == pytest.approx((shares.mean() - half, shares.mean() + half))


def test_ppi_interval_covers_the_true_rate_about_95_percent_of_the_time():
    """A judge that errs 15% of the time either way, on a population with rate 0.3 (the judge's own rate is
    0.36, so the judge-only interval is biased); people label a random 150 of 1,650 items."""
    rng = np.random.default_rng(2023)
    repeats, n, big_n, rate = 400, 150, 1500, 0.3
    covered = {"ppi": 0, "ppi++": 0, "judge_only": 0}
    widths = {"ppi": 0.0, "human_only": 0.0}
    for _ in range(repeats):
        y_all = (rng.random(n + big_n) < rate).astype(float)
        f_all = np.where(rng.random(n + big_n) < 0.85, y_all, 1 - y_all)
        y, f, unlabelled = y_all[:n], f_all[:n], f_all[n:]
        for name, lam in (("ppi", 1.0), ("ppi++", None)):
            result = ppi_mean(y, f, unlabelled, lam=lam)
            covered[name] += result.ci_low <= rate <= result.ci_high
        judge = judge_only_mean(f_all)
        covered["judge_only"] += judge.ci_low <= rate <= judge.ci_high
        widths["ppi"] += result.ci_high - result.ci_low
        people = human_only_mean(y)
        widths["human_only"] += people.ci_high - people.ci_low
    assert 0.93 <= covered["ppi"] / repeats <= 0.97, covered
    assert 0.93 <= covered["ppi++"] / repeats <= 0.97, covered
    assert covered["judge_only"] / repeats < 0.5, covered
    # With 10 times as many judged items the PPI++ interval is narrower than the people-only one.
    assert widths["ppi"] < widths["human_only"]


def long_rows(people: dict[str, list], judge: list, **levels: list) -> pd.DataFrame:
    rows = []
    for rater, labels in people.items():
        for i, value in enumerate(labels):
            if value is not None:
                row = {"item": f"i{i}", "rater": rater, "rater_kind": "human", "pool": "Physician", "value": value}
                rows.append(row | {k: v[i] for k, v in levels.items()})
    for i, value in enumerate(judge):
        row = {"item": f"i{i}", "rater": "J", "rater_kind": "judge", "pool": "", "value": value}
        rows.append(row | {k: v[i] for k, v in levels.items()})
    return pd.DataFrame(rows)


def test_judge_assisted_takes_the_rated_slice_as_labelled_and_the_rest_as_unlabelled():
    rng = np.random.default_rng(4)
    items = 60
    truth = rng.random(items) < 0.4
    judge = list(np.where(rng.random(items) < 0.85, truth, ~truth))
    ann = [bool(t) if i < 20 else None for i, t in enumerate(truth)]
    bob = [bool(not t) if i < 5 else bool(t) if i < 20 else None for i, t in enumerate(truth)]
    ratings = long_rows({"ann": ann, "bob": bob}, judge, race=["A", "B"] * (items // 2))
    estimates, equivalent = judge_assisted(ratings, judge="J", pool="Physician")
    y = np.array([(a + b) / 2 for a, b in zip(ann[:20], bob[:20], strict=True)], dtype=float)  # shares
    f = np.array(judge, dtype=float)
    expected = ppi_mean(y, f[:20], f[20:])
    human, judge_only, ppi = estimates
    assert (ppi.estimate, ppi.ci_low, ppi.ci_high) == (expected.estimate, expected.ci_low, expected.ci_high)
    assert human.estimate == pytest.approx(y.mean()) and human.n_human == 20
    assert judge_only.estimate == pytest.approx(f.mean()) and judge_only.n_judge == 60
    assert equivalent == pytest.approx(equivalent_human_items(y, expected))

    majority = judge_assisted(ratings, judge="J", pool="Physician", aggregate="majority")[0][0]
    assert majority.estimate == pytest.approx(np.mean(y > 0.5))  # a 1-1 split is not a majority

    table = judge_assisted_table(ratings.assign(field="bias"), study="demo", factors=["race"])
    assert list(table.columns) == JUDGE_ASSISTED_COLUMNS
    assert table["level"].tolist() == [""] * 3 + ["race=A"] * 3 + ["race=B"] * 3
    assert table["method"].tolist() == ["human_only", "judge_only", "ppi"] * 3
    overall = table[(table["level"] == "") & (table["method"] == "ppi")].iloc[0]
    assert (overall["estimate"], overall["n_human"], overall["n_judge"]) == (expected.estimate, 20, 60)
    assert (table["judge"] == "J").all() and (table["pool"] == "Physician").all()
