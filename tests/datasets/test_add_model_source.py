import pytest
from django.core.management import CommandError, call_command

from config.key_hosts import parse_key_hosts
from datasets.models import AnswerSource

pytestmark = pytest.mark.django_db


def test_add_model_source_stores_the_endpoint_and_the_key_variable_not_the_key(capsys, settings):
    settings.MODEL_KEY_HOSTS = parse_key_hosts("LLAMA_API_KEY=127.0.0.1:8080")
    options = ["--api-key-env", "LLAMA_API_KEY", "--temperature", "0", "--max-tokens", "512", "--concurrency", "8"]
    call_command("add_model_source", "Local Llama", "--base-url", "http://127.0.0.1:8080/v1", "--model", "llama-3",
                 *options)  # fmt: skip
    source = AnswerSource.objects.get(name="Local Llama")
    assert (source.kind, source.base_url, source.model_name, source.api_key_env) == (
        "model", "http://127.0.0.1:8080/v1", "llama-3", "LLAMA_API_KEY",
    )  # fmt: skip
    assert (source.max_tokens, source.concurrency) == (512, 8)
    assert source.generation_settings()["model"] == "llama-3"
    assert "Added model source" in capsys.readouterr().out


def test_running_it_again_updates_the_source():
    call_command("add_model_source", "M", "--base-url", "http://127.0.0.1:1/v1", "--model", "a")
    call_command("add_model_source", "M", "--base-url", "http://127.0.0.1:1/v1", "--model", "b")
    assert AnswerSource.objects.get(name="M").model_name == "b"
    assert AnswerSource.objects.filter(name="M").count() == 1


def test_bad_settings_are_refused_with_a_message_and_nothing_is_stored():
    with pytest.raises(CommandError, match="must contain"):
        call_command("add_model_source", "X", "--base-url", "http://127.0.0.1:1/v1", "--model", "a",
                     "--prompt-template", "no placeholder")  # fmt: skip
    with pytest.raises(CommandError, match="Enter a valid URL"):
        call_command("add_model_source", "Y", "--base-url", "not a url", "--model", "a")
    assert not AnswerSource.objects.filter(name__in=["X", "Y"]).exists()


def test_a_non_model_source_of_that_name_is_not_overwritten():
    AnswerSource.objects.create(name="Physicians", kind=AnswerSource.Kind.PHYSICIAN)
    with pytest.raises(CommandError, match="not a model source"):
        call_command("add_model_source", "Physicians", "--base-url", "http://127.0.0.1:1/v1", "--model", "a")
