"""JSON API for studies, their items, assignments, ratings and the raters taking part.

Raters see and rate only their own assignments; the study team (coordinators and analysts) reads
everything, with raters known by pseudonym only; coordinators alone list raters with their usernames.
"""

from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import generics, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.response import Response

from config.rest import QueryFilters, StorableJSONParser
from raters.api_permissions import IsCoordinator, IsRater, IsStudyTeam
from raters.models import RaterProfile
from raters.roles import is_analyst, is_coordinator
from raters.services import onboarding_step

from . import services
from .access import own_assignment_or_404
from .exports import NO_RATINGS_TO_EXPORT, ExportError, csv_download_response
from .judge_progress import held_judges_with_counts
from .models import Assignment, Rating, RubricKind, RubricVersion, Study, StudyItem, StudyPool
from .release import study_table
from .rubric_schema import json_schema
from .rubrics import assignment_context, check_answers


class StudyLockedError(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This study is locked: ratings can no longer change."
    default_code = "study_locked"


class ExportConflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The ratings cannot be written in the release format as they stand."
    default_code = "export_conflict"


class StaleTransitionError(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This item changed meanwhile: the rating was not stored."
    default_code = "stale"


# --- Serializers ---------------------------------------------------------------------------------


class RubricVersionSerializer(serializers.ModelSerializer):
    rubric = serializers.CharField(source="rubric.name", read_only=True)
    kind = serializers.ChoiceField(source="rubric.kind", choices=RubricKind.choices, read_only=True,
                                   help_text="A label of the rubric (nothing depends on it); see display.")  # fmt: skip
    display = serializers.CharField(read_only=True, help_text="What an item shows: one_answer, two_answers, "
                                    "two_questions.")  # fmt: skip

    class Meta:
        model = RubricVersion
        fields = ["id", "rubric", "kind", "display", "number"]
        read_only_fields = fields


class RubricDefinitionSerializer(RubricVersionSerializer):
    class Meta(RubricVersionSerializer.Meta):
        fields = [*RubricVersionSerializer.Meta.fields, "definition"]
        read_only_fields = fields


class StudyPoolSerializer(serializers.ModelSerializer):
    pool = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True)

    class Meta:
        model = StudyPool
        fields = ["pool", "pool_name", "replication", "items_per_rater"]
        read_only_fields = fields


STUDY_KIND = {"source": "rubric_version.rubric.kind", "choices": RubricKind.choices, "read_only": True,
              "allow_null": True, "help_text": "The rubric's label (empty without a rubric); see display."}  # fmt: skip
STUDY_DISPLAY_HELP = "What each item shows: one_answer, two_answers, two_questions (empty without a rubric)."


class StudyJudgeSerializer(serializers.Serializer):
    """A judge the study holds, with its replies to the study's items so far."""

    name = serializers.CharField(source="judge.name", read_only=True)
    source = serializers.CharField(source="judge.source.name", read_only=True, help_text="The model source asked.")
    repeats = serializers.IntegerField(source="judge.repeats", read_only=True, help_text="Replies per item.")
    replied = serializers.IntegerField(
        read_only=True, help_text="Replies to the study's items, valid or not (an invalid reply's retries included)."
    )
    rated = serializers.IntegerField(read_only=True, help_text="Questions with a valid reply, stored as its rating.")
    failed = serializers.IntegerField(
        read_only=True, help_text="Questions whose replies were all invalid, no attempts left (asked again on the "
        "next submit).",
    )  # fmt: skip
    calls_pending = serializers.IntegerField(read_only=True, help_text="Calls to the model queued, not yet made.")
    calls_running = serializers.IntegerField(read_only=True, help_text="Calls to the model in flight.")
    calls_failed = serializers.IntegerField(
        read_only=True, help_text="Calls that failed for good without a reply (asked again on the next submit)."
    )


class StudySerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(**STUDY_KIND)
    display = serializers.CharField(read_only=True, help_text=STUDY_DISPLAY_HELP)
    scorers_only = serializers.BooleanField(
        source="is_scorers_only", read_only=True, help_text="No rubric: nobody rates its answers (no items or ratings)."
    )
    rubric_version = RubricVersionSerializer(read_only=True, allow_null=True)
    pools = StudyPoolSerializer(source="study_pools", many=True, read_only=True)
    judges = StudyJudgeSerializer(source="study_judges", many=True, read_only=True)
    item_count = serializers.IntegerField(read_only=True)
    attention_check_count = serializers.IntegerField(read_only=True)
    assignment_count = serializers.IntegerField(read_only=True, help_text="Assignments not withdrawn.")
    submitted_count = serializers.IntegerField(read_only=True, help_text="Assignments rated.")

    class Meta:
        model = Study
        fields = ["id", "name", "description", "kind", "display", "scorers_only", "rubric_version", "instructions",
                  "pools", "judges", "item_count", "attention_check_count", "assignment_count", "submitted_count",
                  "locked_at", "claim_timeout_minutes", "unstarted_claim_timeout_minutes", "created_at"]  # fmt: skip
        read_only_fields = fields


class ItemAnswerSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    question = serializers.IntegerField(source="question_id", read_only=True)
    source = serializers.IntegerField(source="source_id", read_only=True)
    source_name = serializers.CharField(source="source.name", read_only=True)


class StudyItemSerializer(serializers.ModelSerializer):
    """An item as stored (answer 1 / answer 2 before any rater's display order), with its sources."""

    answer = ItemAnswerSerializer(read_only=True, allow_null=True)
    answer_1 = ItemAnswerSerializer(read_only=True, allow_null=True)
    answer_2 = ItemAnswerSerializer(read_only=True, allow_null=True)
    assignment_count = serializers.IntegerField(read_only=True, help_text="Assignments not withdrawn.")
    submitted_count = serializers.IntegerField(read_only=True, help_text="Assignments rated.")

    class Meta:
        model = StudyItem
        fields = ["id", "study", "question", "pair", "answer", "answer_1", "answer_2", "is_attention_check",
                  "expected_values", "assignment_count", "submitted_count", "created_at"]  # fmt: skip
        read_only_fields = fields


class ItemContentSerializer(serializers.Serializer):
    """What the rater reads. Two answers are in the rater's display order; no answer's source is named."""

    question = serializers.CharField(allow_null=True, help_text="Items showing one answer or two answers.")
    answer = serializers.CharField(allow_null=True, help_text="Items showing one answer.")
    question_1 = serializers.CharField(allow_null=True, help_text="Items showing two questions.")
    question_2 = serializers.CharField(allow_null=True, help_text="Items showing two questions.")
    answer_1 = serializers.CharField(allow_null=True, help_text="Items showing two answers or two questions.")
    answer_2 = serializers.CharField(allow_null=True, help_text="Items showing two answers or two questions.")
    groups = serializers.ListField(
        child=serializers.CharField(), help_text="The item's factor groups (options of questions asked over them)."
    )


def item_content(assignment: Assignment) -> dict:
    item = assignment.item
    content = dict.fromkeys(ItemContentSerializer._declared_fields)
    display = item.study.display
    if display == "one_answer":
        content.update(question=item.answer.question.text, answer=item.answer.text)
    elif display == "two_answers":
        first, second = assignment.displayed_answers()
        content.update(question=item.question.text, answer_1=first.text, answer_2=second.text)
    elif display == "two_questions":
        content.update(question_1=item.pair.question_1.text, question_2=item.pair.question_2.text,
                       answer_1=item.answer_1.text, answer_2=item.answer_2.text)  # fmt: skip
    content["groups"] = [key for key, _ in assignment_context(assignment).groups]
    return content


class AssignmentStudySerializer(serializers.ModelSerializer):
    kind = serializers.ChoiceField(**STUDY_KIND)
    display = serializers.CharField(read_only=True, help_text=STUDY_DISPLAY_HELP)

    class Meta:
        model = Study
        fields = ["id", "name", "kind", "display", "instructions", "locked_at"]
        read_only_fields = fields


class AssignmentSerializer(serializers.ModelSerializer):
    """An assignment as its rater sees it: pairwise answers in their display order, which is never named
    (knowing it would tell which source wrote 'Answer 1')."""

    study = AssignmentStudySerializer(source="item.study", read_only=True)
    rater = serializers.CharField(source="rater.pseudonym", read_only=True)
    pool = serializers.CharField(source="rater.pool.slug", read_only=True)
    rubric_version = serializers.IntegerField(source="item.study.rubric_version_id", read_only=True)
    content = serializers.SerializerMethodField()
    current_values = serializers.SerializerMethodField(help_text="The values of the current rating, if rated.")

    class Meta:
        model = Assignment
        fields = ["id", "study", "item", "rater", "pool", "status", "position", "rubric_version",
                  "content", "current_values", "active_seconds", "assigned_at", "first_viewed_at",
                  "submitted_at"]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(ItemContentSerializer)
    def get_content(self, assignment) -> dict:
        return ItemContentSerializer(item_content(assignment)).data

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_current_values(self, assignment) -> dict | None:
        return assignment.current_ratings[0].values if assignment.current_ratings else None


class AssignmentDetailSerializer(AssignmentSerializer):
    rubric = RubricDefinitionSerializer(source="item.study.rubric_version", read_only=True)
    answers_schema = serializers.SerializerMethodField(
        help_text="JSON Schema of the rating's values for this item (the rubric's questions, the item's groups)."
    )

    class Meta(AssignmentSerializer.Meta):
        fields = [*AssignmentSerializer.Meta.fields, "rubric", "answers_schema"]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField())
    def get_answers_schema(self, assignment) -> dict:
        return json_schema(assignment.item.study.rubric_version.definition, assignment_context(assignment))


TEAM_ORDER_HELP = "Study team only: true when the item's answer 2 is shown as 'Answer 1'."


class TeamAssignmentSerializer(AssignmentSerializer):
    swap_answers = serializers.BooleanField(read_only=True, help_text=TEAM_ORDER_HELP)

    class Meta(AssignmentSerializer.Meta):
        fields = [*AssignmentSerializer.Meta.fields, "swap_answers"]
        read_only_fields = fields


class TeamAssignmentDetailSerializer(AssignmentDetailSerializer):
    swap_answers = serializers.BooleanField(read_only=True, help_text=TEAM_ORDER_HELP)

    class Meta(AssignmentDetailSerializer.Meta):
        fields = [*AssignmentDetailSerializer.Meta.fields, "swap_answers"]
        read_only_fields = fields


class RatingInputSerializer(serializers.Serializer):
    values = serializers.DictField(
        help_text="The answers, keyed by the rubric's question keys: a choice as its option key, a multiple "
        "choice as a list of keys, a scale as a number, text as a string, quotes as a list of {quote, score}. "
        "Validated by the same rules as the rating page; the assignment's `answers_schema` is their JSON Schema."
    )
    active_seconds = serializers.FloatField(
        min_value=0, default=0, help_text="Time the item was on screen and in use, as measured by the client."
    )

    def validate_values(self, values: dict) -> dict:
        # The rating page's own form and validator (rubric_schema.validate), for this assignment's item.
        cleaned, errors = check_answers(self.context["rubric_version"], values, self.context["item"])
        if errors:
            raise serializers.ValidationError(errors)
        return cleaned

    def validate_active_seconds(self, seconds: float) -> float:
        # Unverifiable from here, so held to the ceiling the rating page applies to one page view.
        return min(seconds, services.MAX_VIEW_SECONDS)


class SubmittedRatingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Rating
        fields = ["id", "assignment", "rubric_version", "revision", "is_current", "values", "active_seconds",
                  "wall_seconds", "submitted_at"]  # fmt: skip
        read_only_fields = fields


class RatingSerializer(serializers.ModelSerializer):
    study = serializers.IntegerField(source="assignment.item.study_id", read_only=True)
    item = serializers.IntegerField(source="assignment.item_id", read_only=True)
    rater = serializers.CharField(source="assignment.rater.pseudonym", read_only=True, help_text="Pseudonym.")
    pool = serializers.CharField(source="assignment.rater.pool.slug", read_only=True)
    rubric_version = RubricVersionSerializer(read_only=True)
    swap_answers = serializers.BooleanField(
        read_only=True, help_text="Display order: true when the item's answer 2 was shown as 'Answer 1'."
    )

    class Meta:
        model = Rating
        fields = ["id", "study", "item", "assignment", "rater", "pool", "rubric_version", "revision", "is_current",
                  "values", "swap_answers", "active_seconds", "wall_seconds", "attention_check_passed",
                  "submitted_at"]  # fmt: skip
        read_only_fields = fields


class RaterSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    pool = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = RaterProfile
        fields = ["id", "pseudonym", "username", "pool", "panel_participant_id", "consented_at", "onboarded_at",
                  "completed_at", "dropped_out_at", "created_at"]  # fmt: skip
        read_only_fields = fields


# --- Query parameters ----------------------------------------------------------------------------


class AssignmentFilters(QueryFilters):
    study = serializers.IntegerField(required=False, help_text="Only this study's assignments.")
    rater = serializers.CharField(required=False, help_text="Study team: only this rater's (pseudonym).")
    status = serializers.ChoiceField(choices=Assignment.Status.choices, required=False)


class RatingFilters(QueryFilters):
    study = serializers.IntegerField(required=False, help_text="Only this study's ratings.")
    current = serializers.BooleanField(
        required=False, default=None, allow_null=True, help_text="true: only current ratings, not revised ones."
    )


class RaterFilters(QueryFilters):
    pool = serializers.SlugField(required=False, help_text="Only this pool's raters (its slug).")


# --- Views ---------------------------------------------------------------------------------------


def counts_of_assignments(prefix: str = "") -> dict:
    active = ~Q(**{f"{prefix}assignments__status": Assignment.Status.WITHDRAWN})
    submitted = Q(**{f"{prefix}assignments__status": Assignment.Status.SUBMITTED})
    return {
        "assignment_count": Count(f"{prefix}assignments", filter=active, distinct=True),
        "submitted_count": Count(f"{prefix}assignments", filter=submitted, distinct=True),
    }


class StudyViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsStudyTeam]
    serializer_class = StudySerializer
    lookup_value_converter = "int"
    queryset = (
        Study.objects.select_related("rubric_version__rubric")
        .prefetch_related(
            Prefetch("study_pools", queryset=StudyPool.objects.select_related("pool")),
            Prefetch("study_judges", queryset=held_judges_with_counts()),
        )
        .annotate(
            item_count=Count("items", distinct=True),
            attention_check_count=Count("items", filter=Q(items__is_attention_check=True), distinct=True),
            **counts_of_assignments("items__"),
        )
        .order_by("-created_at", "id")  # aggregating queries drop Meta.ordering
    )

    @extend_schema(
        summary="The study's ratings in the EquityMedQA release format (CSV, streamed)",
        responses={
            (200, "text/csv"): OpenApiTypes.BINARY,
            409: OpenApiResponse(description="Not exportable as it stands, e.g. two sources share a column name."),
        },
    )
    @action(detail=True, methods=["get"], url_path="export")
    def export(self, request, pk=None):
        study = get_object_or_404(Study.objects.select_related("rubric_version__rubric"), pk=pk)
        if study.is_scorers_only:
            raise ExportConflict(NO_RATINGS_TO_EXPORT)
        try:
            return csv_download_response(study_table(study), study)
        except ExportError as error:
            raise ExportConflict(str(error)) from None


class StudyItemList(generics.ListAPIView):
    """A study's items with the answers' sources, and how many of each item's assignments are rated."""

    permission_classes = [IsStudyTeam]
    serializer_class = StudyItemSerializer

    def get_queryset(self):
        study = get_object_or_404(Study, pk=self.kwargs["study_id"])
        return (
            study.items.select_related("answer__source", "answer_1__source", "answer_2__source")
            .annotate(**counts_of_assignments())
            .order_by("id")
        )


ASSIGNMENT_CONTENT = [
    "rater__pool",
    "item__study__rubric_version__rubric",
    "item__answer__question",
    "item__question",
    "item__pair__question_1",
    "item__pair__question_2",
    "item__answer_1",
    "item__answer_2",
]


@extend_schema_view(list=extend_schema(parameters=[AssignmentFilters]))
class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Assignments with the content to rate: a rater's own; every rater's for the study team.

    Opening one of your own (GET /api/assignments/{id}/) marks it viewed, as the rating page does:
    the rating's wall time counts from then. The study team also gets each assignment's pairwise display
    order (`swap_answers`); raters never do.
    """

    permission_classes = [IsRater | IsStudyTeam]
    lookup_value_converter = "int"

    def get_serializer_class(self):
        user = self.request.user if not getattr(self, "swagger_fake_view", False) else None
        team = user is not None and (is_coordinator(user) or is_analyst(user))
        if self.action == "retrieve":
            return TeamAssignmentDetailSerializer if team else AssignmentDetailSerializer
        return TeamAssignmentSerializer if team else AssignmentSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Assignment.objects.none()
        current = Prefetch("ratings", queryset=Rating.objects.filter(is_current=True), to_attr="current_ratings")
        assignments = Assignment.objects.select_related(*ASSIGNMENT_CONTENT).prefetch_related(current)
        user = self.request.user
        if not (is_coordinator(user) or is_analyst(user)):
            assignments = assignments.for_rater(user.rater_profile).order_by("item__study_id", "position", "id")
        filters = AssignmentFilters.from_request(self.request)
        if "study" in filters:
            assignments = assignments.filter(item__study_id=filters["study"])
        if "rater" in filters:
            assignments = assignments.filter(rater__pseudonym=filters["rater"])
        if "status" in filters:
            assignments = assignments.filter(status=filters["status"])
        return assignments

    def retrieve(self, request, *args, **kwargs):
        assignment = self.get_object()
        if assignment.rater.user_id == request.user.id:
            assignment.mark_viewed()
        return Response(self.get_serializer(assignment).data)

    @extend_schema(
        request=RatingInputSerializer,
        responses={
            201: SubmittedRatingSerializer,
            400: OpenApiResponse(description="Invalid values: the errors, per field, under 'values'."),
            404: OpenApiResponse(description="Not one of your assignments."),
            409: OpenApiResponse(
                description="Not stored: the study is locked, or the item was taken back from you meanwhile "
                "(the reason is in 'detail')."
            ),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="rating",
        permission_classes=[IsRater],
        parser_classes=[StorableJSONParser],
    )
    def rating(self, request, pk=None):
        """Rate one of your assignments; rating it again adds a revision and keeps the earlier rating."""
        assignment = own_assignment_or_404(request.user, pk)
        study = assignment.item.study
        if onboarding_step(assignment.rater):
            raise PermissionDenied("Finish onboarding before rating.")
        if study.is_locked:
            raise StudyLockedError
        context = {"rubric_version": study.rubric_version, "item": assignment_context(assignment)}
        rating_input = RatingInputSerializer(data=request.data, context=context)
        rating_input.is_valid(raise_exception=True)
        try:
            rating = services.submit_rating(assignment=assignment, **rating_input.validated_data)
        except services.StudyLocked:
            raise StudyLockedError from None
        except services.StaleTransition as stale:
            raise StaleTransitionError(str(stale)) from None
        return Response(SubmittedRatingSerializer(rating).data, status=status.HTTP_201_CREATED)


@extend_schema_view(list=extend_schema(parameters=[RatingFilters]))
class RatingViewSet(viewsets.ReadOnlyModelViewSet):
    """Every rating and revision, with rubric version, timings and display order; raters by pseudonym."""

    permission_classes = [IsStudyTeam]
    serializer_class = RatingSerializer
    lookup_value_converter = "int"

    def get_queryset(self):
        ratings = Rating.objects.select_related(
            "assignment__item", "assignment__rater__pool", "rubric_version__rubric"
        ).order_by("id")
        filters = RatingFilters.from_request(self.request)
        if "study" in filters:
            ratings = ratings.filter(assignment__item__study_id=filters["study"])
        if filters.get("current") is not None:
            ratings = ratings.filter(is_current=filters["current"])
        return ratings


@extend_schema_view(list=extend_schema(parameters=[RaterFilters]))
class RaterViewSet(viewsets.ReadOnlyModelViewSet):
    """Raters with their usernames: coordinators only (the study team's other outputs use pseudonyms)."""

    permission_classes = [IsCoordinator]
    serializer_class = RaterSerializer
    lookup_value_converter = "int"

    def get_queryset(self):
        raters = RaterProfile.objects.select_related("user", "pool").order_by("id")
        filters = RaterFilters.from_request(self.request)
        if "pool" in filters:
            raters = raters.filter(pool__slug=filters["pool"])
        return raters
