"""Access checks for views: anonymous users go to the login page, others get 403."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from .roles import is_analyst, is_coordinator


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
