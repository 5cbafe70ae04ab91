"""The MEDIC page of a study (analysis/medic_views.py): who may open it, the generalisation table first with its
sentence, the means and the judge-pair agreement, the CSV downloads (the tables `analyze` writes), the plot as
SVG and PNG (stacked for a phone), the page without judge ratings, and its cache."""

import io

import pandas as pd
import pytest
from django.urls import reverse

from analysis import medic_page as medic_page_module
from analysis import services
from analysis.medic_page import cache_key
from analysis.medic_summary import effect_sentence
from studies import release
from studies.models import Judge
from tests.analysis.test_medic_report import judge_rates, make_medic_study
from tests.factories import AnalystFactory, IndependentItemFactory, RaterFactory, StudyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def medic_study():
    return make_medic_study()


@pytest.fixture
def analyst():
    return AnalystFactory()


def urls(study) -> list[str]:
    return [
        reverse("analysis:medic", args=[study.pk]),
        *(reverse("analysis:medic_table_csv", args=[study.pk, name]) for name in
          ("generalisation", "judge_means", "judge_agreement")),
        reverse("analysis:medic_plot", args=[study.pk, "svg"]),
    ]  # fmt: skip


def test_raters_are_refused_and_visitors_sent_to_log_in(client, medic_study):
    for url in urls(medic_study):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    client.force_login(RaterFactory(pool="physician"))
    for url in urls(medic_study):
        assert client.get(url).status_code == 403, url


def test_the_analyst_sees_the_generalisation_first_then_means_and_agreement(client, analyst, medic_study):
    client.force_login(analyst)

    response = client.get(reverse("analysis:medic", args=[medic_study.pk]))

    assert response.status_code == 200
    page = response.content.decode()
    first = response.context["effects"][0]  # the most often significant first
    assert (first.outcome, first.factor, first.level_a, first.level_b) == ("Hallucinations (count)", "style",
                                                                           "8th grade", "standard")  # fmt: skip
    assert first.sentence == "significant in 1 of 4 pairs (8th grade higher)"
    assert first.sentence in page
    assert page.index("data-generalisation") < page.index("data-means") < page.index("data-agreement>")
    sections = response.context["means"]
    pairs = [(source, judge) for source in ("Source A", "Source B") for judge in ("Llama judge", "Qwen judge")]
    assert [(s.source, s.judge) for s in sections] == pairs
    report = services.medic_report(medic_study)
    means = report.means
    wanted = {"source": "Source A", "judge": "Llama judge", "outcome": "hallucinations", "factor": "style",
              "level": "8th grade"}  # fmt: skip
    row = means[(means[list(wanted)] == pd.Series(wanted)).all(axis=1)].iloc[0]
    shown = next(r for r in sections[0].rows if r.outcome == "Hallucinations (count)" and r.level == "8th grade")
    assert shown.mean == f"{row['mean']:.2f}" and shown.interval == f"{row['ci_low']:.2f} to {row['ci_high']:.2f}"
    agreement = response.context["agreement"]
    assert [row.category for row in agreement] == ["MANAGE", "VISIT", "RESOURCE", "Mean over the cells"]
    manage = report.agreement.iloc[0]
    assert agreement[0].judges == "Llama judge vs Qwen judge"
    assert agreement[0].kappa == f"{manage['cohen_kappa']:.3f}"
    assert agreement[0].percent == f"{100 * manage['percent_agreement']:.1f} %"


def test_the_csv_downloads_are_the_tables_analyze_writes(client, analyst, medic_study):
    client.force_login(analyst)
    report = services.medic_report(medic_study)
    for name, table in report.tables().items():
        response = client.get(reverse("analysis:medic_table_csv", args=[medic_study.pk, name.removesuffix(".csv")]))
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        assert response["Content-Disposition"] == f'attachment; filename="medic-study-{name}"'
        downloaded = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)))
        written = pd.read_csv(io.StringIO(table.to_csv(index=False)))
        if "directions" in written:  # `+0 / -1` starts like a formula: protected as every download's text cells
            written["directions"] = written["directions"].map(release.csv_text)
        pd.testing.assert_frame_equal(downloaded, written)


def test_the_plot_is_svg_or_png_and_stacks_for_a_phone(client, analyst, medic_study):
    client.force_login(analyst)
    url = reverse("analysis:medic_plot", args=[medic_study.pk, "svg"])

    wide, narrow = client.get(url), client.get(url + "?layout=narrow")
    png = client.get(reverse("analysis:medic_plot", args=[medic_study.pk, "png"]))

    assert wide["Content-Type"] == "image/svg+xml" and b"<svg" in wide.content
    assert b"Hallucinations (count)" in wide.content or b"Hallucinations" in wide.content
    assert narrow.status_code == 200 and narrow.content != wide.content
    assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    # Drawn: the effects significant in some pair (here one, in one of the four pairs), said in its alt text.
    text = client.get(reverse("analysis:medic", args=[medic_study.pk])).context["plot_text"]
    assert text.endswith("Hallucinations (count), style: standard − 8th grade: significant in 1 of 4 pairs "
                         "(Source A · Llama judge -2.40).")  # fmt: skip


def test_a_study_without_judge_ratings_says_so(client, analyst):
    study = StudyFactory(name="Unjudged")
    IndependentItemFactory(study=study)
    client.force_login(analyst)

    response = client.get(reverse("analysis:medic", args=[study.pk]))

    assert response.status_code == 200 and "No judge has rated this study yet." in response.content.decode()
    assert client.get(reverse("analysis:medic_plot", args=[study.pk, "svg"])).status_code == 404
    assert client.get(reverse("analysis:medic_table_csv", args=[study.pk, "judge_means"])).status_code == 404


def test_the_page_is_cached_until_a_judge_rates_again(client, analyst, medic_study, monkeypatch):
    client.force_login(analyst)
    url = reverse("analysis:medic", args=[medic_study.pk])
    calls = []
    compute = medic_page_module.compute_medic_page
    monkeypatch.setattr(medic_page_module, "compute_medic_page", lambda study: calls.append(1) or compute(study))
    key = cache_key(medic_study)

    client.get(url)
    client.get(url)
    assert len(calls) == 1
    judge = Judge.objects.get(name="llama-category")
    judge_rates(judge, medic_study.items.first(), {"manage": "no", "visit": "no", "resource": "no"}, repeat=1)
    assert cache_key(medic_study) != key
    client.get(url)
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ((4, 0, 0, 0), "not significant in any of the 4 pairs"),
        ((4, 1, 1, 1), "significant in 1 of 4 pairs (b higher)"),
        ((4, 3, 3, 0), "significant in 3 of 4 pairs; directions agree (a higher)"),
        ((4, 2, 1, 1), "significant in 2 of 4 pairs; directions disagree (1 with b higher, 1 with a higher)"),
    ],
)
def test_the_effect_in_plain_words(counts, said):
    n_pairs, n_significant, same, up = counts
    assert effect_sentence(n_pairs=n_pairs, n_significant=n_significant, n_same_direction=same, up=up, level_a="a",
                           level_b="b") == said  # fmt: skip


def test_a_study_file_with_a_bad_medic_parameter_is_shown_with_the_default_factors(client, analyst):
    study = make_medic_study(plans=[{"plan": "medic", "params": {"factors": "gender"}}])
    client.force_login(analyst)

    response = client.get(reverse("analysis:medic", args=[study.pk]))

    assert response.status_code == 200
    assert "plans[0].params.factors: expected a list of one or more factor names" in response.content.decode()
    assert response.context["report"].factors == ("style", "gender")
