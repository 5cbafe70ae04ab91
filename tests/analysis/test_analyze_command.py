"""The `analyze` command: the spec's four CSV files, from the database or a release directory, and the issue's
"done when": on an imported release its point estimates equal a direct pandas computation over the release
files and its intervals agree with per-cell `scipy.stats.bootstrap` within 0.01."""

import csv

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from studies import release
from studies.exports import write_csv_files
from studies.models import Study
from tests.studies.test_exports import build_release

pytestmark = pytest.mark.django_db

SPEC_COLUMNS = {
    "rates": ["rubric", "dataset", "rater_type", "aggregation", "outcome", "source", "n", "estimate", "ci_low",
              "ci_high", "note"],
    "reliability": ["rubric", "dataset", "rater_type", "outcome", "metric", "n_items", "n_raters", "estimate",
                    "ci_low", "ci_high", "note"],
    "counterfactual_crosstab": ["dataset", "rater_type", "ideal_answers_differ", "answers_differ_how", "n",
                                "bias_rate", "ci_low", "ci_high"],
    "consumer_regression": ["predictor", "level", "reference_level", "odds_ratio", "ci_low", "ci_high", "p_value",
                            "n"],
}  # fmt: skip
DIMENSIONS = release.DIMENSIONS
OMAQ = "Open-ended Medical Adversarial Queries (OMAQ)"
EHAI = "Equity in Health AI (EHAI)"
HEALTHSEARCHQA = "HealthSearchQA"


def analyze(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("analyze", *map(str, args), stdout=out)
    return out.getvalue()


def report(directory) -> dict[str, pd.DataFrame]:
    return {name: pd.read_csv(directory / f"{name}.csv") for name in SPEC_COLUMNS}


def test_analyze_writes_the_four_tables_with_the_spec_columns_and_prints_row_counts(tmp_path):
    build_release()

    output = analyze("--out", tmp_path)

    tables = report(tmp_path)
    for name, columns in SPEC_COLUMNS.items():
        assert list(tables[name].columns[: len(columns)]) == columns
        assert f"{name}.csv: {len(tables[name])} rows" in output
    assert "independent: 5 ratings" in output and "pairwise: 4 ratings" in output
    rates = tables["rates"]
    assert set(rates["rubric"]) == {"independent", "pairwise", "counterfactual"}
    assert set(rates["aggregation"]) == {"pooled", "majority", "any"}
    assert rates["estimate"].between(0, 1).all()
    # Two ratings of one item cannot give an interval: it says why instead of a NaN without a word.
    missing = rates[rates["ci_low"].isna()]
    assert not missing.empty and missing["note"].str.startswith("not estimable").all()


def test_analyze_on_the_exported_files_writes_the_same_report_as_on_the_database(tmp_path):
    build_release()
    write_csv_files(tmp_path / "release")

    analyze("--out", tmp_path / "db", "--seed", 7)
    output = analyze("--from", tmp_path / "release", "--out", tmp_path / "files", "--seed", 7)

    assert "counterfactual: 2 ratings" in output
    for name in SPEC_COLUMNS:
        assert (tmp_path / "files" / f"{name}.csv").read_bytes() == (tmp_path / "db" / f"{name}.csv").read_bytes()


def test_analyze_one_study_reads_only_its_ratings(tmp_path):
    build_release()
    study = Study.objects.get(name="Counterfactual study")

    output = analyze("--study", study.pk, "--out", tmp_path)

    assert "independent: 0 ratings" in output and "counterfactual: 2 ratings" in output
    assert set(report(tmp_path)["rates"]["rubric"]) == {"counterfactual"}


def test_analyze_refuses_an_unknown_study_or_a_directory_without_ratings(tmp_path):
    with pytest.raises(CommandError, match="no study with id 999"):
        analyze("--study", 999, "--out", tmp_path / "out")
    with pytest.raises(CommandError, match="holds none of"):
        analyze("--from", tmp_path, "--out", tmp_path / "out")
    with pytest.raises(CommandError, match="PREDICTOR=LEVEL"):
        analyze("--out", tmp_path / "out", "--reference", "rater_gender")


# --- Release-format files, as published ------------------------------------------------------------------


def write_rows(path, rows) -> None:
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


def flag(value) -> str:
    return "True" if value else "False"


def write_release(directory, *, seed=1) -> None:
    """Independent and pairwise ratings of two pools: OMAQ triple-rated, EHAI and HealthSearchQA singly, and
    consumer ratings of OMAQ with their demographics; items differ in how biased their answers are."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    independent = [[*release.REQUIRED["independent"], "answer_source", *release.RATER_DETAILS[3:]]]
    sources = ["Med-PaLM-2_answer_more_bias", "Med-PaLM_answer_more_bias"]
    pairwise = [["question_id", "dataset", "rater_type", "rater_id", *sources, *DIMENSIONS]]
    designs = [(OMAQ, "omaq", 120, 3), (EHAI, "ehai", 150, 1), (HEALTHSEARCHQA, "hsqa", 150, 1)]
    for pool, prefix, base in (("Physician", "P", 0.12), ("Health equity expert", "E", 0.2)):
        for dataset, short, items, replication in designs:
            for item in range(items):
                chance = min(0.9, rng.beta(1, 1 / base - 1) * 1.0)
                for rater in rng.choice(6, size=replication, replace=False):
                    rater_id = f"{prefix}{rater}"
                    biased = rng.random() < chance
                    level = ("Minor bias" if rng.random() < 0.7 else "Severe bias") if biased else "No bias"
                    marks = [biased and rng.random() < 0.4 for _ in DIMENSIONS]
                    independent.append([f"{short}-{item}", dataset, pool, rater_id, level, *map(flag, marks),
                                        "Med-PaLM-2", "", "", ""])  # fmt: skip
                    if dataset == EHAI:
                        continue
                    preference = rng.choice(3, p=[0.15, 0.05, 0.8])  # more bias in: Med-PaLM, Med-PaLM 2, tie
                    more_bias = [flag(preference == 1), flag(preference == 0)]
                    marks = [preference < 2 and rng.random() < 0.3 for _ in DIMENSIONS]
                    pairwise.append([f"{short}-{item}", dataset, pool, rater_id, *more_bias, *map(flag, marks)])
    ages, genders = ["18-24", "25-34", "35-44", "65 or older"], ["Woman", "Man"]
    for consumer in range(60):
        age, gender = ages[consumer % 4], genders[consumer % 2]
        for item in rng.choice(120, size=3, replace=False):
            level = "Minor bias" if rng.random() < 0.3 else "No bias"
            independent.append([f"omaq-{item}", OMAQ, "Consumer", f"C{consumer}", level, *["False"] * 7,
                                "Med-PaLM-2", age, gender, "White" if consumer % 3 else "Asian"])  # fmt: skip
    write_rows(directory / "ratings_independent.csv", independent)
    write_rows(directory / "ratings_pairwise.csv", pairwise)


def direct_rates(ratings: pd.DataFrame, outcome_values: dict[str, pd.Series], item: list[str]) -> pd.DataFrame:
    """Rates per dataset (and the EquityMedQA union), pool, aggregation and outcome, by plain pandas."""
    rows = []
    equitymedqa = ratings["dataset"].isin([OMAQ, EHAI])
    for dataset, subset in [*ratings.groupby("dataset"), ("EquityMedQA", ratings[equitymedqa])]:
        for pool, cell in subset.groupby("rater_type"):
            for outcome, values in outcome_values.items():
                value = values.loc[cell.index].astype(int)
                per_item = value.groupby([cell[column] for column in item]).agg(["mean", "size"])
                rows += [
                    (dataset, pool, "pooled", outcome, len(value), value.mean()),
                    (dataset, pool, "majority", outcome, len(per_item), (per_item["mean"] > 0.5).mean()),
                    (dataset, pool, "any", outcome, len(per_item), (per_item["mean"] > 0).mean()),
                ]
    return pd.DataFrame(rows, columns=["dataset", "rater_type", "aggregation", "outcome", "n", "direct"])


def import_only(release_dir, kind) -> None:
    """Import one file of the release (the others would only make the test slower)."""
    alone = release_dir.parent / kind
    alone.mkdir()
    (alone / release.FILENAMES[kind]).write_bytes((release_dir / release.FILENAMES[kind]).read_bytes())
    call_command("import_ratings", str(alone), "--study-name", "Release")


def test_analyze_on_an_imported_release_matches_pandas_and_scipy(tmp_path):
    write_release(tmp_path / "release")
    import_only(tmp_path / "release", "independent")
    study = Study.objects.get(name="Release (independent)")

    analyze("--study", study.pk, "--out", tmp_path / "report")

    files = pd.read_csv(tmp_path / "release" / "ratings_independent.csv")
    outcomes = {"bias_presence": files["bias_presence"] != "No bias", **{d: files[d] for d in DIMENSIONS}}
    expected = direct_rates(files, outcomes, ["dataset", "question_id"])
    rates = pd.read_csv(tmp_path / "report" / "rates.csv")
    merged = expected.merge(rates, on=["dataset", "rater_type", "aggregation", "outcome"], validate="one_to_one")
    assert len(merged) == len(expected) == len(rates) > 200
    assert (merged["n_x"] == merged["n_y"]).all()
    np.testing.assert_allclose(merged["estimate"], merged["direct"], rtol=0, atol=1e-12)
    assert set(rates["dataset"]) == {OMAQ, EHAI, HEALTHSEARCHQA, "EquityMedQA"}

    # Intervals: scipy.stats.bootstrap(method="BCa") on each large cell's own 0/1 values.
    compared = 0
    for row in rates[(rates["aggregation"] == "pooled") & (rates["n"] >= 300) & rates["ci_low"].notna()].itertuples():
        cell = files[files["rater_type"] == row.rater_type]
        if row.dataset != "EquityMedQA":
            cell = cell[cell["dataset"] == row.dataset]
        else:
            cell = cell[cell["dataset"].isin([OMAQ, EHAI])]
        values = outcomes[row.outcome].loc[cell.index].to_numpy(dtype=float)
        scipy_ci = stats.bootstrap(
            (values,), np.mean, method="BCa", n_resamples=1000, random_state=0
        ).confidence_interval
        assert abs(scipy_ci.low - row.ci_low) < 0.01 and abs(scipy_ci.high - row.ci_high) < 0.01, row
        compared += 1
    assert compared >= 20


def test_analyze_on_an_imported_pairwise_release_matches_pandas(tmp_path):
    write_release(tmp_path / "release")
    import_only(tmp_path / "release", "pairwise")
    study = Study.objects.get(name="Release (pairwise)")

    analyze("--study", study.pk, "--out", tmp_path / "report")

    files = pd.read_csv(tmp_path / "release" / "ratings_pairwise.csv")
    # The preferred source (less bias) is the one not marked as having more bias; neither marked: no preference.
    prefer_2 = files["Med-PaLM_answer_more_bias"]
    prefer_1 = files["Med-PaLM-2_answer_more_bias"]
    outcomes = {("bias_presence", "Med-PaLM-2"): prefer_2, ("bias_presence", "Med-PaLM"): prefer_1,
                ("bias_presence", "No preference"): ~(prefer_1 | prefer_2)}  # fmt: skip
    for dimension in DIMENSIONS:
        outcomes[(dimension, "Med-PaLM-2")] = prefer_2 & files[dimension]
    rates = pd.read_csv(tmp_path / "report" / "rates.csv").fillna({"source": ""})
    for (outcome, source), values in outcomes.items():
        expected = direct_rates(files, {outcome: values}, ["dataset", "question_id"])
        got = rates[(rates["outcome"] == outcome) & (rates["source"] == source)]
        merged = expected.merge(got, on=["dataset", "rater_type", "aggregation", "outcome"], validate="one_to_one")
        assert len(merged) == len(expected) == len(got) > 0, (outcome, source)
        np.testing.assert_allclose(merged["estimate"], merged["direct"], rtol=0, atol=1e-12)


def test_reference_levels_given_on_the_command_line_are_used(tmp_path):
    write_release(tmp_path / "release")

    analyze("--from", tmp_path / "release", "--out", tmp_path / "report", "--reference", "rater_age_group=25-34")

    regression = pd.read_csv(tmp_path / "report" / "consumer_regression.csv")
    ages = regression[regression["predictor"] == "rater_age_group"]
    assert set(ages["level"]) == {"18-24", "25-34", "35-44", "65 or older"}
    assert set(ages["reference_level"]) == {"25-34"}
    assert ages.loc[ages["level"] == "25-34", "odds_ratio"].item() == 1
    genders = regression[regression["predictor"] == "rater_gender"]
    assert set(genders["reference_level"]) == {"Man"}  # equally frequent: the first by name
