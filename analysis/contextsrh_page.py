"""The ContextSRH page's data for one study (issue 21): `services.contextsrh_report`, computed from the study's
results table on request and kept in Django's cache, as the MEDIC page's (`analysis/medic_page.py`).

The key holds the count and latest id of the study's scores and of its ratings (both append-only: a new one is a
new id) and a digest of its file's plans (the `contextsrh` plan's scorer and k): new scores, new ratings or other
parameters make a new key."""

import hashlib
import json
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max

from scoring.models import Score
from studies.models import Rating, Study

from . import services
from .contextsrh import ContextSRHReport

CACHE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ContextSRHPage:
    report: ContextSRHReport | None  # None: no context answer of the study has a similarity yet
    n_ratings: int


def _scores(study: Study):
    return Score.objects.filter(answer__study_links__study=study)


def cache_key(study: Study) -> str:
    scored = _scores(study).aggregate(n=Count("id"), last=Max("id"))
    rated = Rating.objects.filter(assignment__item__study=study).aggregate(n=Count("id"), last=Max("id"))
    definition = study.definition if isinstance(study.definition, dict) else {}
    plans = json.dumps(definition.get("plans"), sort_keys=True, default=str)
    digest = hashlib.sha256(plans.encode()).hexdigest()[:16]
    return f"contextsrh-page:v1:{study.pk}:{scored['n']}:{scored['last']}:{rated['n']}:{rated['last']}:{digest}"


def compute_contextsrh_page(study: Study) -> ContextSRHPage:
    n_ratings = Rating.objects.filter(assignment__item__study=study, is_current=True).count()
    return ContextSRHPage(services.contextsrh_report(study), n_ratings)


def contextsrh_page(study: Study) -> ContextSRHPage:
    """The study's ContextSRH page data, from the cache when its scores, ratings and plans have not changed."""
    return cache.get_or_set(cache_key(study), lambda: compute_contextsrh_page(study), CACHE_SECONDS)
