"""API keys go only to the hosts MODEL_KEY_HOSTS binds their variable to, never over plain http to another
machine, and never after a redirect: refused when a source is saved (admin, API, command) and again by the
client before each request, for sources saved before the setting changed or without validation."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from config.key_hosts import HostPattern, KeyNotAllowed, check_key_destination, parse_key_hosts
from datasets.generation import jobs
from datasets.models import AnswerSource
from tests.api.client import client_for
from tests.datasets.test_generation_engine import drain
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

KEY = "EQUITYRATE_TEST_API_KEY"


def allowed(bindings: str, url: str, variable: str = KEY) -> bool:
    try:
        check_key_destination(variable=variable, url=url, bindings=parse_key_hosts(bindings))
    except KeyNotAllowed:
        return False
    return True


# --- The setting ----------------------------------------------------------------------------------------


def test_the_setting_binds_each_variable_to_its_hosts():
    bindings = parse_key_hosts(
        " OPENAI_API_KEY=api.openai.com, AZURE_API_KEY=*.openai.azure.com:443,"
        "LLAMA_API_TOKEN=127.0.0.1:8080,LLAMA_API_TOKEN=[::1],OPENAI_API_KEY=EU.api.openai.com,"
    )
    assert bindings == {
        "OPENAI_API_KEY": (HostPattern("api.openai.com"), HostPattern("eu.api.openai.com")),
        "AZURE_API_KEY": (HostPattern("openai.azure.com", 443, wildcard=True),),
        "LLAMA_API_TOKEN": (HostPattern("127.0.0.1", 8080), HostPattern("::1")),
    }
    assert parse_key_hosts("") == {}


@pytest.mark.parametrize(
    "value, message",
    [
        ("OPENAI_API_KEY", "is not VARIABLE=HOST"),
        ("OPENAI_API_KEY=", "is not VARIABLE=HOST"),
        ("SECRET_KEY=api.openai.com", "must end in _API_KEY or _API_TOKEN"),
        ("OPENAI_API_KEY=https://api.openai.com/v1", "is not a host name or address"),
        ("OPENAI_API_KEY=api.openai.com:0", "the port must be a number from 1 to 65535"),
        ("OPENAI_API_KEY=api.openai.com:http", "the port must be a number from 1 to 65535"),
        ("OPENAI_API_KEY=*", "is not a host name"),
        ("OPENAI_API_KEY=*.com", "a wildcard covers the subdomains of a domain"),
        ("OPENAI_API_KEY=api.*.com", "is not a host name"),
        ("OPENAI_API_KEY=[::1", "write an IPv6 address as \\[::1\\]"),
        ("OPENAI_API_KEY=[nope]:80", "is not an IPv6 address"),
        ("OPENAI_API_KEY=api.openai.com;ANTHROPIC_API_KEY=api.anthropic.com", "is not a host name"),
    ],
)
def test_a_malformed_setting_is_refused_with_the_entry_named(value, message):
    with pytest.raises(ValueError, match=message):
        parse_key_hosts(value)


@pytest.mark.parametrize(
    "bindings, url, ok",
    [
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://api.openai.com/v1", True),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://API.OpenAI.com:8443/v1", True),  # no port: any port
        ("EQUITYRATE_TEST_API_KEY=api.openai.com:443", "https://api.openai.com/v1", True),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com:443", "https://api.openai.com:8443/v1", False),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://api.openai.com.evil.example/v1", False),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://evilapi.openai.com/v1", False),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://api.openai.com@evil.example/v1", False),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "https://evil.example/v1?api.openai.com", False),
        ("EQUITYRATE_TEST_API_KEY=api.openai.com", "http://api.openai.com/v1", False),  # plain http
        ("EQUITYRATE_TEST_API_KEY=*.openai.azure.com", "https://team.openai.azure.com/openai", True),
        ("EQUITYRATE_TEST_API_KEY=*.openai.azure.com", "https://openai.azure.com/openai", False),
        ("EQUITYRATE_TEST_API_KEY=*.openai.azure.com", "https://evilopenai.azure.com/", False),
        ("EQUITYRATE_TEST_API_KEY=127.0.0.1:8080", "http://127.0.0.1:8080/v1", True),  # loopback: http is fine
        ("EQUITYRATE_TEST_API_KEY=127.0.0.1:8080", "http://127.0.0.1:8081/v1", False),
        ("EQUITYRATE_TEST_API_KEY=127.0.0.2", "http://127.0.0.2/v1", True),
        ("EQUITYRATE_TEST_API_KEY=localhost", "http://localhost:11434/v1", True),
        ("EQUITYRATE_TEST_API_KEY=[::1]:8080", "http://[::1]:8080/v1", True),
        (
            "EQUITYRATE_TEST_API_KEY=10.0.0.5:8000",
            "http://10.0.0.5:8000/v1",
            False,
        ),  # a private network is not loopback
        ("EQUITYRATE_TEST_API_KEY=10.0.0.5:8000", "https://10.0.0.5:8000/v1", True),
        ("OTHER_API_KEY=api.openai.com", "https://api.openai.com/v1", False),  # this variable is not listed
        ("", "https://api.openai.com/v1", False),
    ],
)
def test_which_urls_a_key_may_go_to(bindings, url, ok):
    assert allowed(bindings, url) is ok


# --- Saving a source: admin form, API, command ---------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "base_url, field, message",
    [
        ("https://evil.example/v1", "base_url", "may be sent only to api.openai.com (MODEL_KEY_HOSTS), not to evil"),
        ("http://api.openai.com/v1", "base_url", "would travel unencrypted to api.openai.com: use https://"),
    ],
)
def test_a_source_sending_its_key_elsewhere_does_not_validate(settings, base_url, field, message):
    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")
    source = AnswerSourceFactory.build(base_url=base_url, model_name="m", api_key_env=KEY)
    with pytest.raises(ValidationError) as error:
        source.full_clean()
    assert message in " ".join(error.value.message_dict[field])


@pytest.mark.django_db
def test_an_unlisted_variable_does_not_validate_and_says_what_to_set(settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("OPENAI_API_KEY=api.openai.com")
    source = AnswerSourceFactory.build(base_url="https://api.example.org/v1", model_name="m", api_key_env=KEY)
    with pytest.raises(ValidationError) as error:
        source.full_clean()
    assert error.value.message_dict["api_key_env"] == [
        f"{KEY} may not be sent anywhere: MODEL_KEY_HOSTS has no entry for it. The server's operator binds each "
        f"API-key variable to the hosts it may be sent to, e.g. MODEL_KEY_HOSTS={KEY}=api.example.org"
    ]


def validation_errors(source: AnswerSource) -> dict[str, list[str]]:
    try:
        source.full_clean()
    except ValidationError as error:
        return error.message_dict
    return {}


@pytest.mark.django_db
def test_sources_without_a_key_go_anywhere(settings):
    """No key, nothing to guard: any URL validates, plain http to another machine included, where the same
    source naming a key is refused."""
    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")
    for base_url in ("http://models.example.org/v1", "https://evil.example/v1"):
        keyless = AnswerSourceFactory.build(base_url=base_url, model_name="m")
        keyed = AnswerSourceFactory.build(base_url=base_url, model_name="m", api_key_env=KEY)

        assert keyless.api_key_env == "" and validation_errors(keyless) == {}
        assert "may be sent only to api.openai.com" in " ".join(validation_errors(keyed).get("base_url", []))


@pytest.mark.django_db
def test_the_api_refuses_a_source_sending_its_key_elsewhere_with_a_400(coordinator, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")
    body = {
        "name": "Leak",
        "kind": "model",
        "model_name": "m",
        "base_url": "https://evil.example/v1",
        "api_key_env": KEY,
    }

    created = client_for(coordinator).post("/api/answer-sources/", body, format="json")
    source = AnswerSourceFactory(base_url="https://api.openai.com/v1", model_name="m", api_key_env=KEY)
    moved = client_for(coordinator).patch(
        f"/api/answer-sources/{source.id}/", {"base_url": "https://evil.example/v1"}, format="json"
    )

    for response in (created, moved):
        assert response.status_code == 400
        assert "may be sent only to api.openai.com" in response.json()["base_url"][0]
    assert not AnswerSource.objects.filter(name="Leak").exists()
    source.refresh_from_db()
    assert source.base_url == "https://api.openai.com/v1"


@pytest.mark.django_db
def test_the_admin_refuses_a_source_sending_its_key_elsewhere(client, settings):
    from django.contrib.auth import get_user_model

    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    source = AnswerSourceFactory(base_url="https://api.openai.com/v1", model_name="m", api_key_env=KEY)
    form = {
        "name": source.name, "kind": "model", "model_name": "m", "parameters": "{}",
        "base_url": "https://evil.example/v1", "api_key_env": KEY, "temperature": "0", "max_tokens": "1024",
        "prompt_template": "{question}", "request_timeout_seconds": "120", "concurrency": "4",
        "structured_output": "none",
    }  # fmt: skip

    response = client.post(f"/admin/datasets/answersource/{source.id}/change/", form)

    assert response.status_code == 200  # the form again, with the error
    assert "may be sent only to api.openai.com (MODEL_KEY_HOSTS), not to evil.example" in response.content.decode()
    source.refresh_from_db()
    assert source.base_url == "https://api.openai.com/v1"


@pytest.mark.django_db
def test_add_model_source_refuses_a_source_sending_its_key_elsewhere(settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")
    with pytest.raises(CommandError, match="base_url: .* would travel unencrypted"):
        call_command("add_model_source", "Leak", "--base-url", "http://api.openai.com/v1", "--model", "m",
                     "--api-key-env", KEY)  # fmt: skip
    with pytest.raises(CommandError, match="api_key_env: OPENAI_API_KEY may not be sent anywhere"):
        call_command("add_model_source", "Leak", "--base-url", "https://api.openai.com/v1", "--model", "m",
                     "--api-key-env", "OPENAI_API_KEY")  # fmt: skip
    assert not AnswerSource.objects.filter(name="Leak").exists()


# --- Sending: the worker checks again before each request ------------------------------------------------


@pytest.fixture
def dataset(db):
    dataset = DatasetFactory(name="Sample")
    for n in range(2):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}")
    return dataset


def run_job(dataset, source):
    job = jobs.start_job(dataset=dataset, source=source)
    drain(source)
    return job


def test_a_source_saved_before_the_binding_changed_sends_no_key(dataset, settings, monkeypatch):
    monkeypatch.setenv(KEY, "sk-very-secret-value")
    with FakeLLM() as server:
        # Saved while its host was allowed (or by a script, without validation)...
        source = AnswerSourceFactory(base_url=server.base_url, model_name="m", api_key_env=KEY, concurrency=1)
        settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=api.openai.com")  # ...then the binding changed.
        job = run_job(dataset, source)
    assert not server.received  # not even a request without the key
    errors = set(jobs.batch_calls(job).values_list("error", flat=True))
    assert errors == {f"{KEY} may be sent only to api.openai.com (MODEL_KEY_HOSTS), not to 127.0.0.1:"
                      f"{server.base_url.split(':')[2].split('/')[0]}: use one of those hosts, or ask the "
                      "server's operator to bind the variable to this one"}  # fmt: skip


def test_a_source_without_a_key_is_sent_no_authorization_header_whatever_the_setting(dataset, settings):
    settings.MODEL_KEY_HOSTS = {}  # no variable may be sent anywhere; a source without one is not concerned
    with FakeLLM() as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="m", concurrency=1)
        job = run_job(dataset, source)
    assert len(server.received) == 2
    assert all("Authorization" not in headers for _, _, headers in server.received)
    assert not jobs.failed_calls(job).exists()


def test_a_redirect_never_carries_the_key_to_another_host(dataset, settings, monkeypatch):
    settings.MODEL_KEY_HOSTS = parse_key_hosts(f"{KEY}=127.0.0.1")
    monkeypatch.setenv(KEY, "sk-very-secret-value")
    with FakeLLM() as elsewhere, FakeLLM(redirect_to=elsewhere.base_url.removesuffix("/v1")) as server:
        source = AnswerSourceFactory(base_url=server.base_url, model_name="m", api_key_env=KEY, concurrency=1)
        job = run_job(dataset, source)
    assert server.received and all(headers["Authorization"] == "Bearer sk-very-secret-value"
                                   for _, _, headers in server.received)  # fmt: skip
    assert not elsewhere.received
    assert "the server redirects to" in jobs.failed_calls(job).first().error
