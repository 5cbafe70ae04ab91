"""Settings come from the environment; production refuses unsafe values."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STRONG_KEY = "k" * 20 + "Zq8-vH2_pL0xR7mN4bT9cW1yJ6sD3fG5"


# Variables of the test process that would change what the settings or the checks report.
NOT_INHERITED = {"DEBUG", "DATABASE_URL", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}


def clean_environment(**env) -> dict:
    return {**{key: value for key, value in os.environ.items() if key not in NOT_INHERITED}, **env}


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    base = clean_environment()
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_without_secret_key_refuses_to_start():
    result = run_python("import django; django.setup()", DEBUG="false", ALLOWED_HOSTS="example.org")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_production_with_a_development_key_refuses_to_start():
    result = run_python(
        "import django; django.setup()", DEBUG="false", ALLOWED_HOSTS="example.org", SECRET_KEY="django-insecure-x"
    )
    assert result.returncode != 0
    assert "SECRET_KEY is too short" in result.stderr


def test_production_without_allowed_hosts_refuses_to_start():
    result = run_python("import django; django.setup()", DEBUG="false", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="")
    assert result.returncode != 0
    assert "ALLOWED_HOSTS is empty" in result.stderr


def test_a_malformed_boolean_is_an_error_not_a_guess():
    result = run_python("import django; django.setup()", DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_deploy_check_is_clean_when_configured_for_production():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=clean_environment(DEBUG="false", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="equityrate.example.org"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_development_defaults_are_sqlite_under_var_and_eager_celery(tmp_path):
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], s.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = run_python(code, DEBUG="true", VAR_DIR=str(tmp_path), CELERY_BROKER_URL="")
    assert result.returncode == 0, result.stderr
    engine, name, eager = result.stdout.split()
    assert engine == "django.db.backends.sqlite3"
    assert name == str(tmp_path / "equityrate.sqlite3")
    assert eager == "True"


def test_database_and_broker_urls_are_read_from_the_environment():
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], s.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = run_python(
        code,
        DEBUG="true",
        DATABASE_URL="postgres://u:p@db.internal:5432/equity",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", "equity", "False"]


def test_every_variable_the_settings_read_is_documented_in_env_example():
    settings_source = (REPO / "config" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|list|int)\("([A-Z_]+)"', settings_source))
    documented = set(re.findall(r"^([A-Z_]+)=", (REPO / ".env.example").read_text(), re.MULTILINE))
    assert read, "the settings read no variables? the pattern is out of date"
    assert read <= documented, f"missing from .env.example: {sorted(read - documented)}"


def test_a_malformed_key_binding_stops_the_server():
    result = run_python("import django; django.setup()", DEBUG="true", MODEL_KEY_HOSTS="OPENAI_API_KEY=https://x/v1")
    assert result.returncode != 0
    assert "MODEL_KEY_HOSTS: 'https://x/v1' is not a host name or address" in result.stderr


def test_unset_the_openai_key_goes_only_to_openai_and_empty_binds_nothing():
    code = "import django; django.setup(); from django.conf import settings; print(settings.MODEL_KEY_HOSTS)"
    empty = run_python(code, DEBUG="true", MODEL_KEY_HOSTS="")
    environment = {key: value for key, value in clean_environment().items() if key != "MODEL_KEY_HOSTS"}
    unset = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.stdout.strip() == "{}"
    assert (
        unset.stdout.strip() == "{'OPENAI_API_KEY': (HostPattern(host='api.openai.com', port=None, wildcard=False),)}"
    )
