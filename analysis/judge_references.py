"""Labels someone else made, beside a study's judges (issue 19): the study file's `references` read from the scores
of the items' answers, and what the judge report needs of the study file (its references and human slice).

A reference `{name, field, scorer, version, values, where}` gives each item whose answer has a score of that
scorer and version (and whose stored value has the `where` keys at those values) the label `values[outcome]`;
an outcome not named gives none. The judge report treats the labels as one more pool of people
(`analysis.judge_report.with_references`): agreement.csv's rater_b is the reference's name, rater_b_kind `human`.
"""

from typing import Any

import pandas as pd
from django.db.models import Count, Max

from scoring.models import Score
from studies.models import Study

from .judge_report import REFERENCE_COLUMNS, with_references

CHUNK = 5000


def references_of(study: Study) -> list[dict[str, Any]]:
    definition = study.definition if isinstance(study.definition, dict) else {}
    return list(definition.get("references", []))


def human_slice_of(study: Study) -> dict[str, Any] | None:
    definition = study.definition if isinstance(study.definition, dict) else {}
    return definition.get("human_slice")


def _scores(study: Study, reference: dict[str, Any]):
    where = {f"value__{key}": value for key, value in reference.get("where", {}).items()}
    return Score.objects.filter(
        scorer=reference["scorer"],
        version=reference.get("version", 1),
        answer_id__in=study.items.filter(answer__isnull=False).values("answer_id"),
        **where,
    )


def reference_labels(study: Study) -> pd.DataFrame:
    """The references' labels of the study's items (`REFERENCE_COLUMNS`), one row per item and reference."""
    rows: list[tuple[int, str, str, str]] = []
    references = references_of(study)
    if not references:
        return pd.DataFrame(columns=REFERENCE_COLUMNS)
    items: dict[int, list[int]] = {}
    for item_id, answer_id in (
        study.items.filter(answer__isnull=False).values_list("id", "answer_id").iterator(chunk_size=CHUNK)
    ):
        items.setdefault(answer_id, []).append(item_id)
    for reference in references:
        values = reference["values"]
        scores = _scores(study, reference).filter(outcome__in=list(values)).values_list("answer_id", "outcome")
        for answer_id, outcome in scores.iterator(chunk_size=CHUNK):
            rows.extend(
                (item_id, reference["name"], reference["field"], values[outcome]) for item_id in items[answer_id]
            )
    return pd.DataFrame(rows, columns=REFERENCE_COLUMNS)


def references_key(study: Study) -> str:
    """What the references' labels depend on, for a cache key: the file, and the count and latest id of the scores."""
    parts = [study.definition_sha256 or ""]
    for reference in references_of(study):
        found = _scores(study, reference).aggregate(n=Count("id"), last=Max("id"))
        parts.append(f"{found['n']}:{found['last']}")
    return ":".join(parts)


def judge_report_inputs(study: Study, results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The results table with the references' labels, and `judge_report`'s keyword arguments from the study file."""
    names = tuple(dict.fromkeys(reference["name"] for reference in references_of(study)))
    extended = with_references(results, reference_labels(study))
    return extended, {"references": names, "human_slice": human_slice_of(study)}
