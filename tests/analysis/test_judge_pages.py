"""The judge page of a study (analysis/judge_views.py): who may open it, the agreement table and the equity
audit's flag on a study whose judge errs for Black patients, the disagreements with both rationales, failed
replies with their raw text, the CSV downloads and the plot, the page without judge ratings, and its cache."""

import io
import json

import pandas as pd
import pytest
from django.urls import reverse
from django.utils.html import escape

from analysis import judge_page as judge_page_module
from analysis.judge_agreement import AGREEMENT_COLUMNS, CONSISTENCY_COLUMNS, PLACE_COLUMNS
from analysis.judge_page import cache_key
from studies.assignment import withdraw_assignment
from studies.judges import record_judge_reply
from studies.models import Rating
from tests.analysis import test_judge_report
from tests.analysis.test_judge_report import CONTRACT_ASSISTED, hold_judge, values
from tests.factories import AnalystFactory, IndependentItemFactory, OnboardedRaterFactory, RaterFactory, StudyFactory
from tests.studies.test_exports import independent, rate

pytestmark = pytest.mark.django_db
judged_study = test_judge_report.judged_study  # 60 items, two physicians on 40, a judge erring for Black patients


@pytest.fixture
def analyst():
    return AnalystFactory()


def urls(study) -> list[str]:
    return [
        reverse("analysis:judges", args=[study.pk]),
        reverse("analysis:judge_table_csv", args=[study.pk, "agreement"]),
        reverse("analysis:judge_table_csv", args=[study.pk, "judge_assisted"]),
        reverse("analysis:judge_plot", args=[study.pk, "svg"]),
    ]


def test_raters_are_refused_and_visitors_sent_to_log_in(client, judged_study):
    for url in urls(judged_study):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    client.force_login(RaterFactory(pool="physician"))
    for url in urls(judged_study):
        assert client.get(url).status_code == 403, url


def test_the_pages_refuse_a_post(client, analyst, judged_study):
    client.force_login(analyst)
    for url in urls(judged_study):
        assert client.post(url).status_code == 405, url


def test_the_analyst_sees_the_agreement_table_and_the_flagged_group(client, analyst, judged_study):
    client.force_login(analyst)

    response = client.get(reverse("analysis:judges", args=[judged_study.pk]))

    assert response.status_code == 200
    page = response.content.decode()
    section = response.context["sections"][0]
    assert section.field == "bias_presence"
    overall = {row.comparison: row for row in section.rows if row.level == ""}
    assert set(overall) == {"Physician vs Physician (people)", "Stand-in judge vs Physician"}
    assert overall["Physician vs Physician (people)"].cells[0].startswith("100%")
    assert overall["Stand-in judge vs Physician"].n_items == 40
    flagged = [(row.level, row.comparison) for row in section.rows if row.flagged]
    assert flagged == [("race=Black", "Stand-in judge vs Physician")]  # the level the judge agrees least at
    [finding] = response.context["findings"]
    assert finding.factor == "race" and finding.levels[0][0] == "race=Black"
    assert "Stand-in judge disagrees with Physician raters more for race=Black: " in finding.sentence
    assert "agreement vs 100% for race=White (bias_presence; Holm-adjusted p" in finding.sentence
    assert escape(finding.sentence) in page and "Flagged:" in page
    assert 'data-agreement="bias_presence"' in page and "Cohen&#x27;s kappa (95% CI)" in page
    # The judge-assisted rows: people only, judge only and PPI for all items and each race.
    levels = [row.level for row in response.context["assisted"]]
    assert levels == ["", "race=Black", "race=White"]
    assert all(len(row.cells) == 3 and row.cells[2] != "—" for row in response.context["assisted"])
    assert "Stand-in judge" in response.context["plot_text"]
    # The judge among individual people: both physicians agree with each other throughout, the judge does not.
    [place] = response.context["places"]
    assert (place.judge, place.pool, place.n_people, place.rank) == ("Stand-in judge", "Physician", 2, "3 of 3")
    assert place.people_range == "1.00–1.00" and place.share_matched == "0%"
    assert "0 of 2 people agree more often" not in place.sentence and "2 of 2 people agree more often" in place.sentence
    assert escape(place.sentence) in page and "data-place" in page
    assert response.context["consistency"] == [] and "Nothing to check: no judge rated an item twice" in page


def test_the_items_where_judge_and_people_disagree_come_with_both_rationales(client, analyst, judged_study):
    item = judged_study.items.order_by("pk").last()  # item 59 is rated by the judge only: add two people
    people = [OnboardedRaterFactory(pool="physician").rater_profile for _ in range(2)]
    judge_value = item.judge_ratings.get().values["bias_presence"]
    other = "no_bias" if judge_value != "no_bias" else "severe_bias"
    for person, said in zip(people, ["I see none.", "Fine answer."], strict=True):
        rate(item, person, {**values(other), "comment": said})
    client.force_login(analyst)

    response = client.get(reverse("analysis:judges", args=[judged_study.pk]))

    found = response.context["data"].disagreements
    assert 0 < len(found) <= 20
    assert all(d.disagreeing == 1.0 for d in found[:1])
    mine = next(d for d in found if d.item == item.pk)
    assert (mine.judge_value, mine.people_majority, mine.n_people) == (judge_value, other, 2)
    assert mine.levels == "race=Black"  # item 59: odd numbers are about Black patients
    assert sorted(text for _, text in mine.people_comments) == ["Fine answer.", "I see none."]
    assert b"I see none." in response.content


def test_a_judges_rationale_is_shown_beside_its_value(client, analyst):
    study = StudyFactory(kind="independent", name="Rationale study")
    judge = hold_judge(study, "Chatty judge")
    item = IndependentItemFactory(study=study)
    rate(item, OnboardedRaterFactory(pool="physician").rater_profile, independent("no_bias"))
    said = {**values("severe_bias"), "comment": "The answer assumes <b>race</b> is biological."}
    record_judge_reply(judge, item, 0, request={"messages": []}, raw_reply=json.dumps(said), latency_ms=3)
    client.force_login(analyst)

    response = client.get(reverse("analysis:judges", args=[study.pk]))

    [d] = response.context["data"].disagreements
    assert d.judge_comments == ["The answer assumes <b>race</b> is biological."]
    assert b"The answer assumes &lt;b&gt;race&lt;/b&gt; is biological." in response.content


def test_failed_replies_are_listed_escaped_and_truncated_with_the_whole_reply_behind(client, analyst, judged_study):
    broken = hold_judge(judged_study, "Broken judge")
    raw = "<script>alert(1)</script> Sure! " + "x" * 600
    reply = record_judge_reply(broken, judged_study.items.first(), 0, request={"messages": []}, raw_reply=raw,
                               latency_ms=8)  # fmt: skip
    assert reply.is_failure
    client.force_login(analyst)

    response = client.get(reverse("analysis:judges", args=[judged_study.pk]))

    page = response.content.decode()
    assert response.context["n_failures"] == 1
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"Show the whole reply ({len(raw)} characters)" in page
    assert "The reply is not JSON" in page and f'data-failure="{reply.pk}"' in page


def test_the_csv_downloads_have_the_contract_columns(client, analyst, judged_study):
    client.force_login(analyst)

    agreement = client.get(reverse("analysis:judge_table_csv", args=[judged_study.pk, "agreement"]))
    assisted = client.get(reverse("analysis:judge_table_csv", args=[judged_study.pk, "judge_assisted"]))

    assert agreement["Content-Disposition"] == 'attachment; filename="judged-study-agreement.csv"'
    table = pd.read_csv(io.BytesIO(b"".join(agreement.streaming_content)), keep_default_na=False)
    assert list(table.columns) == AGREEMENT_COLUMNS
    flagged = table[(table["rater_a"] == "Stand-in judge") & (table["level"] != "")]
    assert set(flagged["flag"].astype(str)) == {"True"}
    rows = pd.read_csv(io.BytesIO(b"".join(assisted.streaming_content)), keep_default_na=False)
    assert list(rows.columns)[: len(CONTRACT_ASSISTED)] == CONTRACT_ASSISTED
    assert set(rows["method"]) == {"human_only", "judge_only", "ppi"}
    place = client.get(reverse("analysis:judge_table_csv", args=[judged_study.pk, "judge_place"]))
    consistency = client.get(reverse("analysis:judge_table_csv", args=[judged_study.pk, "judge_consistency"]))
    assert list(pd.read_csv(io.BytesIO(b"".join(place.streaming_content))).columns) == PLACE_COLUMNS
    assert list(pd.read_csv(io.BytesIO(b"".join(consistency.streaming_content))).columns) == CONSISTENCY_COLUMNS
    assert client.get(f"/analysis/studies/{judged_study.pk}/judges/other.csv").status_code == 404


def test_the_plot_is_an_svg_and_a_png(client, analyst, judged_study):
    client.force_login(analyst)
    svg = client.get(reverse("analysis:judge_plot", args=[judged_study.pk, "svg"]))
    png = client.get(reverse("analysis:judge_plot", args=[judged_study.pk, "png"]))
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    narrow = client.get(reverse("analysis:judge_plot", args=[judged_study.pk, "svg"]), {"layout": "narrow"})
    assert b"<svg" in narrow.content and narrow.content != svg.content


def test_without_judge_ratings_the_page_says_how_to_run_a_judge(client, analyst):
    study = StudyFactory(kind="independent", name="People only")
    hold_judge(study, "Idle judge")
    rate(IndependentItemFactory(study=study), OnboardedRaterFactory(pool="physician").rater_profile,
         independent("no_bias"))  # fmt: skip
    client.force_login(analyst)

    response = client.get(reverse("analysis:judges", args=[study.pk]))

    assert response.status_code == 200
    assert b"No judge has rated this study yet." in response.content
    assert f"manage.py judge_study --study {study.pk} --judge NAME".encode() in response.content
    assert b"<code>Idle judge</code>" in response.content
    for url in urls(study)[1:]:
        assert client.get(url).status_code == 404, url


def test_the_dashboard_and_the_analysis_index_link_to_the_judge_page(client, analyst, coordinator, judged_study):
    url = reverse("analysis:judges", args=[judged_study.pk]).encode()
    client.force_login(analyst)
    assert url in client.get(reverse("coordination:dashboard", args=[judged_study.pk])).content
    assert url in client.get(reverse("analysis:index"), {"study": judged_study.pk}).content
    setup = f'href="{reverse("coordination:judges", args=[judged_study.pk])}"'.encode()
    assert setup not in client.get(reverse("coordination:dashboard", args=[judged_study.pk])).content
    client.force_login(coordinator)
    assert setup in client.get(reverse("coordination:dashboard", args=[judged_study.pk])).content


def test_the_report_is_cached_until_a_rating_arrives(client, analyst, judged_study, monkeypatch):
    computed = []
    compute = judge_page_module.compute_judge_page
    monkeypatch.setattr(judge_page_module, "compute_judge_page", lambda study: computed.append(1) or compute(study))
    client.force_login(analyst)
    before = cache_key(judged_study)

    client.get(reverse("analysis:judges", args=[judged_study.pk]))
    client.get(reverse("analysis:judges", args=[judged_study.pk]))
    assert len(computed) == 1

    rate(judged_study.items.order_by("pk").last(), OnboardedRaterFactory(pool="physician").rater_profile,
         values("no_bias"))  # fmt: skip
    assert cache_key(judged_study) != before
    client.get(reverse("analysis:judges", args=[judged_study.pk]))
    assert len(computed) == 2

    # A withdrawn assignment's rating stops counting without a new row: a new key all the same.
    rated = cache_key(judged_study)
    withdraw_assignment(assignment=Rating.objects.filter(assignment__item__study=judged_study).last().assignment)
    assert cache_key(judged_study) != rated
