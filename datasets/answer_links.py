"""Answers made or imported for a study (DESIGN.md, "Answers belong to studies").

A generation job or an import may run for a study; each answer it creates or finds then belongs to that study.
`datasets` (and `scoring`) must never import `studies`, so the studies app registers here, once at start-up,
how a study is checked, offered and linked; jobs and importers keep only the study's id (a plain number) and
call `link_answers` in the transaction that stores the answers, so an answer is never stored without its link.
"""

from collections.abc import Iterable
from typing import Protocol

GENERATED, IMPORTED = "generated", "imported"  # how an answer came to the study (studies' StudyAnswer.Via)


class StudyRefused(Exception):
    """No study with that id, or one whose file does not declare the answers' source or dataset (the message
    says which, in words for the person who asked)."""


class StudyLinks(Protocol):
    def choices(self) -> list[tuple[int, str]]:
        """(id, name) of every study a job or an import may run for, for the pages' choice."""
        ...

    def problem(self, study_id: int, sources: Iterable[str] = (), datasets: Iterable[str] = ()) -> str | None:
        """Why answers cannot be linked to this study (it does not exist, or its file does not declare these
        sources among its conditions or these datasets among its questions), or None."""
        ...

    def link(self, study_id: int, answer_ids: Iterable[int], via: str) -> None:
        """Link the answers to the study; idempotent (an answer already linked keeps its first link). Raises
        StudyRefused, linking nothing, when an answer's source or dataset is not one the study's file declares."""
        ...


_registered: list[StudyLinks] = []


def register(links: StudyLinks) -> None:
    """Called by the studies app's `ready()`; a second registration replaces the first (tests, reloads)."""
    _registered[:] = [links]


def _links() -> StudyLinks:
    if not _registered:  # a job asked for a study, but no app keeps studies: refuse rather than lose the link
        raise StudyRefused("Answers cannot belong to a study here: the studies app is not installed.")
    return _registered[0]


def study_choices() -> list[tuple[int, str]]:
    return _links().choices() if _registered else []


def check_study(study_id: int | None, *, sources: Iterable[str] = (), datasets: Iterable[str] = ()) -> None:
    """Raises StudyRefused when answers (of these sources, to questions of these datasets, where known before
    anything is stored) cannot be linked to this study; None (no study) is always fine."""
    if study_id is not None and (problem := _links().problem(study_id, sources, datasets)):
        raise StudyRefused(problem)


def link_answers(*, study_id: int | None, answer_ids: Iterable[int], via: str) -> None:
    """Link answers just stored (or found) to the study the job or import runs for; nothing without a study.
    Call it inside the transaction that stores them."""
    if study_id is not None:
        _links().link(study_id, answer_ids, via)
