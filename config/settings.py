"""EquityRate settings, read from the environment.

Development defaults are safe to run locally (SQLite under var/, eager Celery unless a broker is set;
the demo sets the embedded filesystem:// broker);
production (DEBUG off) refuses to start without a real SECRET_KEY and ALLOWED_HOSTS.
Every variable read here is listed in .env.example.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.key_hosts import parse_key_hosts

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


DEBUG = env_bool("DEBUG", default=False)

_DEV_SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY (50+ random characters) for production, "
            "or DEBUG=true for local development."
        )
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is empty: list the host names this site answers to.")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files for /api/docs/, served as our own static files
    "jobs",
    "engine",
    "datasets",
    "scoring",
    "raters",
    "studies",
    "analysis",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.refuse_nul_in_address",
    "config.middleware.StatementTimeout",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

if not DEBUG:
    # Production serves collected static files from the app server (runserver does it in development).
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "raters.context_processors.roles",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
if not env_str("DATABASE_URL"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'equityrate.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The demo's web process and worker write to one file: WAL lets readers through, IMMEDIATE write
    # transactions queue for the lock instead of failing with "database is locked" on upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        # sqlite3 keeps 128 prepared statements per connection; a bulk insert of a few thousand rows prepares
        # one of several MB, so importing BiasMedQA's 216,288 responses held ~700 MB in that cache alone.
        "cached_statements": 16,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Web requests on PostgreSQL run under this statement_timeout (config.middleware.StatementTimeout): a longer query
# is cancelled and the request answered with 503. Below gunicorn's 30-second worker timeout, so the database stops
# first. Workers and commands have no limit. 0: none for requests either.
WEB_STATEMENT_TIMEOUT_MS = env_int("WEB_STATEMENT_TIMEOUT_MS", 25_000)
if WEB_STATEMENT_TIMEOUT_MS < 0:
    raise ImproperlyConfigured("WEB_STATEMENT_TIMEOUT_MS must be 0 (no limit) or more")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Sign-in throttling (config/signin.py, counters in the cache): after LOGIN_FAILURE_LIMIT failed sign-ins for one
# account, or LOGIN_ADDRESS_FAILURE_LIMIT from one client address, within LOGIN_FAILURE_WINDOW_SECONDS (counted
# from the first), further sign-ins are refused, even with the right password, until the window ends.
# A client's address is REMOTE_ADDR, or X-Forwarded-For as written by TRUSTED_PROXY_COUNT proxies in front.
AUTHENTICATION_BACKENDS = ["config.signin.ThrottledModelBackend"]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 50)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# API tokens expire this long after they are issued (POST /api/auth/token/ then issues a new one), and are
# revoked at logout. The token endpoint also takes at most API_TOKEN_RATE requests per client address.
API_TOKEN_TTL_HOURS = env_int("API_TOKEN_TTL_HOURS", 24 * 7)
API_TOKEN_RATE = env_str("API_TOKEN_RATE", "30/minute")
for _name in (
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_ADDRESS_FAILURE_LIMIT",
    "LOGIN_FAILURE_WINDOW_SECONDS",
    "API_TOKEN_TTL_HOURS",
):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1")
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_COUNT must be 0 or more")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# The JSON API (/api/): scripts and notebooks send a token (POST /api/auth/token/), browsers their session.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.tokens.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,  # DRF's throttles: trust X-Forwarded-For only this far
    "DEFAULT_THROTTLE_RATES": {"auth-token": API_TOKEN_RATE},
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies are checked for what the database cannot store (NUL, lone surrogates, deep nesting).
    "DEFAULT_PARSER_CLASSES": [
        "config.rest.StorableJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "config.rest.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "config.schema.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "EquityRate API",
    "DESCRIPTION": "Datasets, studies, assignments and ratings of EquityRate's human rating studies.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Upload and write bodies differ from what is read back: separate request and response components.
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a "kind" or "status": give each choice set its own name.
    "ENUM_NAME_OVERRIDES": {
        "RubricKindEnum": "studies.models.RubricKind",
        "AssignmentStatusEnum": "studies.models.Assignment.Status",
        "AnswerSourceKindEnum": "datasets.models.AnswerSource.Kind",
        "ImportJobKindEnum": "datasets.models.ImportJob.Kind",
        "ImportJobStatusEnum": "datasets.models.ImportJob.Status",
        "GenerationJobStatusEnum": "datasets.models.GenerationJob.Status",
    },
}

# Uploads for importers are stored in the database in chunks (never read whole), so that a worker on another
# machine can process them; importers stream them row by row.
IMPORT_MAX_UPLOAD_BYTES = env_int("IMPORT_MAX_UPLOAD_BYTES", 50 * 1024 * 1024)
# A workbook (.xlsx) is a zip: its parts' declared uncompressed sizes are checked before it is parsed.
IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES = env_int("IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES", 256 * 1024 * 1024)
IMPORT_MAX_WORKBOOK_COMPRESSION_RATIO = env_int("IMPORT_MAX_WORKBOOK_COMPRESSION_RATIO", 200)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Raters' free text (comment, other_text, ideal_comment) on the rating page, in drafts and in the API, and
# the whole autosaved draft as stored: larger input is refused with a message, never stored.
RATING_TEXT_MAX_CHARS = env_int("RATING_TEXT_MAX_CHARS", 5000)
RATING_DRAFT_MAX_BYTES = env_int("RATING_DRAFT_MAX_BYTES", 64 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# The cache holds throttling counters (failed logins, panel arrivals) and short-lived status. Production
# runs several web processes, so they must share it: CACHE_URL=redis://... (docker-compose sets it).
# Unset, each process keeps its own in memory (development and the demo's single web process).
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, got {CACHE_URL!r}")
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "equityrate"),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Crowd panels: at most this many new participants (participant ids not seen before) start a study per
# minute; more get "429 busy, try again in a minute". 0: no limit.
PANEL_ARRIVALS_PER_MINUTE = env_int("PANEL_ARRIVALS_PER_MINUTE", 60)

# Celery: with no broker configured, tasks run eagerly in the process that starts them.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 30 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
if CELERY_BROKER_URL.startswith("filesystem://"):
    # The demo's embedded broker: messages are files under var/, no broker service needed.
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "messages"),
        "data_folder_out": str(_broker_dir / "messages"),
        "control_folder": str(_broker_dir / "control"),
    }
    for _folder in ("messages", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
# Answer generation (datasets/generation/). Lanes are Celery tasks that each keep one request in flight.
CELERY_GENERATION_QUEUE = env_str("CELERY_GENERATION_QUEUE")  # empty: the default queue
GENERATION_MAX_ATTEMPTS = env_int("GENERATION_MAX_ATTEMPTS", 5)
GENERATION_BACKOFF_SECONDS = env_int("GENERATION_BACKOFF_SECONDS", 2)  # doubles per attempt...
GENERATION_BACKOFF_MAX_SECONDS = env_int("GENERATION_BACKOFF_MAX_SECONDS", 120)  # ...up to this
# A request in flight longer than the source's timeout plus this margin belonged to a dead worker.
GENERATION_LEASE_MARGIN_SECONDS = env_int("GENERATION_LEASE_MARGIN_SECONDS", 15)
# A lane hands over to a fresh task after this long, so long jobs never meet the task time limit.
GENERATION_LANE_BUDGET_SECONDS = env_int("GENERATION_LANE_BUDGET_SECONDS", 600)
# A judge's invalid replies (studies/DESIGN.md, "Judges"): replies in all per question before it is recorded as failed.
JUDGE_INVALID_REPLY_ATTEMPTS = env_int("JUDGE_INVALID_REPLY_ATTEMPTS", 3)
# Modules that register more kinds of work with the model-call engine (engine/DESIGN.md) than the apps do.
ENGINE_KIND_MODULES = env_list("ENGINE_KIND_MODULES")
# Which API-key variable may be sent to which host (config/key_hosts.py explains the syntax): a variable not
# listed is sent nowhere, and no key goes over plain http:// except to a loopback address.
try:
    MODEL_KEY_HOSTS = parse_key_hosts(env_str("MODEL_KEY_HOSTS", "OPENAI_API_KEY=api.openai.com"))
except ValueError as exc:
    raise ImproperlyConfigured(f"MODEL_KEY_HOSTS: {exc}") from exc

# Production hardening: on whenever DEBUG is off (`manage.py check --deploy` is clean).
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 60 * 60 * 24 * 30)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    if len(SECRET_KEY) < 50 or SECRET_KEY.startswith("django-insecure"):
        raise ImproperlyConfigured("SECRET_KEY is too short or a development key: use 50+ random characters.")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
