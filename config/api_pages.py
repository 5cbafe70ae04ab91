"""The API's own pages: its root (/api/), the schema (/api/schema/) and the schema's documentation page
(/api/docs/), all for signed-in users."""

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import redirect, render
from django.urls import reverse
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import exceptions, serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer, TemplateHTMLRenderer
from rest_framework.response import Response
from rest_framework.views import APIView


def wants_a_page(request) -> bool:
    """A browser following a link (it asks for HTML first), not a client naming a format."""
    return request.headers.get("Accept", "").startswith("text/html") and "format" not in request.GET


class EndpointSerializer(serializers.Serializer):
    name = serializers.CharField()
    url = serializers.CharField(help_text="Absolute; '{study_id}' stands for a study's id where it appears.")
    description = serializers.CharField()


class ApiRootSerializer(serializers.Serializer):
    endpoints = EndpointSerializer(many=True)
    schema = serializers.URLField(help_text="The OpenAPI 3 schema (YAML; JSON with ?format=json).")
    docs = serializers.URLField(help_text="The schema as a page to read and try.")


class ApiRoot(APIView):
    """Every endpoint with a line on what it is for: JSON for clients, a page for browsers."""

    renderer_classes = [JSONRenderer, TemplateHTMLRenderer]
    template_name = "api/root.html"
    resources: list[tuple] = []  # config.api.RESOURCES: (prefix, viewset, basename, description)

    @extend_schema(
        summary="The API's endpoints, each with a one-line description", tags=["root"], responses=ApiRootSerializer
    )
    def get(self, request):
        absolute = request.build_absolute_uri
        study_items = absolute(reverse("api:study-list")) + "{study_id}/items/"  # a template, not quoted
        endpoints = [
            {
                "name": "auth/token",
                "url": absolute(reverse("api:token")),
                "description": "POST a username and password for a token; send it as 'Authorization: Token ...'.",
            },
            *(
                {"name": prefix, "url": absolute(reverse(f"api:{basename}-list")), "description": description}
                for prefix, _, basename, description in self.resources
            ),
            {
                "name": "studies/{study_id}/items",
                "url": study_items,
                "description": "A study's items with their answers' sources and how many are rated.",
            },
        ]
        data = {
            "endpoints": endpoints,
            "schema": absolute(reverse("api:schema")),
            "docs": absolute(reverse("api:docs")),
        }
        return Response(data)

    def handle_exception(self, exc):
        # A browser that is not signed in goes to the sign-in page, as the site's pages do; clients get 401.
        renderer = getattr(self.request, "accepted_renderer", None)
        unauthenticated = isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed)
        if unauthenticated and isinstance(renderer, TemplateHTMLRenderer):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema for signed-in users: YAML by default, JSON when asked (Accept or ?format=json).

    A browser following a link gets the documentation page instead of a file to save.
    """

    permission_classes = [IsAuthenticated]
    # ?format=json picks the first JSON renderer: application/json, which browsers show rather than save.
    renderer_classes = [OpenApiYamlRenderer, OpenApiYamlRenderer2, OpenApiJsonRenderer2, OpenApiJsonRenderer]

    def dispatch(self, request, *args, **kwargs):
        if wants_a_page(request):
            return redirect("api:docs")
        return super().dispatch(request, *args, **kwargs)


@login_required
def api_docs(request):
    """Swagger UI over the schema, from drf-spectacular-sidecar's static files: nothing is fetched elsewhere."""
    return render(request, "api/docs.html")
