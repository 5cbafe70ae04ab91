"""Roles and built-in rater pools.

Coordinators and analysts are Django groups. Coordinators get model permissions on
the project's apps so they can work in the admin; analysts get read access.
"""

from django.contrib.auth.models import Group, Permission

COORDINATOR = "coordinator"
ANALYST = "analyst"

PROJECT_APPS = ["datasets", "raters", "studies", "analysis", "engine"]


def is_coordinator(user) -> bool:
    return user.is_authenticated and (user.is_superuser or user.groups.filter(name=COORDINATOR).exists())


def is_analyst(user) -> bool:
    return user.is_authenticated and (user.is_superuser or user.groups.filter(name=ANALYST).exists())


def sync_role_groups(**_kwargs) -> None:
    """Create the role groups and give them their permissions; safe to run repeatedly."""
    coordinator, _ = Group.objects.get_or_create(name=COORDINATOR)
    analyst, _ = Group.objects.get_or_create(name=ANALYST)
    project_permissions = Permission.objects.filter(content_type__app_label__in=PROJECT_APPS)
    coordinator.permissions.set(project_permissions)
    analyst.permissions.set(project_permissions.filter(codename__startswith="view_"))
