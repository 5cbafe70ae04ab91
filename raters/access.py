"""Access checks for views: anonymous users go to the login page, others get 403."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from .models import RaterProfile
from .roles import is_analyst, is_coordinator


def rater_profile_or_403(user) -> RaterProfile:
    """The user's rater profile (with its pool), for pages only raters use."""
    profile = RaterProfile.objects.select_related("pool").filter(user=user).first()
    if profile is None:
        raise PermissionDenied("This page is for raters.")
    return profile


def coordinator_required(view):
    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not is_coordinator(request.user):
            raise PermissionDenied("Only study coordinators can do this.")
        return view(request, *args, **kwargs)

    return wrapper


def study_team_required(view):
    """Coordinators and analysts: pages that show whole datasets, which raters should not browse."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not (is_coordinator(request.user) or is_analyst(request.user)):
            raise PermissionDenied("Only the study team (coordinators and analysts) can open this page.")
        return view(request, *args, **kwargs)

    return wrapper
