"""The judge set-up pages (studies/judge_setup_views.py): coordinators list a study's judges, add one (held by
the study), preview the exact request for the study's first item, run it (calls queued by `submit_judge`, a refusal
said, never a 500), and cannot change the recipe of a judge that has replied."""

import json

import pytest
from django.urls import reverse

from engine.models import Call
from studies.coordination import lock_study
from studies.judge_kind import KIND, batch_of
from studies.judges import build_judge_request, record_judge_reply
from studies.models import Judge, StudyItem
from tests.analysis.test_judge_report import hold_judge, values
from tests.factories import (
    AnalystFactory,
    AnswerSourceFactory,
    IndependentItemFactory,
    RaterFactory,
    StudyFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    study = StudyFactory(kind="independent", name="Set-up study")
    for _ in range(3):
        IndependentItemFactory(study=study)
    return study


@pytest.fixture
def source():
    return AnswerSourceFactory(name="Judge model", base_url="http://127.0.0.1:9/v1", model_name="judge-7b")


def form_data(source, **changes) -> dict:
    data = {
        "name": "Careful judge",
        "source": source.pk,
        "instructions": "You are a physician checking answers for bias.",
        "shown_fields": ["question", "answers"],
        "repeats": 2,
        "examples": "",
        "action": "save",
    }
    return {**data, **changes}


def test_only_coordinators_open_the_set_up_pages(client, study, source):
    judge = hold_judge(study, "Held judge")
    urls = [
        reverse("coordination:judges", args=[study.pk]),
        reverse("coordination:judge_create", args=[study.pk]),
        reverse("coordination:judge", args=[study.pk, judge.pk]),
    ]
    for user in (RaterFactory(pool="physician"), AnalystFactory()):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == 403, url
        assert client.post(reverse("coordination:judge_run", args=[study.pk, judge.pk])).status_code == 403
    assert not Call.objects.exists()


def test_the_pages_refuse_the_wrong_method_and_a_judge_the_study_does_not_hold(client, coordinator, study):
    other = hold_judge(StudyFactory(kind="independent", name="Other study"), "Foreign judge")
    client.force_login(coordinator)
    assert client.post(reverse("coordination:judges", args=[study.pk])).status_code == 405
    assert client.get(reverse("coordination:judge_run", args=[study.pk, other.pk])).status_code == 405
    assert client.get(reverse("coordination:judge", args=[study.pk, other.pk])).status_code == 404
    assert client.post(reverse("coordination:judge_run", args=[study.pk, other.pk])).status_code == 404


def test_a_coordinator_adds_a_judge_held_by_the_study(client, coordinator, study, source):
    client.force_login(coordinator)

    response = client.post(reverse("coordination:judge_create", args=[study.pk]), form_data(source))

    judge = Judge.objects.get(name="Careful judge")
    assert response.status_code == 302 and response["Location"] == reverse(
        "coordination:judge", args=[study.pk, judge.pk]
    )
    assert list(study.judges.all()) == [judge]
    assert (judge.source, judge.rubric_version, judge.repeats) == (source, study.rubric_version, 2)
    assert judge.shown_fields == ["question", "answers"] and judge.examples == []
    listing = client.get(reverse("coordination:judges", args=[study.pk]))
    assert b"Careful judge" in listing.content and b"0 / 6 (0 %)" in listing.content


def test_the_judge_page_previews_the_exact_request_for_the_first_item(client, coordinator, study, source):
    judge = hold_judge(study, "Previewed judge")
    client.force_login(coordinator)

    response = client.get(reverse("coordination:judge", args=[study.pk, judge.pk]))

    first = StudyItem.objects.filter(study=study).order_by("pk").first()
    assert json.loads(response.context["preview"]) == build_judge_request(judge, first, 0)
    assert b'data-field="request"' in response.content and b"&quot;messages&quot;" in response.content


def test_preview_shows_the_forms_request_without_saving(client, coordinator, study, source):
    client.force_login(coordinator)
    data = form_data(source, action="preview", shown_fields=["question", "answers", "groups"])

    response = client.post(reverse("coordination:judge_create", args=[study.pk]), data)

    assert response.status_code == 200 and not Judge.objects.exists()
    body = json.loads(response.context["preview"])
    assert body["model"] == "judge-7b"
    assert body["messages"][0] == {"role": "system", "content": "You are a physician checking answers for bias."}
    assert "Reply with one JSON object only" in body["messages"][1]["content"]


def test_bad_examples_are_form_errors(client, coordinator, study, source):
    client.force_login(coordinator)
    url = reverse("coordination:judge_create", args=[study.pk])

    not_json = client.post(url, form_data(source, examples="[{not json"))
    maybe = [{"item": "An answer.", "reply": {"bias_presence": "maybe"}}]
    wrong_reply = client.post(url, form_data(source, examples=json.dumps(maybe)))
    not_a_list = client.post(url, form_data(source, examples=json.dumps({"item": "An answer."})))

    assert not_json.status_code == 400 and "examples" in not_json.context["form"].errors
    assert wrong_reply.status_code == 400
    assert wrong_reply.context["form"].errors["examples"][0].startswith("Example 1: bias_presence")
    assert not_a_list.status_code == 400 and "examples" in not_a_list.context["form"].errors
    too_many = client.post(url, form_data(source, examples=json.dumps([maybe[0]] * 21)))
    assert too_many.status_code == 400
    assert too_many.context["form"].errors["examples"] == ["At most 20 worked examples (as a recipe), not 21."]
    assert b"The judge was not saved" in wrong_reply.content
    assert not Judge.objects.exists()


def test_good_examples_are_kept(client, coordinator, study, source):
    client.force_login(coordinator)
    examples = [{"item": "An answer.", "reply": values("no_bias")}]
    client.post(reverse("coordination:judge_create", args=[study.pk]), form_data(source, examples=json.dumps(examples)))
    assert Judge.objects.get().examples == examples


def test_run_queues_a_call_per_item_and_repeat_once(client, coordinator, study, source):
    client.force_login(coordinator)
    client.post(reverse("coordination:judge_create", args=[study.pk]), form_data(source))
    judge = Judge.objects.get()
    run = reverse("coordination:judge_run", args=[study.pk, judge.pk])

    first = client.post(run, follow=True)
    again = client.post(run, {"next": "list"}, follow=True)

    assert [str(m) for m in first.context["messages"]][-1] == "Judge Careful judge: 6 calls queued."
    assert first.redirect_chain[-1][0] == reverse("coordination:judge", args=[study.pk, judge.pk])
    assert Call.objects.filter(kind=KIND, batch=batch_of(judge.pk, study.pk)).count() == 6
    assert "0 calls queued (every item and repeat" in [str(m) for m in again.context["messages"]][0]
    assert again.redirect_chain[-1][0] == reverse("coordination:judges", args=[study.pk])


def test_a_refused_run_is_a_message_not_an_error(client, coordinator, study):
    judge = hold_judge(study, "Locked-out judge")
    lock_study(study=study)
    client.force_login(coordinator)

    response = client.post(reverse("coordination:judge_run", args=[study.pk, judge.pk]), follow=True)

    assert response.status_code == 200
    [message] = [str(m) for m in response.context["messages"]]
    assert message.startswith("The judge Locked-out judge was not run: This study is locked")
    assert not Call.objects.exists()


def test_a_judge_with_replies_keeps_its_recipe_and_may_only_make_more_repeats(client, coordinator, study, source):
    judge = hold_judge(study, "Replied judge")
    record_judge_reply(judge, study.items.first(), 0, request={}, raw_reply=json.dumps(values("no_bias")), latency_ms=4)
    client.force_login(coordinator)
    url = reverse("coordination:judge", args=[study.pk, judge.pk])

    page = client.get(url)
    changed = client.post(url, form_data(source, name="Renamed", instructions="Something else.", repeats=3))
    fewer = client.post(url, form_data(source, repeats=2))

    assert b"its\n   name, model source, instructions, shown fields, questions and examples are fixed" in page.content
    judge.refresh_from_db()
    assert changed.status_code == 302
    assert (judge.name, judge.instructions, judge.repeats) == ("Replied judge", "Rate the answer.", 3)
    assert fewer.status_code == 400 and "repeats" in fewer.context["form"].errors
