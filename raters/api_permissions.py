"""Role permissions for the JSON API, from the same roles as the pages (raters.roles).

Anonymous requests fail these checks too; DRF then answers 401 (not 403), as they are not authenticated.
"""

from rest_framework.permissions import BasePermission

from .roles import is_analyst, is_coordinator


class IsCoordinator(BasePermission):
    message = "Only study coordinators can do this."

    def has_permission(self, request, view) -> bool:
        return is_coordinator(request.user)


class IsStudyTeam(BasePermission):
    """Coordinators and analysts: whole datasets and every rater's work, which raters must not browse."""

    message = "Only the study team (coordinators and analysts) can see this."

    def has_permission(self, request, view) -> bool:
        return is_coordinator(request.user) or is_analyst(request.user)


class IsRater(BasePermission):
    message = "Only raters can do this."

    def has_permission(self, request, view) -> bool:
        return request.user.is_authenticated and hasattr(request.user, "rater_profile")
