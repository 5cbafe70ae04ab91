"""Which assignments a user may see: raters only their own; anything else is 404."""

from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import Assignment


def rater_profile_or_404(user):
    profile = getattr(user, "rater_profile", None) if user.is_authenticated else None
    if profile is None:
        raise Http404("Only raters have a queue.")
    return profile


def own_assignment_or_404(user, pk: int) -> Assignment:
    profile = rater_profile_or_404(user)
    queryset = Assignment.objects.active().select_related(
        "item__study__rubric_version__rubric",
        "item__answer__question",
        "item__question",
        "item__pair__question_1",
        "item__pair__question_2",
        "item__answer_1__question",
        "item__answer_2__question",
    )
    return get_object_or_404(queryset, pk=pk, rater=profile)
