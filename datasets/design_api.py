"""JSON API of the study designs (DESIGN.md): prompt recipes, their request preview, jobs under a recipe, and
variant runs. Coordinators only, as on the pages.
"""

import copy

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.settings import api_settings

from config.rest import StorableJSONField
from raters.api_permissions import IsCoordinator

from . import factors, recipe_pages, recipes, variant_pages
from .api import GenerationJobDetailSerializer, GenerationRefusedSerializer, StudyInputMixin
from .generation import jobs
from .models import AnswerSource, Dataset, GenerationJob, PromptRecipe, Question, VariantRun
from .variants import MAX_LIMIT, MAX_SEED, MIN_SEED
from .variants import runs as variant_runs

RECIPE_FIELDS = ["name", "description", "mode", "system_prompt", "prompt_role", "instruction", "level_factor",
                 "level_texts", "item_template", "options_format", "options_separator", "examples", "examples_pool",
                 "examples_match_factor", "examples_seed", "examples_holdout", "examples_from_evaluated",
                 "examples_footer", "condition", "stop", "logprobs", "top_logprobs", "max_tokens",
                 "temperature"]  # fmt: skip


class RecipeJSONField(StorableJSONField):
    """A recipe's JSON setting, with the shape the pages check (`recipe_pages.json_field_problem`)."""

    def __init__(self, *, setting: str, **kwargs):
        self.setting = setting
        help_text = PromptRecipe._meta.get_field(setting).help_text
        if setting == "examples":  # the model's help text predates "where", "template" and "replace"
            help_text = recipe_pages.EXAMPLES_HELP
        super().__init__(help_text=help_text, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if problem := recipe_pages.json_field_problem(self.setting, value):
            raise serializers.ValidationError(problem)
        return value


class StrictInputSerializer(serializers.Serializer):
    """Input that names a field we do not know is refused, not silently ignored: a misspelt option (say
    `options` for `biases` and `limit`) would otherwise start a run over every base question, a misspelt recipe
    setting would leave the default in place. (Read-only fields sent back are ignored, as DRF does.)"""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                known = ", ".join(name for name, field in self.fields.items() if not field.read_only)
                message = f"Unknown field; the fields are: {known}."
                raise serializers.ValidationError({key: [message] for key in unknown})
        return super().to_internal_value(data)


class PromptRecipeSerializer(StrictInputSerializer, serializers.ModelSerializer):
    level_texts = RecipeJSONField(setting="level_texts", required=False)
    examples = RecipeJSONField(setting="examples", required=False)
    condition = RecipeJSONField(setting="condition", required=False)
    stop = RecipeJSONField(setting="stop", required=False)
    url = serializers.HyperlinkedIdentityField(view_name="api:recipe-detail")

    class Meta:
        model = PromptRecipe
        fields = ["id", "url", *RECIPE_FIELDS, "created_at", "updated_at"]
        read_only_fields = ["id", "url", "created_at", "updated_at"]
        extra_kwargs = {
            "max_tokens": {"min_value": 1},
            "top_logprobs": {"min_value": 1},
            # Sent as typed: a template may end with a space the model should see.
            **{name: {"trim_whitespace": False} for name in ("instruction", "item_template", "options_format",
                                                             "options_separator", "examples_footer",
                                                             "system_prompt")},
        }  # fmt: skip

    def validate(self, attrs):
        candidate = copy.copy(self.instance) if self.instance is not None else PromptRecipe()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        try:
            recipe_pages.check_recipe(candidate)
        except recipes.RecipeError as error:
            field = recipe_pages.error_field(error) or api_settings.NON_FIELD_ERRORS_KEY
            raise serializers.ValidationError({field: [str(error)]}) from None
        return attrs


class RecipePreviewInputSerializer(StrictInputSerializer):
    question_id = serializers.PrimaryKeyRelatedField(queryset=Question.objects.all(), help_text="Any question.")
    source = serializers.PrimaryKeyRelatedField(
        queryset=AnswerSource.objects.all(),
        required=False,
        allow_null=True,
        help_text=f"Its model name goes in the body; without one the body says {recipe_pages.PREVIEW_MODEL!r}.",
    )


class RecipePreviewSerializer(serializers.Serializer):
    prompt = serializers.CharField(help_text="The prompt text (the user message in chat mode).")
    body = serializers.JSONField(help_text="The exact JSON body the job sends for this question.")
    examples = serializers.ListField(
        child=serializers.CharField(), help_text="External ids of the worked examples drawn for this question."
    )


class RecipeErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


class RecipeJobInputSerializer(StudyInputMixin, StrictInputSerializer):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    source = serializers.PrimaryKeyRelatedField(
        queryset=AnswerSource.objects.all(), help_text="A model source with an endpoint (base_url)."
    )
    levels = serializers.DictField(
        child=serializers.CharField(max_length=factors.MAX_LEVEL_CHARS),
        required=False,
        help_text='Only the dataset\'s questions at these levels, e.g. {"bias": "recency"}: at most '
        f"{factors.MAX_FACTORS} factors, whose names have {factors.KEY_RULE}.",
    )

    def validate_levels(self, levels):
        if problem := factors.levels_problem(levels):
            raise serializers.ValidationError(problem)
        return levels


class VariantRunSerializer(serializers.ModelSerializer):
    base_dataset_name = serializers.CharField(source="base_dataset.name", read_only=True)
    dataset_name = serializers.CharField(source="dataset.name", read_only=True, allow_null=True)
    percent = serializers.SerializerMethodField()
    url = serializers.HyperlinkedIdentityField(view_name="api:variant-run-detail")

    class Meta:
        model = VariantRun
        fields = ["id", "url", "generator", "version", "seed", "options", "base_dataset", "base_dataset_name",
                  "dataset", "dataset_name", "status", "total", "done", "percent", "created", "existing", "error",
                  "created_at", "started_at", "finished_at"]  # fmt: skip
        read_only_fields = fields

    def get_percent(self, run) -> int:
        return variant_pages.run_percent(run)


class VariantRunRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    run = serializers.IntegerField(allow_null=True, help_text="The run already making these variants, if any.")


class VariantRunCreateSerializer(StrictInputSerializer):
    generator = serializers.ChoiceField(choices=[])
    base_dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    seed = serializers.IntegerField(default=0, min_value=MIN_SEED, max_value=MAX_SEED)
    biases = serializers.ListField(
        child=serializers.ChoiceField(choices=[]),
        required=False,
        help_text="The levels to make (BiasMedQA's biases, Q-Pain's race x gender profiles such as \"Black woman\", "
        "ContextSRH's attributes age, location, sex). "
        "Empty: the generator's default levels.",
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT,
                                     help_text="Only the first N base questions.")  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["generator"].choices = variant_pages.generator_choices()
        self.fields["biases"].child.choices = variant_pages.level_choices()

    def validate(self, attrs):
        unknown = sorted(set(attrs.get("biases") or []) - set(variant_pages.levels_of(attrs["generator"])))
        if unknown:
            raise serializers.ValidationError({"biases": [f"The generator has no level {', '.join(unknown)}."]})
        return attrs

    def run_options(self) -> dict:
        return variant_pages.run_options(
            generator=self.validated_data["generator"], biases=self.validated_data.get("biases"),
            limit=self.validated_data.get("limit"),
        )  # fmt: skip


# --- Views ---------------------------------------------------------------------------------------


class PromptRecipeViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.RetrieveModelMixin, mixins.ListModelMixin,
    viewsets.GenericViewSet,
):  # fmt: skip
    """Prompt recipes: how a question becomes the exact request a model receives."""

    permission_classes = [IsCoordinator]
    serializer_class = PromptRecipeSerializer
    lookup_value_converter = "int"
    queryset = PromptRecipe.objects.select_related("examples_pool").order_by("name")

    def perform_create(self, serializer):
        serializer.save(created_by=self.request.user)

    @extend_schema(
        request=RecipePreviewInputSerializer,
        responses={
            200: RecipePreviewSerializer,
            400: OpenApiResponse(RecipeErrorSerializer, description="The recipe cannot render this question."),
        },
    )
    @action(detail=True, methods=["post"])
    def preview(self, request, pk=None):
        """The exact request a job with this recipe would send for one question; nothing is sent."""
        recipe = self.get_object()
        serializer = RecipePreviewInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            shown = recipe_pages.preview(recipe, data["question_id"], data.get("source"))
        except recipes.RecipeError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        request_ = shown.request
        return Response({"prompt": request_.prompt, "body": request_.body, "examples": list(request_.examples)})

    @extend_schema(
        request=RecipeJobInputSerializer,
        responses={
            201: GenerationJobDetailSerializer,
            409: OpenApiResponse(
                GenerationRefusedSerializer,
                description="Refused: the source cannot generate, or a job is already generating these answers.",
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def generate(self, request, pk=None):
        """Start a generation job under this recipe: the source over the dataset (optionally some levels only)."""
        recipe = self.get_object()
        serializer = RecipeJobInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            job = jobs.start_job(
                dataset=data["dataset"], source=data["source"], recipe=recipe, levels=data.get("levels") or {},
                study_id=data["study"], user=request.user,
            )  # fmt: skip
        except jobs.GenerationRefused as refused:
            return Response(
                {"detail": str(refused), "job": refused.job.pk if refused.job else None},
                status=status.HTTP_409_CONFLICT,
            )
        job = GenerationJob.objects.select_related("dataset", "source").get(pk=job.pk)
        output = GenerationJobDetailSerializer(job, context=self.get_serializer_context())
        return Response(output.data, status=status.HTTP_201_CREATED)


class VariantRunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Variant runs: a generator applied to a base dataset by a worker, with progress."""

    permission_classes = [IsCoordinator]
    serializer_class = VariantRunSerializer
    lookup_value_converter = "int"
    queryset = VariantRun.objects.select_related("base_dataset", "dataset").order_by("-created_at", "-id")

    @extend_schema(
        request=VariantRunCreateSerializer,
        responses={
            201: VariantRunSerializer,
            409: OpenApiResponse(
                VariantRunRefusedSerializer,
                description="Refused: the base dataset has no questions, or a run of it is already going.",
            ),
        },
    )
    def create(self, request, *args, **kwargs):
        serializer = VariantRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            run = variant_runs.start_variant_run(
                generator=data["generator"],
                base_dataset=data["base_dataset"],
                seed=data["seed"],
                options=serializer.run_options(),
                user=request.user,
            )
        except variant_runs.VariantRunRefused as refused:
            payload = {"detail": str(refused), "run": refused.run.pk if refused.run else None}
            return Response(payload, status=status.HTTP_409_CONFLICT)
        run = self.get_queryset().get(pk=run.pk)
        return Response(self.get_serializer(run).data, status=status.HTTP_201_CREATED)
