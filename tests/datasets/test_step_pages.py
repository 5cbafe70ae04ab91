"""The generation steps' pages (datasets/step_views.py): the list with each step's progress, a step's page
showing what it asks and what came from what (flagged questions with their reason), Run queuing what is not
asked yet; coordinators only. The question page links a made question to its input and step."""

import pytest
from django.urls import reverse

from datasets.chains import question_kind
from datasets.models import Question
from engine.models import Call
from tests.datasets.test_question_steps import chain, drain
from tests.factories import UserFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


class Chatty(FakeLLM):
    def answer_for(self, question):
        if "antidepressants" in question:
            return "Sure, here is a question: CHATBOT: Hello! How can I help?"
        return super().answer_for(question)


@pytest.fixture
def made():
    with Chatty() as server:
        source, ask, restyle = chain(server, samples=1)
        question_kind.submit_step(ask)
        drain(source)
    return ask, restyle


def test_the_list_and_a_steps_page_show_what_came_from_what(client, coordinator, made):
    ask, restyle = made
    client.force_login(coordinator)

    listing = client.get(reverse("datasets:steps")).content.decode()
    assert "Ask" in listing and "Restyle" in listing and "Ask (on each question the step before makes)" in listing

    page = client.get(reverse("datasets:step", args=[ask.pk]))
    assert page.status_code == 200
    progress = page.context["progress"]
    assert (progress["made"], progress["usable"], progress["unusable"], progress["done"]) == (2, 1, 1, 2)
    html = page.content.decode()
    assert 'data-input="d0"' in html and 'data-input="d1"' in html
    assert "flagged: contains a made-up conversation" in html
    [(first_input, [first_made]), _] = page.context["pairs"]
    assert first_input.external_id == "d0" and first_made.base_id == first_input.pk

    flagged = client.get(reverse("datasets:step", args=[ask.pk]), {"show": "flagged"})
    assert [input.external_id for input, _ in flagged.context["pairs"]] == ["d1"]

    restyled = client.get(reverse("datasets:step", args=[restyle.pk]))
    assert len(restyled.context["pairs"]) == 1  # only the usable question was restyled: 3 styles, one sample
    assert len(restyled.context["pairs"][0][1]) == 3

    [question] = [q for q in Question.objects.filter(dataset=restyle.output) if "no capital" in q.levels["style"]]
    detail = client.get(reverse("datasets:question", args=[restyle.output_id, question.pk])).content.decode()
    assert f'by the step <a href="{reverse("datasets:step", args=[restyle.pk])}">Restyle</a>' in detail
    base = question.base
    base_page = client.get(reverse("datasets:question", args=[base.dataset_id, base.pk])).content.decode()
    assert "Made from this (3)" in base_page


def test_run_queues_only_what_is_not_asked_and_says_so(client, coordinator, made):
    ask, _ = made
    client.force_login(coordinator)
    Question.objects.create(dataset=ask.input_dataset, external_id="d9", text="headaches", levels={"step": "desire"})

    response = client.post(reverse("datasets:step_run", args=[ask.pk]), follow=True)

    assert "1 calls queued" in response.content.decode()
    assert Call.objects.filter(kind="question", batch=question_kind.batch_of(ask.pk), status="pending").count() == 1
    again = client.post(reverse("datasets:step_run", args=[ask.pk]), follow=True)
    assert "Nothing to ask" in again.content.decode()


def test_the_pages_are_for_coordinators(client, made):
    ask, _ = made
    client.force_login(UserFactory())
    assert client.get(reverse("datasets:steps")).status_code == 403
    assert client.get(reverse("datasets:step", args=[ask.pk])).status_code == 403
    assert client.post(reverse("datasets:step_run", args=[ask.pk])).status_code == 403
