"""The MEDIC page's data for one study (issue 20): `services.medic_report`, computed from the study's results
table on request and kept in Django's cache, as the judge page's (`analysis/judge_page.py`).

The key holds the count and latest id of the study's judge ratings (append-only: a new rating is a new id) and a
digest of its file's plans (the `medic` plan's `factors`): new ratings or other factors make a new key."""

import hashlib
import json
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max

from studies.models import JudgeRating, Study

from . import services
from .medic import MedicReport

CACHE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class MedicPage:
    report: MedicReport | None  # None: no judge rated a MEDIC field of the study
    n_judge_ratings: int


def cache_key(study: Study) -> str:
    judged = JudgeRating.objects.filter(item__study=study).aggregate(n=Count("id"), last=Max("id"))
    definition = study.definition if isinstance(study.definition, dict) else {}
    plans = json.dumps(definition.get("plans"), sort_keys=True, default=str)
    digest = hashlib.sha256(plans.encode()).hexdigest()[:16]
    return f"medic-page:v1:{study.pk}:{judged['n']}:{judged['last']}:{digest}"


def compute_medic_page(study: Study) -> MedicPage:
    n_judge_ratings = JudgeRating.objects.filter(item__study=study).count()
    return MedicPage(services.medic_report(study) if n_judge_ratings else None, n_judge_ratings)


def medic_page(study: Study) -> MedicPage:
    """The study's MEDIC page data, from the cache when its judge ratings and plans have not changed since."""
    return cache.get_or_set(cache_key(study), lambda: compute_medic_page(study), CACHE_SECONDS)
