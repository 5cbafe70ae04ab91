"""ContextSRH's tables from a study in the database (analysis.services.contextsrh_report; `analyze --study` with the
`contextsrh` plan): the three CSVs with their contract columns, and % Win, Friedman and Wilcoxon recomputed
directly (pandas groupby/max, scipy) from the exported results.csv.

The people's ratings are `Rating` rows made directly with ContextSRH's stored values (`relevant`, `correct_for`):
the ContextSRH rubric is another branch's migration, so a small rubric of the same two questions stands in."""

import io
import json
import random

import pandas as pd
import pytest
from django.core.management import call_command
from scipy import stats

from analysis import contextsrh, services
from analysis.plan_loading import table_csv
from analysis.plan_parameters import PlanParameterError
from analysis.results import HUMAN, SCORER, results_table, write_results
from studies.models import Rating, Rubric, RubricVersion, Study, StudyAnswer, StudyItem
from tests.factories import (
    AnswerFactory,
    AnswerSourceFactory,
    AssignmentFactory,
    DatasetFactory,
    OnboardedRaterFactory,
    QuestionFactory,
    ScoreFactory,
)

pytestmark = pytest.mark.django_db

SIMILARITY_CONTRACT = ["study", "source", "attribute", "group", "n_questions", "avg_similarity", "pct_win", "pct_human"]
GROUP_TESTS_CONTRACT = ["study", "source", "attribute", "test", "statistic", "p_value", "n_blocks", "n_dropped"]
AGREEMENT_CONTRACT = ["study", "source", "attribute", "n_questions", "n_units", "n_raters", "cohen_kappa",
                      "krippendorff_alpha", "n_not_applicable", "n_failed_gate"]  # fmt: skip
ATTRIBUTES = {"sex": ["female", "male"], "age": ["10", "15", "18"]}
RUBRIC = {
    "display": "one_answer",
    "questions": [
        {"key": "relevant", "type": "single", "label": "Is the question relevant to every group listed?",
         "required": True, "options": [{"key": "all", "label": "All"}, {"key": "some", "label": "Some"}]},
        {"key": "correct_for", "type": "multiple", "label": "For which groups is the answer correct?",
         "required": True, "options_from": "factor_groups",
         "options": [{"key": "not_applicable", "label": "Not applicable"}], "exclusive": "not_applicable"},
    ],
}  # fmt: skip


def make_contextsrh_study(*, plans=({"plan": "contextsrh"},), seed: int = 5) -> Study:
    """12 original questions (q0-q5 depend on sex, q4-q11 on age: q4, q5 on both), answered by two sources; each
    context variant's answer scored by minilm_cosine (one `missing`, so a block is incomplete, and one exact tie).
    Two raters label every original answer; a third fails the attention check once, and one answer is `not
    applicable` for one rater."""
    rng = random.Random(seed)
    rubric, _ = Rubric.objects.get_or_create(name="ContextSRH (test)", defaults={"kind": ""})
    version, _ = RubricVersion.objects.get_or_create(rubric=rubric, number=1, defaults={"definition": RUBRIC})
    study = Study.objects.create(name="ContextSRH study", rubric_version=version, definition={"plans": list(plans)})
    dataset = DatasetFactory(name="ContextSRH")
    sources = [AnswerSourceFactory(name="GPT"), AnswerSourceFactory(name="Llama")]
    raters = [OnboardedRaterFactory(pool="physician").rater_profile for _ in range(3)]
    for number in range(12):
        base = QuestionFactory(dataset=dataset, external_id=f"q{number}", levels={})
        attributes = [name for name, rule in (("sex", number < 6), ("age", number >= 4)) if rule]
        variants = [(attribute, group, QuestionFactory(dataset=dataset, external_id=f"q{number}-{attribute}-{group}",
                                                       base=base, levels={attribute: group}))
                    for attribute in attributes for group in ATTRIBUTES[attribute]]  # fmt: skip
        for source in sources:
            original = AnswerFactory(question=base, source=source)
            item = StudyItem.objects.create(study=study, answer=original)
            for attribute, group, variant in variants:
                answer = AnswerFactory(question=variant, source=source)
                StudyAnswer.objects.create(study=study, answer=answer, via=StudyAnswer.Via.IMPORTED)
                if (number, source.name, group) == (7, "GPT", "15"):
                    ScoreFactory(answer=answer, scorer="minilm_cosine", version=1, outcome="missing")
                    continue
                similarity = 0.8 if (number, attribute) == (0, "sex") else round(rng.uniform(0.5, 0.95), 6)
                ScoreFactory(answer=answer, scorer="minilm_cosine", version=1, outcome="measured", number=similarity)
            groups = [group for attribute in attributes for group in ATTRIBUTES[attribute]]
            for index, rater in enumerate(raters[:2]):
                chosen = [group for group in groups if rng.random() < 0.7] or [groups[0]]
                if (number, source.name, index) == (9, "Llama", 1):
                    chosen = ["not_applicable"]
                rate(item, rater, {"relevant": "all", "correct_for": chosen}, version)
            if number == 2:
                rate(item, raters[2], {"relevant": "some", "correct_for": ["female"]}, version, passed=False)
    return study


def rate(item, rater, values, version, passed=None) -> Rating:
    assignment = AssignmentFactory(item=item, rater=rater)
    return Rating.objects.create(assignment=assignment, rubric_version=version, values=values, active_seconds=9.0,
                                 wall_seconds=12.0, attention_check_passed=passed)  # fmt: skip


@pytest.fixture
def contextsrh_study():
    return make_contextsrh_study()


def test_the_results_table_carries_each_ratings_attention_check_result_last(contextsrh_study):
    table = results_table(contextsrh_study)

    assert table.columns[-1] == "attention_check_passed"
    human = table[table["kind"] == HUMAN]
    assert (
        human["attention_check_passed"].tolist().count(False) == 4
    )  # two failed ratings (q2, each source), 2 rows each
    assert set(human["attention_check_passed"].dropna()) == {False}
    assert table.loc[table["kind"] == SCORER, "attention_check_passed"].isna().all()


def test_win_friedman_and_wilcoxon_from_the_exported_results_equal_a_direct_computation(contextsrh_study, tmp_path):
    write_results(results_table(contextsrh_study), tmp_path)
    exported = pd.read_csv(tmp_path / "results.csv")

    report = contextsrh.contextsrh_report(exported, study=contextsrh_study.name)

    # Directly: the scorer rows, attribute and group from the levels, a group wins where it equals the maximum.
    scores = exported[(exported["kind"] == "scorer") & (exported["levels"] != "{}")].copy()
    scores["attribute"], scores["group"] = zip(*scores["levels"].map(lambda text: next(iter(json.loads(text).items()))),
                                               strict=True)  # fmt: skip
    scores["similarity"] = pd.to_numeric(scores["value"], errors="coerce")
    scores = scores.dropna(subset=["similarity"])
    top = scores.groupby(["source", "attribute", "base_question"])["similarity"].transform("max")
    scores["win"] = scores["similarity"] == top
    questions = scores.groupby(["source", "attribute"])["base_question"].nunique()
    expected = scores.groupby(["source", "attribute", "group"])["win"].sum() / questions * 100
    found = report.similarity.set_index(["source", "attribute", "group"])["pct_win"]
    assert found.sort_index().to_dict() == pytest.approx(expected.sort_index().to_dict())
    assert found.loc[("GPT", "sex", "female")] + found.loc[("GPT", "sex", "male")] > 100  # q0's tie counts twice

    tests = report.group_tests.set_index(["source", "attribute"])
    for (source, attribute), part in scores.groupby(["source", "attribute"]):
        wide = part.pivot(index="base_question", columns="group", values="similarity").dropna()
        if attribute == "sex":
            direct = stats.wilcoxon(wide["female"], wide["male"])
        else:
            direct = stats.friedmanchisquare(*(wide[group] for group in ATTRIBUTES["age"]))
        row = tests.loc[(source, attribute)]
        assert row["test"] == ("wilcoxon" if attribute == "sex" else "friedman")
        assert row["statistic"] == pytest.approx(direct.statistic) and row["p_value"] == pytest.approx(direct.pvalue)
        assert row["n_blocks"] == len(wide)
    assert tests.loc[("GPT", "age"), "n_dropped"] == 1 and tests.loc[("Llama", "age"), "n_dropped"] == 0


def test_analyze_writes_the_three_contextsrh_tables_equal_to_the_statistics(contextsrh_study, tmp_path):
    output = io.StringIO()
    call_command("analyze", "--study", str(contextsrh_study.pk), "--out", str(tmp_path), stdout=output)

    results = results_table(contextsrh_study, kinds=(HUMAN, SCORER), scorers=["minilm_cosine"])
    for name, table in contextsrh.contextsrh_tables(results, study=contextsrh_study.name).items():
        assert (tmp_path / name).read_text(encoding="utf-8") == table_csv(table), name
    assert "similarity.csv: 10 rows (contextsrh)" in output.getvalue()  # 2 sources x (2 sexes + 3 ages)
    similarity = pd.read_csv(tmp_path / "similarity.csv")
    assert list(similarity.columns) == [*SIMILARITY_CONTRACT, "pct_win_marked_correct"]
    assert similarity["group"].tolist()[:5] == ["10", "15", "18", "female", "male"]
    assert similarity["pct_human"].between(0, 100).all()
    tests = pd.read_csv(tmp_path / "group_tests.csv")
    assert list(tests.columns) == GROUP_TESTS_CONTRACT and len(tests) == 4
    agreement = pd.read_csv(tmp_path / "human_agreement.csv")
    assert list(agreement.columns) == AGREEMENT_CONTRACT
    agreement = agreement.set_index(["source", "attribute"])
    assert agreement.loc[("GPT", "sex"), "n_failed_gate"] == 1 and agreement.loc[("Llama", "age"), "n_not_applicable"]
    assert agreement.loc[("GPT", "sex"), "n_raters"] == 2 and agreement["cohen_kappa"].notna().any()


def test_the_contextsrh_plan_takes_a_scorer_and_k(contextsrh_study, tmp_path):
    plans = [{"plan": "contextsrh", "params": {"scorer": "minilm_cosine", "k": 1}}]
    (plan,) = services.plans_of(Study(name="x", definition={"plans": plans}))
    assert plan.options == {"scorer": "minilm_cosine", "k": 1} and plan.own_report
    report = services.contextsrh_report(contextsrh_study, plan=plan)
    assert report is not None and report.verdicts["correct"].tolist() == (report.verdicts["votes"] >= 1).tolist()
    for params, message in [({"k": 0}, "k: expected a whole number"), ({"scorer": "Bad name"}, "not a scorer"),
                            ({"factors": ["age"]}, "its parameters are scorer, k")]:  # fmt: skip
        with pytest.raises(PlanParameterError, match=message):
            services.plans_of(Study(name="y", definition={"plans": [{"plan": "contextsrh", "params": params}]}))
    other = Study.objects.get(pk=contextsrh_study.pk)
    other.definition = {"plans": [{"plan": "contextsrh", "params": {"scorer": "word_overlap"}}]}
    other.save(update_fields=["definition"])
    out = io.StringIO()
    call_command("analyze", "--study", str(other.pk), "--out", str(tmp_path), stdout=out)
    assert "has a word_overlap score, its tables not written" in out.getvalue()
    assert not (tmp_path / "similarity.csv").exists()
