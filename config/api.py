"""The JSON API's URLs (/api/): token sign-in, the OpenAPI schema and each app's endpoints."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter
from rest_framework.settings import api_settings

from config.signin import TokenView
from datasets import api as datasets_api
from datasets import design_api
from studies import api as studies_api

app_name = "api"

# Path converters, not regexes: with the default regex paths DRF ignores the viewsets' lookup_value_converter,
# so /api/assignments/abc/rating/ reached the view (and failed there) instead of being a 404.
router = SimpleRouter(use_regex_path=False)
router.register("datasets", datasets_api.DatasetViewSet, basename="dataset")
router.register("import-jobs", datasets_api.ImportJobViewSet, basename="import-job")
router.register("questions", datasets_api.QuestionViewSet, basename="question")
router.register("pairs", datasets_api.PairViewSet, basename="pair")
router.register("answer-sources", datasets_api.AnswerSourceViewSet, basename="answer-source")
router.register("answers", datasets_api.AnswerViewSet, basename="answer")
router.register("generation-jobs", datasets_api.GenerationJobViewSet, basename="generation-job")
router.register("recipes", design_api.PromptRecipeViewSet, basename="recipe")
router.register("variant-runs", design_api.VariantRunViewSet, basename="variant-run")
router.register("studies", studies_api.StudyViewSet, basename="study")
router.register("assignments", studies_api.AssignmentViewSet, basename="assignment")
router.register("ratings", studies_api.RatingViewSet, basename="rating")
router.register("raters", studies_api.RaterViewSet, basename="rater")

urlpatterns = [
    # DRF's token view names its own parsers; it gets the API's, which refuse bodies the database cannot take.
    path("auth/token/", TokenView.as_view(parser_classes=api_settings.DEFAULT_PARSER_CLASSES), name="token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("studies/<int:study_id>/items/", studies_api.StudyItemList.as_view(), name="study-items"),
    *router.urls,
]
