.PHONY: demo test lint format check local-model

# The first run installs ~570 MB of packages into .venv (a few minutes; about 45 s with pip's cache warm), then
# seeds for about a minute; later runs start in about a minute. DEMO_ADDRESS=127.0.0.1:8001 serves elsewhere.
demo:  ## Run the app on SQLite with an embedded broker, one worker and demo data; each step is announced
	scripts/demo.sh $(DEMO_ADDRESS)

test:  ## Run the test suite against PostgreSQL, Redis and a Celery worker
	scripts/test.sh

local-model:  ## A real local model (SmolLM2-135M on the CPU) at http://127.0.0.1:8091/v1; installs it the first time
	scripts/local_model.sh

lint:  ## ruff, and mypy --strict on the pure statistics of analysis/
	scripts/bootstrap.sh requirements-dev.txt
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

format:
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .

check:  ## Django's deployment checks with production-like settings
	DEBUG=false SECRET_KEY=$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))') \
	ALLOWED_HOSTS=example.org .venv/bin/python manage.py check --deploy --fail-level WARNING
