"""Who may call which endpoint: the study team, coordinators only, raters for their own work; 401 when anonymous."""

import pytest

from tests.api.client import client_for
from tests.factories import (
    AnalystFactory,
    AssignmentFactory,
    CounterfactualPairFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def objects():
    """One of everything, so that every detail URL has something to show."""
    assignment = AssignmentFactory()
    answer = assignment.item.answer
    pair = CounterfactualPairFactory(dataset=answer.question.dataset)
    return {
        "dataset": answer.question.dataset_id,
        "question": answer.question_id,
        "pair": pair.id,
        "source": answer.source_id,
        "answer": answer.id,
        "study": assignment.item.study_id,
        "assignment": assignment.id,
        "rater": assignment.rater_id,
    }


TEAM_URLS = [
    "/api/datasets/",
    "/api/datasets/{dataset}/",
    "/api/questions/",
    "/api/questions/{question}/",
    "/api/pairs/",
    "/api/pairs/{pair}/",
    "/api/answer-sources/",
    "/api/answer-sources/{source}/",
    "/api/answers/",
    "/api/answers/{answer}/",
    "/api/studies/",
    "/api/studies/{study}/",
    "/api/studies/{study}/items/",
    "/api/ratings/",
]
COORDINATOR_URLS = ["/api/raters/", "/api/raters/{rater}/", "/api/import-jobs/"]
ASSIGNMENT_URLS = ["/api/assignments/", "/api/assignments/{assignment}/"]


@pytest.mark.parametrize("url", TEAM_URLS + ASSIGNMENT_URLS)
@pytest.mark.parametrize("role", ["coordinator", "analyst"])
def test_the_study_team_reads_team_endpoints(url, role, objects, coordinator):
    user = coordinator if role == "coordinator" else AnalystFactory()
    response = client_for(user).get(url.format(**objects))
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("url", TEAM_URLS + COORDINATOR_URLS)
def test_raters_are_refused_study_team_endpoints(url, objects, physician):
    response = client_for(physician).get(url.format(**objects))
    assert response.status_code == 403


@pytest.mark.parametrize("url", COORDINATOR_URLS)
def test_analysts_are_refused_coordinator_endpoints(url, objects):
    response = client_for(AnalystFactory()).get(url.format(**objects))
    assert response.status_code == 403


@pytest.mark.parametrize("url", COORDINATOR_URLS)
def test_coordinators_read_coordinator_endpoints(url, objects, coordinator):
    response = client_for(coordinator).get(url.format(**objects))
    assert response.status_code == 200


@pytest.mark.parametrize("url", TEAM_URLS + COORDINATOR_URLS + ASSIGNMENT_URLS)
def test_anonymous_requests_are_asked_to_authenticate(url, objects):
    response = client_for().get(url.format(**objects))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/api/datasets/"),
        ("post", "/api/datasets/import/"),
        ("post", "/api/assignments/{assignment}/rating/"),
    ],
)
def test_anonymous_writes_are_asked_to_authenticate(method, url, objects):
    response = getattr(client_for(), method)(url.format(**objects), {}, format="json")
    assert response.status_code == 401


def test_a_user_with_no_role_and_no_rater_profile_is_refused_assignments():
    response = client_for(UserFactory()).get("/api/assignments/")
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("put", "/api/datasets/{dataset}/"),
        ("delete", "/api/studies/{study}/"),
        ("post", "/api/ratings/"),
        ("patch", "/api/assignments/{assignment}/"),
        ("get", "/api/datasets/import/"),
    ],
)
def test_methods_an_endpoint_does_not_offer_are_405(method, url, objects, coordinator):
    response = getattr(client_for(coordinator), method)(url.format(**objects), {}, format="json")
    assert response.status_code == 405
