"""A model source's engine endpoint (datasets/DESIGN.md, "A model source's endpoint").

The source keeps its connection and limit fields (its form, API and admin edit them there); every save of the
source writes them to its `engine.Endpoint`, here and nowhere else, so the two never disagree and every kind of
work sent to the source's endpoint shares its limits.
"""

from engine.models import Endpoint

# The source's fields the endpoint mirrors, under the same names.
MIRRORED = ("base_url", "api_key_env", "request_timeout_seconds", "concurrency", "rate_limit_per_minute")


def endpoint_values(source) -> dict:
    return {field: getattr(source, field) for field in MIRRORED}


def needs_endpoint(source) -> bool:
    """A model source with a URL gets one; once it has one it keeps it (a cleared URL is mirrored too)."""
    return source.endpoint_id is not None or (source.kind == "model" and bool(source.base_url))


def free_name(endpoints, name: str, *, source_id: int | None, own_id: int | None = None) -> str:
    """The source's name, or with its id when an unrelated endpoint has that name (`endpoints` is a manager,
    so a migration can pass its historical one)."""
    taken = endpoints.filter(name=name[:200]).exclude(id=own_id).exists()
    return f"{name[:180]} (source {source_id})" if taken else name[:200]


def sync_endpoint(source) -> None:
    """Create or update the saved source's endpoint from its fields; runs inside the source's save transaction."""
    if not needs_endpoint(source):
        return
    values = endpoint_values(source)
    if source.endpoint_id is None:
        name = free_name(Endpoint.objects, source.name, source_id=source.pk)
        source.endpoint = Endpoint.objects.create(name=name, **values)
        type(source).objects.filter(pk=source.pk).update(endpoint=source.endpoint)
        return
    name = free_name(Endpoint.objects, source.name, source_id=source.pk, own_id=source.endpoint_id)
    Endpoint.objects.filter(id=source.endpoint_id).update(name=name, **values)
