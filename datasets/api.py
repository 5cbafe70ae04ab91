"""JSON API for datasets, questions, pairs, answer sources, answers, import jobs and generation jobs.

The study team (coordinators and analysts) reads everything; coordinators add datasets and answer sources,
import files and start, retry, cancel or resume answer generation.
"""

import copy

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings

from config.rest import JSONObjectField, QueryFilters
from raters.api_permissions import IsCoordinator, IsStudyTeam

from . import answer_links, generation_pages, services
from .generation import jobs
from .importers.questions import FORMATS
from .models import Answer, AnswerSource, CounterfactualPair, Dataset, GenerationJob, ImportJob, Question

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


ENDPOINT_FIELDS = [
    "base_url", "api_key_env", "temperature", "max_tokens", "system_prompt", "prompt_template",
    "request_timeout_seconds", "concurrency", "rate_limit_per_minute", "logprobs", "top_logprobs",
    "structured_output",
]  # fmt: skip


class AnswerSourceSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnswerSource
        fields = ["id", "name", "kind", "description", "model_name", "parameters", *ENDPOINT_FIELDS, "created_at"]
        read_only_fields = fields


class AnswerSourceInputSerializer(serializers.ModelSerializer):
    """A source as a coordinator writes it: checked as the admin checks it (the model's full_clean).

    `api_key_env` names the environment variable holding the key; the key itself is never stored.
    """

    parameters = JSONObjectField(required=False, help_text=AnswerSource._meta.get_field("parameters").help_text)

    class Meta:
        model = AnswerSource
        fields = ["name", "kind", "description", "model_name", "parameters", *ENDPOINT_FIELDS]
        extra_kwargs = {
            # A source with no lane would never be asked; a timeout of 0 s would fail every request.
            "concurrency": {"min_value": 1},
            "request_timeout_seconds": {"min_value": 1},
            "max_tokens": {"min_value": 1},
            "rate_limit_per_minute": {"min_value": 1},
            "top_logprobs": {"min_value": 1},
        }

    def validate(self, attrs):
        candidate = copy.copy(self.instance) if self.instance is not None else AnswerSource()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        try:
            candidate.full_clean()
        except DjangoValidationError as error:
            errors = error.message_dict
            if "__all__" in errors:
                errors[api_settings.NON_FIELD_ERRORS_KEY] = errors.pop("__all__")
            raise serializers.ValidationError(errors) from None
        return attrs


class AnswerSerializer(serializers.ModelSerializer):
    dataset = serializers.IntegerField(source="question.dataset_id", read_only=True)
    question_external_id = serializers.CharField(source="question.external_id", read_only=True)
    source_name = serializers.CharField(source="source.name", read_only=True)
    author = serializers.SerializerMethodField(help_text="Physician-written answers: the author's rater pseudonym.")

    class Meta:
        model = Answer
        fields = ["id", "dataset", "question", "question_external_id", "source", "source_name", "text",
                  "model_name", "prompt", "parameters", "settings_hash", "response_metadata", "generated_at",
                  "latency_ms", "refusal", "author", "provenance_note", "created_at"]  # fmt: skip
        read_only_fields = fields

    def get_author(self, answer) -> str | None:
        # A pseudonym, never a username: analysts read this.
        profile = getattr(answer.author, "rater_profile", None) if answer.author_id else None
        return profile.pseudonym if profile else None


class GenerationProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Questions the job asks (those lacking an answer when it started).")
    done = serializers.IntegerField(help_text="Answered (refusals included).")
    failed = serializers.IntegerField(help_text="Gave up on: the error is kept; retry-failed asks them again.")
    pending = serializers.IntegerField(help_text="Waiting, or backing off before another attempt.")
    running = serializers.IntegerField(help_text="Requests in flight.")
    refusals = serializers.IntegerField(help_text="Answers flagged as refused or empty (kept).")
    already_present = serializers.IntegerField(help_text="Questions that had an answer with these settings.")
    active_lanes = serializers.IntegerField(help_text="Lanes of the source with a live worker.")
    percent = serializers.IntegerField()
    last_heartbeat = serializers.DateTimeField(allow_null=True)


class GenerationFailureSerializer(serializers.Serializer):
    question = serializers.IntegerField(source="question_id")
    question_external_id = serializers.CharField(
        source="question.external_id", allow_null=True, help_text="Empty when the question was deleted since."
    )
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    history = serializers.JSONField(help_text="[{at, attempt, error}] for every failed attempt.")


class GenerationJobSerializer(serializers.ModelSerializer):
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    source_name = serializers.CharField(source="source.name", read_only=True)
    progress = serializers.SerializerMethodField()
    url = serializers.HyperlinkedIdentityField(view_name="api:generation-job-detail")

    class Meta:
        model = GenerationJob
        fields = ["id", "url", "dataset", "dataset_name", "source", "source_name", "recipe", "levels", "status",
                  "parameters", "already_present", "held_out", "for_study", "progress", "created_at", "started_at",
                  "finished_at", "cancelled_at"]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(GenerationProgressSerializer)
    def get_progress(self, job) -> dict:
        return jobs.job_progress(job).as_dict()


class GenerationJobDetailSerializer(GenerationJobSerializer):
    failures = serializers.SerializerMethodField(
        help_text=f"The failed questions (the first {generation_pages.FAILURES_SHOWN}; progress.failed counts all)."
    )

    class Meta(GenerationJobSerializer.Meta):
        fields = [*GenerationJobSerializer.Meta.fields, "failures"]
        read_only_fields = fields

    @extend_schema_field(GenerationFailureSerializer(many=True))
    def get_failures(self, job) -> list:
        failures = jobs.failures(job, generation_pages.FAILURES_SHOWN)
        return GenerationFailureSerializer(failures, many=True).data


class StudyInputMixin(serializers.Serializer):
    """A job's study (by id): each answer the job makes or finds is linked to it."""

    study = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="The id of the study the answers are for: each answer made or found is linked to it.",
    )  # fmt: skip

    def validate_study(self, study_id):
        try:
            answer_links.check_study(study_id)
        except answer_links.StudyRefused as refused:
            raise serializers.ValidationError(str(refused)) from None
        return study_id


class GenerationJobCreateSerializer(StudyInputMixin):
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    source = serializers.PrimaryKeyRelatedField(
        queryset=AnswerSource.objects.all(), help_text="A model source with an endpoint (base_url)."
    )


class GenerationRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    job = serializers.IntegerField(allow_null=True, help_text="The job already generating these answers, if any.")


class RequeuedSerializer(serializers.Serializer):
    requeued = serializers.IntegerField(help_text="Failed questions put back in the queue.")


# --- Query parameters ----------------------------------------------------------------------------


class QuestionFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only this dataset's questions.")
    search = serializers.CharField(required=False, help_text="Text contained in the question, or its exact id.")


class PairFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only this dataset's pairs.")


class GenerationJobFilters(QueryFilters):
    dataset = serializers.IntegerField(required=False, help_text="Only this dataset's jobs.")
    study = serializers.IntegerField(required=False, help_text="Only the jobs run for this study.")
    source = serializers.IntegerField(required=False, help_text="Only this answer source's jobs.")
    status = serializers.ChoiceField(choices=GenerationJob.Status.choices, required=False)


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
            chunks=upload.chunks(),
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
    queryset = ImportJob.objects.all()


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


class AnswerSourceViewSet(mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Answer sources with their endpoint settings: the study team reads them; coordinators add and change them.

    The API key is never stored or shown: `api_key_env` names the environment variable that holds it.
    """

    permission_classes = [IsStudyTeam]
    serializer_class = AnswerSourceSerializer
    lookup_value_converter = "int"
    queryset = AnswerSource.objects.all()

    def get_permissions(self):
        if self.action in {"create", "update", "partial_update"}:
            return [IsCoordinator()]
        return super().get_permissions()

    @extend_schema(request=AnswerSourceInputSerializer, responses={201: AnswerSourceSerializer})
    def create(self, request, *args, **kwargs):
        serializer = AnswerSourceInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        source = serializer.save()
        return Response(self.get_serializer(source).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=AnswerSourceInputSerializer, responses={200: AnswerSourceSerializer})
    def update(self, request, *args, **kwargs):
        serializer = AnswerSourceInputSerializer(
            self.get_object(), data=request.data, partial=kwargs.get("partial", False)
        )
        serializer.is_valid(raise_exception=True)
        source = serializer.save()
        return Response(self.get_serializer(source).data)

    @extend_schema(request=AnswerSourceInputSerializer, responses={200: AnswerSourceSerializer})
    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)


@extend_schema_view(list=extend_schema(parameters=[GenerationJobFilters]))
class GenerationJobViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Answer-generation jobs: one model source over one dataset, run by Celery workers.

    The study team follows them; coordinators start, retry, cancel and resume them.
    """

    permission_classes = [IsStudyTeam]
    lookup_value_converter = "int"

    def get_queryset(self):
        generation_jobs = GenerationJob.objects.select_related("dataset", "source").order_by("-created_at", "-id")
        filters = GenerationJobFilters.from_request(self.request) if self.action == "list" else {}
        if "dataset" in filters:
            generation_jobs = generation_jobs.filter(dataset_id=filters["dataset"])
        if "source" in filters:
            generation_jobs = generation_jobs.filter(source_id=filters["source"])
        if "study" in filters:
            generation_jobs = generation_jobs.filter(for_study=filters["study"])
        if "status" in filters:
            generation_jobs = generation_jobs.filter(status=filters["status"])
        return generation_jobs

    def get_serializer_class(self):
        return GenerationJobSerializer if self.action == "list" else GenerationJobDetailSerializer

    def get_permissions(self):
        if self.action == "create":
            return [IsCoordinator()]
        return super().get_permissions()

    def _job_response(self, job, status_code=status.HTTP_200_OK):
        job = self.get_queryset().get(pk=job.pk)
        return Response(GenerationJobDetailSerializer(job, context=self.get_serializer_context()).data, status_code)

    @staticmethod
    def _refused(message: str, job=None):
        return Response({"detail": message, "job": job.pk if job else None}, status=status.HTTP_409_CONFLICT)

    @extend_schema(
        request=GenerationJobCreateSerializer,
        responses={
            201: GenerationJobDetailSerializer,
            409: OpenApiResponse(
                GenerationRefusedSerializer,
                description="Refused: the source cannot generate, or a job is already generating these answers.",
            ),
        },
    )
    def create(self, request, *args, **kwargs):
        """Start a job: every question of the dataset lacking an answer with the source's current settings."""
        serializer = GenerationJobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        study_id = data.pop("study")
        try:
            job = jobs.start_job(**data, study_id=study_id, user=request.user)
        except jobs.GenerationRefused as refused:
            return self._refused(str(refused), refused.job)
        return self._job_response(job, status.HTTP_201_CREATED)

    @extend_schema(
        request=None,
        responses={
            200: RequeuedSerializer,
            409: OpenApiResponse(GenerationRefusedSerializer, description="The job was cancelled."),
        },
    )
    @action(detail=True, methods=["post"], url_path="retry-failed", permission_classes=[IsCoordinator])
    def retry_failed(self, request, pk=None):
        """Put the job's failed questions back in the queue with a fresh attempt budget."""
        job = self.get_object()
        try:
            count = jobs.retry_failed(job)
        except jobs.GenerationRefused as refused:
            return self._refused(str(refused), job)
        return Response({"requeued": count})

    @extend_schema(
        request=None,
        responses={
            200: GenerationJobDetailSerializer,
            409: OpenApiResponse(GenerationRefusedSerializer, description="The job had already finished."),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsCoordinator])
    def cancel(self, request, pk=None):
        """Stop asking the job's pending questions; answers already received (or in flight) are kept."""
        job = self.get_object()
        if not jobs.cancel_job(job):
            return self._refused(f"Job {job.pk} had already finished.", job)
        return self._job_response(job)

    @extend_schema(
        request=None,
        responses={
            200: GenerationJobDetailSerializer,
            409: OpenApiResponse(GenerationRefusedSerializer, description="The job has finished."),
        },
    )
    @action(detail=True, methods=["post"], permission_classes=[IsCoordinator])
    def resume(self, request, pk=None):
        """Send the job's lanes to the workers again (after a broker restart lost them, say)."""
        job = self.get_object()
        if job.is_finished:
            return self._refused(f"Job {job.pk} has finished: there is nothing to resume.", job)
        jobs.resume_job(job)
        return self._job_response(job)


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
