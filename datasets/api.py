"""JSON API for datasets, questions, pairs, answer sources, answers and import jobs.

The study team (coordinators and analysts) reads everything; coordinators add datasets and import files.
"""

from django.conf import settings
from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from config.rest import QueryFilters
from raters.api_permissions import IsCoordinator, IsStudyTeam

from . import services
from .importers.questions import FORMATS
from .models import Answer, AnswerSource, CounterfactualPair, Dataset, ImportJob, Question

# --- Serializers ---------------------------------------------------------------------------------


class DatasetSerializer(serializers.ModelSerializer):
    question_count = serializers.IntegerField(read_only=True)
    pair_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "licence", "source", "created_at", "question_count", "pair_count"]
        read_only_fields = fields


class DatasetCreateSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dataset
        fields = ["name", "description", "licence", "source"]


class QuestionImportSerializer(serializers.Serializer):
    """The upload page's (and `manage.py import_questions`') options."""

    file = serializers.FileField(help_text="UTF-8 CSV or JSONL.")
    dataset = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Leave empty for files whose name or format tells the dataset (e.g. equitymedqa_omaq.csv).",
    )
    format = serializers.ChoiceField(choices=FORMATS, default="auto")
    question_column = serializers.CharField(default="question", max_length=100)
    id_column = serializers.CharField(default="id", allow_blank=True, max_length=100)
    pair_column = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Column with the second question of a counterfactual pair.",
    )
    dataset_column = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="Column naming each row's dataset."
    )

    def validate_file(self, upload):
        if upload.size > settings.IMPORT_MAX_UPLOAD_BYTES:
            limit = settings.IMPORT_MAX_UPLOAD_BYTES // (1024 * 1024)
            raise serializers.ValidationError(
                f"The file is larger than {limit} MB; import it with the command instead."
            )
        if upload.size == 0:
            raise serializers.ValidationError("The file is empty.")
        return upload

    def import_options(self) -> dict:
        data = self.validated_data
        return {
            "dataset": data.get("dataset") or None,
            "format": data["format"],
            "question_column": data["question_column"],
            "id_column": data["id_column"] or "id",
            "pair_column": data.get("pair_column") or None,
            "dataset_column": data.get("dataset_column") or None,
        }


class ImportJobSerializer(serializers.ModelSerializer):
    status_url = serializers.HyperlinkedIdentityField(view_name="api:import-job-detail")

    class Meta:
        model = ImportJob
        fields = ["id", "kind", "filename", "options", "status", "report", "errors", "status_url",
                  "created_at", "started_at", "finished_at"]  # fmt: skip
        read_only_fields = fields


class QuestionSerializer(serializers.ModelSerializer):
    answer_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Question
        fields = ["id", "dataset", "external_id", "text", "metadata", "answer_count", "created_at"]
        read_only_fields = fields


class PairQuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Question
        fields = ["id", "external_id", "text"]
        read_only_fields = fields


class PairSerializer(serializers.ModelSerializer):
    question_1 = PairQuestionSerializer(read_only=True)
    question_2 = PairQuestionSerializer(read_only=True)

    class Meta:
        model = CounterfactualPair
        fields = ["id", "dataset", "external_id", "question_1", "question_2", "difference", "metadata", "created_at"]
        read_only_fields = fields


class AnswerSourceSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnswerSource
        fields = ["id", "name", "kind", "description", "model_name", "parameters", "created_at"]
        read_only_fields = fields


class AnswerSerializer(serializers.ModelSerializer):
    dataset = serializers.IntegerField(source="question.dataset_id", read_only=True)
    question_external_id = serializers.CharField(source="question.external_id", read_only=True)
    source_name = serializers.CharField(source="source.name", read_only=True)
    author = serializers.SerializerMethodField(help_text="Physician-written answers: the author's rater pseudonym.")

    class Meta:
        model = Answer
        fields = ["id", "dataset", "question", "question_external_id", "source", "source_name", "text",
                  "model_name", "prompt", "parameters", "settings_hash", "response_metadata", "generated_at",
                  "latency_ms", "author", "provenance_note", "created_at"]  # fmt: skip
        read_only_fields = fields

    def get_author(self, answer) -> str | None:
        # A pseudonym, never a username: analysts read this.
        profile = getattr(answer.author, "rater_profile", None) if answer.author_id else None
        return profile.pseudonym if profile else None


# --- Query parameters ----------------------------------------------------------------------------


class QuestionFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only this dataset's questions.")
    search = serializers.CharField(required=False, help_text="Text contained in the question, or its exact id.")


class PairFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only this dataset's pairs.")


class AnswerFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only answers to this dataset's questions.")
    source = serializers.IntegerField(required=False, help_text="Only answers from this answer source.")


# --- Views ---------------------------------------------------------------------------------------


class DatasetViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Datasets: the study team reads them; coordinators add datasets and import question files."""

    permission_classes = [IsStudyTeam]
    serializer_class = DatasetSerializer
    lookup_value_converter = "int"
    queryset = Dataset.objects.annotate(
        question_count=Count("questions", distinct=True), pair_count=Count("pairs", distinct=True)
    ).order_by("name")  # aggregating queries drop Meta.ordering

    def get_permissions(self):
        if self.action == "create":
            return [IsCoordinator()]
        return super().get_permissions()

    @extend_schema(request=DatasetCreateSerializer, responses={201: DatasetSerializer})
    def create(self, request, *args, **kwargs):
        serializer = DatasetCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        dataset = Dataset.objects.create(**serializer.validated_data)
        output = self.get_serializer(self.get_queryset().get(pk=dataset.pk))
        return Response(output.data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=QuestionImportSerializer,
        responses={202: OpenApiResponse(ImportJobSerializer, description="Queued: follow status_url.")},
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        permission_classes=[IsCoordinator],
        parser_classes=[MultiPartParser, FormParser],
    )
    def import_questions(self, request):
        """Import questions (and counterfactual pairs) from a file, as `manage.py import_questions` does."""
        serializer = QuestionImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        job = services.start_import_job(
            kind=ImportJob.Kind.QUESTIONS,
            filename=upload.name,
            data=upload.read(),
            options=serializer.import_options(),
            user=request.user,
        )
        output = ImportJobSerializer(job, context=self.get_serializer_context())
        return Response(output.data, status=status.HTTP_202_ACCEPTED)


class ImportJobViewSet(viewsets.ReadOnlyModelViewSet):
    """Import jobs and what became of them: status, report, and the rejected lines' errors."""

    permission_classes = [IsCoordinator]
    serializer_class = ImportJobSerializer
    lookup_value_converter = "int"
    queryset = ImportJob.objects.defer("content")


@extend_schema_view(list=extend_schema(parameters=[QuestionFilters]))
class QuestionViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsStudyTeam]
    serializer_class = QuestionSerializer
    lookup_value_converter = "int"

    def get_queryset(self):
        questions = Question.objects.annotate(answer_count=Count("answers")).order_by("id")
        filters = QuestionFilters.from_request(self.request)
        if "dataset" in filters:
            questions = questions.filter(dataset_id=filters["dataset"])
        if filters.get("search"):
            questions = questions.filter(Q(text__icontains=filters["search"]) | Q(external_id=filters["search"]))
        return questions


@extend_schema_view(list=extend_schema(parameters=[PairFilters]))
class PairViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsStudyTeam]
    serializer_class = PairSerializer
    lookup_value_converter = "int"

    def get_queryset(self):
        pairs = CounterfactualPair.objects.select_related("question_1", "question_2").order_by("id")
        filters = PairFilters.from_request(self.request)
        if "dataset" in filters:
            pairs = pairs.filter(dataset_id=filters["dataset"])
        return pairs


class AnswerSourceViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsStudyTeam]
    serializer_class = AnswerSourceSerializer
    lookup_value_converter = "int"
    queryset = AnswerSource.objects.all()


@extend_schema_view(list=extend_schema(parameters=[AnswerFilters]))
class AnswerViewSet(viewsets.ReadOnlyModelViewSet):
    """Answers with their provenance: what produced each text, how and when."""

    permission_classes = [IsStudyTeam]
    serializer_class = AnswerSerializer
    lookup_value_converter = "int"

    def get_queryset(self):
        answers = Answer.objects.select_related("question", "source", "author__rater_profile").order_by("id")
        filters = AnswerFilters.from_request(self.request)
        if "dataset" in filters:
            answers = answers.filter(question__dataset_id=filters["dataset"])
        if "source" in filters:
            answers = answers.filter(source_id=filters["source"])
        return answers
