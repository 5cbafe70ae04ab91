"""Answers belong to studies (DESIGN.md, "Answers belong to studies"): how the studies app answers the hook that
generation jobs and imports call (`datasets.answer_links`), without datasets or scoring importing studies."""

from collections.abc import Iterable

from datasets.answer_links import StudyRefused
from datasets.models import Answer

from .models import Study, StudyAnswer

SHOWN = 5  # undeclared names listed in a refusal


class StudyLinks:
    """Registered with `datasets.answer_links` by `StudiesConfig.ready`."""

    def choices(self) -> list[tuple[int, str]]:
        return list(Study.objects.order_by("name").values_list("pk", "name"))

    def problem(self, study_id: int, sources: Iterable[str] = (), datasets: Iterable[str] = ()) -> str | None:
        study = Study.objects.filter(pk=study_id).only("name", "definition").first()
        if study is None:
            return f"There is no study with id {study_id}."
        return undeclared(study, set(sources), set(datasets))

    def link(self, study_id: int, answer_ids: Iterable[int], via: str) -> None:
        study = Study.objects.filter(pk=study_id).only("name", "definition").first()
        if study is None:  # deleted after its job started: nowhere to keep the answers; they stay, unlinked
            return
        answer_ids = list(answer_ids)
        if declared_sources(study) is not None or declared_datasets(study) is not None:
            answers = Answer.objects.filter(pk__in=answer_ids).order_by()
            sources = set(answers.values_list("source__name", flat=True).distinct())
            datasets = set(answers.values_list("question__dataset__name", flat=True).distinct())
            if problem := undeclared(study, sources, datasets):
                raise StudyRefused(problem)
        StudyAnswer.objects.link(study_id=study_id, answer_ids=answer_ids, via=via)


def declared_sources(study: Study) -> set[str] | None:
    """The sources a study loaded from a file names in its conditions; None for a study whose definition has no
    conditions (made on the pages: no file, nothing declared, so nothing is checked)."""
    return _declared(study, "conditions", "source")


def declared_datasets(study: Study) -> set[str] | None:
    return _declared(study, "questions", "dataset")


def _declared(study: Study, section: str, key: str) -> set[str] | None:
    definition = study.definition if isinstance(study.definition, dict) else {}
    if section not in definition:
        return None
    return {entry.get(key) for entry in definition[section] or [] if isinstance(entry, dict)}


def undeclared(study: Study, sources: set[str], datasets: set[str]) -> str | None:
    """Why answers of these sources, to questions of these datasets, do not belong to the study: its file is its
    pre-registration, so answers it does not declare are refused rather than mixed into its results."""
    problems = []
    for what, names, declared in (
        ("source", sources, declared_sources(study)),
        ("dataset", datasets, declared_datasets(study)),
    ):
        missing = sorted(names - declared) if declared is not None else []
        if missing:
            where = "conditions" if what == "source" else "questions"
            shown = ", ".join(repr(name) for name in missing[:SHOWN]) + (" ..." if len(missing) > SHOWN else "")
            problems.append(f"its file declares no {what} {shown} among its {where}")
    if not problems:
        return None
    return (
        f"The study {study.name!r} (id {study.pk}) takes no such answers: {'; '.join(problems)}. Load a new version "
        "of its file that declares them (load_study --new-version), or run this for the study that does."
    )
