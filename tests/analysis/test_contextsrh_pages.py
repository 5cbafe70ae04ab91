"""The ContextSRH page of a study (analysis/contextsrh_views.py): who may open it, Table 1 per attribute with Avg, %
Win and % Human per source, the tests in sentences and the agreement, the CSV downloads (the tables `analyze`
writes), the plot as SVG and PNG (stacked for a phone), the page before any score, and its cache."""

import io

import pandas as pd
import pytest
from django.urls import reverse

from analysis import services
from analysis.contextsrh_page import cache_key
from studies.services import submit_rating
from tests.analysis.test_contextsrh_report import make_contextsrh_study
from tests.factories import AnalystFactory, AnswerFactory, AssignmentFactory, RaterFactory, ScoreFactory, StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    return make_contextsrh_study()


def urls(study) -> list[str]:
    return [
        reverse("analysis:contextsrh", args=[study.pk]),
        *(reverse("analysis:contextsrh_table_csv", args=[study.pk, name])
          for name in ("similarity", "group_tests", "agreement")),
        reverse("analysis:contextsrh_plot", args=[study.pk, "svg"]),
    ]  # fmt: skip


def test_raters_are_refused_and_visitors_sent_to_log_in(client, study):
    for url in urls(study):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    client.force_login(RaterFactory(pool="physician"))
    for url in urls(study):
        assert client.get(url).status_code == 403, url


def test_the_analyst_sees_table_1_per_attribute_then_the_tests_and_the_agreement(client, study):
    client.force_login(AnalystFactory())

    response = client.get(reverse("analysis:contextsrh", args=[study.pk]))

    assert response.status_code == 200
    sections = {section["attribute"]: section for section in response.context["sections"]}
    assert list(sections) == ["age", "sex"]  # the paper's order: age, sex, location
    age = sections["age"]
    assert age["sources"] == ["GPT", "Llama"] and [row["group"] for row in age["rows"]] == ["10", "15", "18"]
    similarity = services.contextsrh_report(study).similarity.set_index(["source", "attribute", "group"])
    cell = age["rows"][1]["cells"][0]  # age 15, GPT
    row = similarity.loc[("GPT", "age", "15")]
    assert (cell["avg"], cell["win"], cell["human"]) == (f"{row.avg_similarity:.2f}", f"{row.pct_win:.1f}",
                                                         f"{row.pct_human:.1f}")  # fmt: skip
    page = response.content.decode()
    assert (
        page.index("Similarity to the answer without context")
        < page.index("Do the groups differ?")
        < page.index("People's agreement")
    )
    assert "Friedman&#x27;s test over" in page and "Wilcoxon&#x27;s signed-rank test over" in page
    assert "(1 dropped: a group&#x27;s similarity missing)" in page  # GPT's age block with a missing score


def test_the_downloads_are_the_tables_analyze_writes_and_the_plot_comes_as_svg_and_png(client, study):
    client.force_login(AnalystFactory())
    tables = services.contextsrh_report(study).tables()

    for name, file in (("similarity", "similarity.csv"), ("group_tests", "group_tests.csv"),
                       ("agreement", "human_agreement.csv")):  # fmt: skip
        response = client.get(reverse("analysis:contextsrh_table_csv", args=[study.pk, name]))
        assert response.status_code == 200 and file in response["Content-Disposition"]
        downloaded = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)))
        assert list(downloaded.columns) == list(tables[file].columns)
        assert len(downloaded) == len(tables[file])
    svg = client.get(reverse("analysis:contextsrh_plot", args=[study.pk, "svg"]))
    narrow = client.get(reverse("analysis:contextsrh_plot", args=[study.pk, "svg"]) + "?layout=narrow")
    png = client.get(reverse("analysis:contextsrh_plot", args=[study.pk, "png"]))
    assert svg["Content-Type"].startswith("image/svg") and b"<svg" in svg.content and narrow.content != svg.content
    assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    assert client.get(f"/analysis/studies/{study.pk}/contextsrh/other.csv").status_code == 404


def test_a_study_without_scores_says_what_to_run_and_its_downloads_are_404(client):
    study = StudyFactory()
    client.force_login(AnalystFactory())

    page = client.get(reverse("analysis:contextsrh", args=[study.pk])).content.decode()

    assert "No context answer of this study has a similarity score yet." in page
    assert f"score_answers --scorer minilm_cosine --study {study.pk}" in page
    assert client.get(reverse("analysis:contextsrh_table_csv", args=[study.pk, "similarity"])).status_code == 404
    assert client.get(reverse("analysis:contextsrh_plot", args=[study.pk, "png"])).status_code == 404


def test_the_page_is_cached_until_a_score_or_rating_is_added(client, study):
    before = cache_key(study)
    assert cache_key(study) == before
    ScoreFactory(answer=AnswerFactory(), scorer="letter", version=1)
    assert cache_key(study) == before  # a score of another study's answer: the same page
    ScoreFactory(answer=study.items.first().answer, scorer="letter", version=1)
    scored = cache_key(study)
    assert scored != before
    rated = study.items.first().assignments.first()
    submit_rating(assignment=AssignmentFactory(item=rated.item), values={"relevant": "all", "correct_for": ["10"]},
                  active_seconds=5)  # fmt: skip
    assert cache_key(study) != scored
