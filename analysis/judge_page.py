"""The judge page's data for one study (issue 19, "Pages"): its judge report and where judges and people disagree,
computed from the study's results table on request and kept in Django's cache.

The cache key holds the count and the latest id of the study's counted ratings (current, of assignments not
withdrawn; a revision is a new row) and of its judge ratings: a new, revised or withdrawn rating or a new judge
rating makes a new key, as do a changed study file and new scores of the labels it names as references; an
unchanged study is read back at once. The statistics alone are fast at demo size
(`benchmarks/judge_agreement.py --items 1000 --repeats 2 --human-items 300`, 4,900 ratings: 0.26 s); loading the
results table grows with the study (seconds at 100,000 answers), which the cache spares on every refresh.
"""

from dataclasses import dataclass

import pandas as pd
from django.core.cache import cache
from django.db.models import Count, Max

from studies.exports import counted_ratings
from studies.models import JudgeRating, Study

from .judge_references import judge_report_inputs, references_key
from .judge_report import JudgeReport, judge_labels, judge_report, rated_fields
from .judge_summary import Disagreement, add_comments, disagreements
from .results import HUMAN, JUDGE, results_table

CACHE_SECONDS = 24 * 3600
SEED = 0


@dataclass(frozen=True)
class JudgePage:
    report: JudgeReport | None  # None: no field rated by both people and a judge
    disagreements: list[Disagreement]
    n_judge_ratings: int


def cache_key(study: Study) -> str:
    # The ratings the report counts: withdrawing an assignment drops its rating without a new row.
    people = counted_ratings(study).aggregate(n=Count("id"), last=Max("id"))
    judges = JudgeRating.objects.filter(item__study=study).aggregate(n=Count("id"), last=Max("id"))
    references = references_key(study)
    return f"judge-page:v3:{study.pk}:{people['n']}:{people['last']}:{judges['n']}:{judges['last']}:{references}"


def text_fields(definition: dict) -> list[str]:
    """The rubric's free-text questions: a judge's rationale and the people's comments."""
    return [str(q["key"]) for q in definition.get("questions", []) if isinstance(q, dict) and q.get("type") == "text"]


def compute_judge_page(study: Study) -> JudgePage:
    n_judge_ratings = JudgeRating.objects.filter(item__study=study).count()
    if study.rubric_version_id is None or not n_judge_ratings:
        return JudgePage(None, [], n_judge_ratings)
    definition = study.rubric_version.definition
    results, options = judge_report_inputs(study, results_table(study, kinds=(HUMAN, JUDGE)))
    # The same call `services.judge_report` makes, on the results table loaded once for the report and the items.
    report = judge_report(results, definition, study=study.name, seed=SEED, **options)
    labels, factors = judge_labels(results, list(rated_fields(definition)))
    found = disagreements(labels, factors=factors)
    add_comments(found, results, text_fields(definition))
    return JudgePage(report, found, n_judge_ratings)


def judge_page(study: Study) -> JudgePage:
    """The study's judge page data, from the cache when its ratings have not changed since."""
    return cache.get_or_set(cache_key(study), lambda: compute_judge_page(study), CACHE_SECONDS)


def table_csv(table: pd.DataFrame) -> str:
    """A table as `analyze` writes it (`DataFrame.to_csv(index=False)`)."""
    return table.to_csv(index=False)
