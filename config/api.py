"""The JSON API's URLs (/api/): its root, token sign-in, the OpenAPI schema and its documentation page, and
each app's endpoints."""

from django.urls import path
from rest_framework.routers import SimpleRouter
from rest_framework.settings import api_settings

from config import api_pages
from config.signin import TokenView
from datasets import api as datasets_api
from datasets import design_api
from studies import api as studies_api

app_name = "api"

# Each collection with the one line the API root (/api/) shows for it; the schema documents the rest.
RESOURCES = [
    ("datasets", datasets_api.DatasetViewSet, "dataset", "Question datasets; coordinators add them and import files."),
    ("import-jobs", datasets_api.ImportJobViewSet, "import-job", "Question imports: status, report, rejected lines."),
    ("questions", datasets_api.QuestionViewSet, "question", "The datasets' questions."),
    ("pairs", datasets_api.PairViewSet, "pair", "Counterfactual pairs of questions."),
    ("answer-sources", datasets_api.AnswerSourceViewSet, "answer-source", "Where answers come from: models, files."),
    ("answers", datasets_api.AnswerViewSet, "answer", "Answers with their provenance."),
    ("generation-jobs", datasets_api.GenerationJobViewSet, "generation-job", "Answer-generation jobs and progress."),
    ("recipes", design_api.PromptRecipeViewSet, "recipe", "Prompt recipes: how a question becomes a request."),
    ("variant-runs", design_api.VariantRunViewSet, "variant-run", "Question variants made from a base dataset."),
    ("studies", studies_api.StudyViewSet, "study", "Rating studies with their counts; a study's ratings as CSV."),
    ("assignments", studies_api.AssignmentViewSet, "assignment", "Items to rate; a rater submits ratings here."),
    ("ratings", studies_api.RatingViewSet, "rating", "Every rating and revision, raters by pseudonym."),
    ("raters", studies_api.RaterViewSet, "rater", "Raters with their usernames (coordinators only)."),
]

# Path converters, not regexes: with the default regex paths DRF ignores the viewsets' lookup_value_converter,
# so /api/assignments/abc/rating/ reached the view (and failed there) instead of being a 404.
router = SimpleRouter(use_regex_path=False)
for prefix, viewset, basename, _ in RESOURCES:
    router.register(prefix, viewset, basename=basename)

urlpatterns = [
    path("", api_pages.ApiRoot.as_view(resources=RESOURCES), name="root"),
    # DRF's token view names its own parsers; it gets the API's, which refuse bodies the database cannot take.
    path("auth/token/", TokenView.as_view(parser_classes=api_settings.DEFAULT_PARSER_CLASSES), name="token"),
    path("schema/", api_pages.SchemaView.as_view(), name="schema"),
    path("docs/", api_pages.api_docs, name="docs"),
    path("studies/<int:study_id>/items/", studies_api.StudyItemList.as_view(), name="study-items"),
    *router.urls,
]
