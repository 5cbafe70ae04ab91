from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from datasets.models import AnswerSource


class Command(BaseCommand):
    help = (
        "Add (or update) an answer source that is a model behind an OpenAI-compatible chat-completions endpoint. "
        "The API key is read at run time from the environment variable named by --api-key-env; it is never stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--model", required=True, help="The model name the server expects.")
        parser.add_argument("--api-key-env", default="", help="Environment variable holding the API key.")
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--max-tokens", type=int, default=1024)
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--rate-limit", type=int, default=None, help="Requests per minute (default: none).")
        parser.add_argument("--timeout", type=float, default=120.0, help="Seconds to wait for one answer.")
        parser.add_argument("--system-prompt", default="")
        parser.add_argument("--prompt-template", default="{question}", help="Must contain {question}.")
        parser.add_argument("--logprobs", action="store_true", help="Ask for token log-probabilities.")
        parser.add_argument("--top-logprobs", type=int, default=None)

    # Command option -> AnswerSource field.
    FIELDS = {
        "base_url": "base_url", "model": "model_name", "api_key_env": "api_key_env", "temperature": "temperature",
        "max_tokens": "max_tokens", "concurrency": "concurrency", "rate_limit": "rate_limit_per_minute",
        "timeout": "request_timeout_seconds", "system_prompt": "system_prompt", "prompt_template": "prompt_template",
        "logprobs": "logprobs", "top_logprobs": "top_logprobs",
    }  # fmt: skip

    def handle(self, *args, **opts):
        if opts["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1")
        source = AnswerSource.objects.filter(name=opts["name"]).first()
        created = source is None
        if created:
            source = AnswerSource(name=opts["name"], kind=AnswerSource.Kind.MODEL)
        elif source.kind != AnswerSource.Kind.MODEL:
            raise CommandError(f"{source.name!r} exists and is not a model source ({source.get_kind_display()})")
        for option, field in self.FIELDS.items():
            setattr(source, field, opts[option])
        try:
            source.full_clean()  # validated before anything is written
        except ValidationError as error:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())) from None
        source.save()
        self.stdout.write(self.style.SUCCESS(f"{'Added' if created else 'Updated'} model source {source.name!r}"))
