"""Changing an assignment or a study's lock when others may be changing it at the same moment.

Every transition re-reads what it depends on under row locks, taken in one order, and refuses when it no
longer applies (StaleTransition: 409 in the API, a message on the pages):

1. the study row: FOR SHARE by every rating, draft, withdrawal, reassignment and drop-out; FOR UPDATE by
   lock_study. Shared locks do not wait for each other, so raters submitting at once never queue behind one
   another; locking waits for the submissions in flight, and every later one sees `locked_at` and is refused;
2. the assignment row(s): FOR UPDATE, in id order;
3. then slots, then items (assignment.py).
"""

from django.db import connection

from .models import Assignment, Study


class StaleTransition(Exception):
    """The action no longer applies: someone changed the assignment or the study since it was read.

    The message says what happened, in words for the person who acted.
    """


class StudyLocked(StaleTransition):
    """The study is locked: its ratings and assignments can no longer change."""

    def __init__(self, message: str = "This study is locked: ratings can no longer change.") -> None:
        super().__init__(message)


def hold_study_open(study_id: int, *, locked_message: str | None = None) -> None:
    """Inside a transaction: wait for a lock in progress, then keep the study from being locked until commit.

    Raises StudyLocked if it is locked. SQLite needs no row lock: its write transactions (IMMEDIATE here)
    already run one at a time.
    """
    assert connection.in_atomic_block, "hold_study_open needs a transaction to hold the lock in"
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT locked_at FROM {Study._meta.db_table} WHERE id = %s FOR SHARE", [study_id])
            row = cursor.fetchone()
    else:
        row = Study.objects.filter(pk=study_id).values_list("locked_at").first()
    if row is None:
        raise StaleTransition("This study no longer exists.")
    if row[0] is not None:
        raise StudyLocked(*([locked_message] if locked_message else []))


def lock_assignment(pk: int) -> Assignment:
    """The assignment as it is now, row-locked until commit (after hold_study_open, never before it)."""
    found = Assignment.objects.select_for_update(of=("self",)).select_related("rater").filter(pk=pk).first()
    if found is None:
        raise StaleTransition("This item is no longer in the study.")
    return found


def current_study_lock(study_id: int):
    """Lock the study row for update (waiting for ratings in flight) and return its `locked_at`."""
    return Study.objects.select_for_update(of=("self",)).filter(pk=study_id).values_list("locked_at", flat=True).get()
