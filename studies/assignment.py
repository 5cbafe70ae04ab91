"""Building a study's items and assigning them to raters.

Every rating an item needs from a pool is a Slot row (replication 3 = three slots), so replication is
met exactly: an assignment is made by taking a free slot, under a row lock. Two ways to take slots:
- `assign_study`: the coordinator hands out a pool's free slots, balancing load across its raters;
- `claim_items`: a rater (e.g. a crowd-panel consumer) takes the next free slots themselves, with
  `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent claimers never take the same slot.
Both never give a rater the same item twice, nor an item with an answer they wrote.
"""

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from datasets.models import Answer, CounterfactualPair
from raters.models import RaterProfile

from .models import Assignment, RubricKind, Slot, Study, StudyItem

BATCH = 5000


class AssignmentError(Exception):
    """A request the assignment rules forbid, in words for the coordinator."""


# --- Items ---------------------------------------------------------------------------------------


def build_items(*, study: Study, dataset_ids: list[int], source_ids: list[int]) -> int:
    """Create the study's items from datasets x answer sources; returns how many were new.

    independent: one item per answer of the sources; pairwise: one per question answered by both of
    exactly two sources; counterfactual: one per pair whose two questions the (one) source answered.
    When a source answered a question several times (other settings), its latest answer is used.
    """
    latest = _latest_answers(dataset_ids, source_ids)
    kind = study.kind
    if kind == RubricKind.INDEPENDENT:
        existing = set(study.items.values_list("answer_id", flat=True))
        new = [StudyItem(study=study, answer_id=a) for (_, _), a in sorted(latest.items()) if a not in existing]
    elif kind == RubricKind.PAIRWISE:
        if len(source_ids) != 2:
            raise AssignmentError("A pairwise study compares exactly two answer sources.")
        first, second = source_ids
        existing = set(study.items.values_list("answer_1_id", "answer_2_id"))
        questions = sorted({q for q, _ in latest})
        new = [
            StudyItem(study=study, question_id=q, answer_1_id=latest[(q, first)], answer_2_id=latest[(q, second)])
            for q in questions
            if (q, first) in latest
            and (q, second) in latest
            and (latest[(q, first)], latest[(q, second)]) not in existing
        ]
    else:
        if len(source_ids) != 1:
            raise AssignmentError("A counterfactual study uses the answers of one source to both questions.")
        [source] = source_ids
        existing = set(study.items.values_list("pair_id", flat=True))
        pairs = CounterfactualPair.objects.filter(dataset_id__in=dataset_ids).order_by("id")
        new = [
            StudyItem(
                study=study,
                pair_id=p.id,
                answer_1_id=latest[(p.question_1_id, source)],
                answer_2_id=latest[(p.question_2_id, source)],
            )  # fmt: skip
            for p in pairs.only("id", "question_1_id", "question_2_id")
            if p.id not in existing and (p.question_1_id, source) in latest and (p.question_2_id, source) in latest
        ]
    StudyItem.objects.bulk_create(new, batch_size=BATCH)
    create_slots(study=study)
    return len(new)


def _latest_answers(dataset_ids, source_ids) -> dict[tuple[int, int], int]:
    rows = (
        Answer.objects.filter(question__dataset_id__in=dataset_ids, source_id__in=source_ids)
        .values_list("question_id", "source_id", "id")
        .order_by("question_id", "source_id", "created_at", "id")
    )
    return {(question, source): answer for question, source, answer in rows.iterator(chunk_size=BATCH)}


def create_slots(*, study: Study) -> int:
    """One slot per (item, pool, replication index); idempotent, and a raised replication adds slots."""
    created = 0
    for study_pool in study.study_pools.all():
        if connection.vendor == "postgresql":
            created += _insert_slots_postgresql(study, study_pool)
            continue
        have = dict(
            Slot.objects.filter(study=study, pool_id=study_pool.pool_id).values_list("item_id").annotate(n=Max("index"))
        )
        batch = []
        for item_id in study.items.values_list("id", flat=True).iterator(chunk_size=BATCH):
            start = have[item_id] + 1 if item_id in have else 0
            batch.extend(Slot(study=study, item_id=item_id, pool_id=study_pool.pool_id, index=i)
                         for i in range(start, study_pool.replication))  # fmt: skip
            if len(batch) >= BATCH:
                created += len(Slot.objects.bulk_create(batch, ignore_conflicts=True))
                batch = []
        created += len(Slot.objects.bulk_create(batch, ignore_conflicts=True))
    return created


def _insert_slots_postgresql(study: Study, study_pool) -> int:
    # Hundreds of thousands of slots: one INSERT ... SELECT instead of Python objects, then fresh planner
    # statistics so that claims walk the free-slot index.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Slot._meta.db_table} (study_id, item_id, pool_id, index, shuffle_key)
            SELECT %s, item.id, %s, g.index, floor(random() * 2147483647)::int
            FROM {StudyItem._meta.db_table} AS item CROSS JOIN generate_series(0, %s - 1) AS g(index)
            WHERE item.study_id = %s
            ON CONFLICT (item_id, pool_id, index) DO NOTHING
            """,
            [study.id, study_pool.pool_id, study_pool.replication, study.id],
        )
        created = cursor.rowcount
        if created > 10_000:
            cursor.execute(f"ANALYZE {Slot._meta.db_table}")
    return created


# --- Rules shared by both ways of assigning ------------------------------------------------------


def _display_orders(study: Study, chosen) -> list[bool]:
    """swap_answers for each new assignment: pairwise display order balanced across all of an item's raters
    (whatever their pool), and across items when an item has one rater."""
    if study.kind != RubricKind.PAIRWISE:
        return [False] * len(chosen)
    item_ids = {item_id for _, item_id, _, _ in chosen}
    # Claimers of other slots of these items wait here, so each sees the orders given before it.
    list(StudyItem.objects.select_for_update().filter(id__in=item_ids).order_by("id").values_list("id"))
    shown = defaultdict(lambda: [0, 0])  # item -> [as stored, swapped]
    rows = Assignment.objects.active().filter(item_id__in=item_ids).values_list("item_id", "swap_answers")
    for item_id, swapped in rows.iterator(chunk_size=BATCH):
        shown[item_id][swapped] += 1
    orders = []
    for _, item_id, _, _ in chosen:
        as_stored, swapped = shown[item_id]
        swap = swapped < as_stored or (swapped == as_stored and item_id % 2 == 1)
        shown[item_id][swap] += 1
        orders.append(swap)
    return orders


def _authors_by_item(item_ids) -> dict[int, set[int]]:
    """Users who wrote an answer of each item (physician-written answers carry their author)."""
    authors: dict[int, set[int]] = defaultdict(set)
    lookups = [
        ("answer", "answer__author_id"),
        ("answer_1", "answer_1__author_id"),
        ("answer_2", "answer_2__author_id"),
    ]
    for _, column in lookups:
        rows = StudyItem.objects.filter(id__in=item_ids, **{f"{column}__isnull": False}).values_list("id", column)
        for item_id, author in rows:
            authors[item_id].add(author)
    return authors


# --- Coordinator: hand out a pool's free slots, balancing load -------------------------------


@dataclass
class AssignReport:
    assigned: int = 0
    unassignable: int = 0  # free slots no eligible rater could take
    by_rater: dict[str, int] = field(default_factory=dict)


def assign_study(*, study: Study, pool_id: int) -> AssignReport:
    """Give every free slot of a pool to the least-loaded eligible rater of that pool."""
    report = AssignReport()
    raters = list(RaterProfile.objects.filter(pool_id=pool_id, dropped_out_at__isnull=True).order_by("id"))
    if not raters:
        raise AssignmentError("This pool has no raters yet: invite some first.")
    with transaction.atomic():
        slots = list(
            Slot.objects.select_for_update(skip_locked=True)
            .filter(study=study, pool_id=pool_id, assignment__isnull=True)
            .order_by("item_id", "index")
            .values_list("id", "item_id", "index")
        )
        held = defaultdict(set)  # item -> raters who have (or had: withdrawn) it
        load = defaultdict(int)
        rows = Assignment.objects.filter(item__study=study).values_list("item_id", "rater_id", "status")
        for item_id, rater_id, status in rows.iterator(chunk_size=BATCH):
            held[item_id].add(rater_id)
            load[rater_id] += status != Assignment.Status.WITHDRAWN
        authors = _authors_by_item({item_id for _, item_id, _ in slots})
        user_of = {r.id: r.user_id for r in raters}
        heap = [(load[r.id], r.id) for r in raters]
        heapq.heapify(heap)
        chosen: list[tuple[int, int, int, int]] = []  # slot, item, index, rater
        for slot_id, item_id, index in slots:
            skipped = []
            while heap:
                rater_load, rater_id = heapq.heappop(heap)
                if rater_id in held[item_id] or user_of[rater_id] in authors.get(item_id, ()):
                    skipped.append((rater_load, rater_id))
                    continue
                chosen.append((slot_id, item_id, index, rater_id))
                held[item_id].add(rater_id)
                heapq.heappush(heap, (rater_load + 1, rater_id))
                break
            else:
                report.unassignable += 1
            for entry in skipped:
                heapq.heappush(heap, entry)
        _create_assignments(study, chosen, load)
    report.assigned = len(chosen)
    pseudonyms = {r.id: r.pseudonym for r in raters}
    for _, _, _, rater_id in chosen:
        report.by_rater[pseudonyms[rater_id]] = report.by_rater.get(pseudonyms[rater_id], 0) + 1
    return report


def _create_assignments(study, chosen, positions, expires_at=None) -> list[Assignment]:
    assignments = []
    for (_, item_id, _, rater_id), swap in zip(chosen, _display_orders(study, chosen), strict=True):
        assignments.append(
            Assignment(
                item_id=item_id,
                rater_id=rater_id,
                position=positions[rater_id],
                swap_answers=swap,
                expires_at=expires_at,
            )  # fmt: skip
        )
        positions[rater_id] += 1
    Assignment.objects.bulk_create(assignments, batch_size=BATCH)
    links = [(slot_id, a.id) for (slot_id, *_), a in zip(chosen, assignments, strict=True)]
    _link_slots(links)
    return assignments


def _link_slots(links: list[tuple[int, int]]) -> None:
    """Point each slot at its new assignment: one UPDATE ... FROM (VALUES ...) per batch (bulk_update's
    CASE expressions grow quadratically)."""
    table = Slot._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(links), 1000):
            batch = links[start : start + 1000]
            values = ", ".join(["(%s, %s)"] * len(batch))
            # VALUES columns are column1, column2 on both PostgreSQL and SQLite (which allows no aliases).
            sql = (
                f"UPDATE {table} SET assignment_id = v.column2 FROM (VALUES {values}) AS v WHERE {table}.id = v.column1"
            )
            cursor.execute(sql, [number for pair in batch for number in pair])


# --- Raters: claim the next free slots themselves ----------------------------------------------


def claim_items(*, study: Study, rater: RaterProfile, count: int = 1, now=None) -> list[Assignment]:
    """Take up to `count` free slots of the rater's pool: least-rated items first, random among equals.

    Safe under concurrency: each slot is locked and skipped by other claimers (SKIP LOCKED). Stale claims
    of others are expired first (see expire_stale_claims), so their slots can be taken.
    """
    if study.is_locked:
        raise AssignmentError("This study is locked.")
    if not study.study_pools.filter(pool_id=rater.pool_id).exists():
        raise AssignmentError(f"The {rater.pool} pool does not take part in this study.")
    now = now or timezone.now()
    expire_stale_claims(study=study, now=now)
    expires_at = now + timedelta(minutes=study.claim_timeout_minutes)
    authored: list[int] = []
    if Answer.objects.filter(author_id=rater.user_id).exists():  # almost always false: skip the joins
        own = (
            Q(answer__author_id=rater.user_id)
            | Q(answer_1__author_id=rater.user_id)
            | Q(answer_2__author_id=rater.user_id)
        )
        authored = list(study.items.filter(own).values_list("id", flat=True))
    with transaction.atomic():
        free = (
            Slot.objects.select_for_update(skip_locked=True)
            .filter(study=study, pool_id=rater.pool_id, assignment__isnull=True)
            .exclude(item_id__in=Assignment.objects.filter(rater=rater).values("item_id"))
            .exclude(item_id__in=authored)
            .order_by("index", "shuffle_key")
        )
        chosen, items = [], set()
        for slot_id, item_id, index in free.values_list("id", "item_id", "index")[: count * 4]:
            if item_id not in items:  # two free slots of one item: a rater takes one
                chosen.append((slot_id, item_id, index, rater.id))
                items.add(item_id)
            if len(chosen) == count:
                break
        position = Assignment.objects.filter(rater=rater).aggregate(p=Max("position"))["p"]
        positions = defaultdict(int, {rater.id: (position or 0) + 1})
        return _create_assignments(study, chosen, positions, expires_at=expires_at)


def expire_stale_claims(*, study: Study, now=None) -> int:
    """Claims not rated in time go back to the pool (the assignment is kept, withdrawn, with expired_at).

    In time means within the study's claim timeout, and for crowd-panel participants who have not started
    rating in the study (opened or rated any of its items) within its shorter unstarted-claim timeout:
    someone who arrives from a panel link, draws items and leaves holds their slots for minutes, not a day.
    """
    now = now or timezone.now()
    open_claims = Assignment.objects.filter(
        item__study=study,
        expires_at__isnull=False,
        status__in=[Assignment.Status.ASSIGNED, Assignment.Status.STARTED],
    )
    started = Assignment.objects.filter(item__study=study).filter(
        Q(first_viewed_at__isnull=False)
        | Q(submitted_at__isnull=False)
        | Q(status__in=[Assignment.Status.STARTED, Assignment.Status.SUBMITTED])
    )
    unstarted_before = now - timedelta(minutes=study.unstarted_claim_timeout_minutes)
    unstarted = (
        Q(assigned_at__lt=unstarted_before)
        & ~Q(rater__panel_participant_id="")
        & ~Q(rater_id__in=started.values("rater_id"))
    )
    stale = open_claims.filter(Q(expires_at__lt=now) | unstarted)
    with transaction.atomic():
        ids = list(stale.select_for_update(skip_locked=True).values_list("id", flat=True))
        Slot.objects.filter(assignment_id__in=ids).update(assignment=None)
        return Assignment.objects.filter(id__in=ids).update(status=Assignment.Status.WITHDRAWN, expired_at=now)


# --- Coordinator corrections --------------------------------------------------------------------


def withdraw_assignment(*, assignment: Assignment) -> None:
    """Take an item back from a rater (their ratings, if any, are kept); its slot is free again."""
    with transaction.atomic():
        Slot.objects.filter(assignment=assignment).update(assignment=None)
        assignment.status = Assignment.Status.WITHDRAWN
        assignment.save(update_fields=["status"])


def reassign_assignment(*, assignment: Assignment, to_rater: RaterProfile) -> Assignment:
    """Move an unrated item from one rater to another rater of the same pool."""
    if assignment.is_done:
        raise AssignmentError("This item is already rated; withdraw it instead if the rating should not count.")
    if to_rater.pool_id != assignment.rater.pool_id:
        raise AssignmentError("Reassign within the same rater pool, so the pool's replication stays right.")
    item = assignment.item
    if Assignment.objects.active().filter(item=item, rater=to_rater).exists():
        raise AssignmentError(f"{to_rater.pseudonym} already has this item.")
    if to_rater.user_id in _authors_by_item([item.id]).get(item.id, set()):
        raise AssignmentError(f"{to_rater.pseudonym} wrote one of this item's answers.")
    with transaction.atomic():
        slot = Slot.objects.select_for_update().filter(assignment=assignment).first()
        withdraw_assignment(assignment=assignment)
        new, _ = Assignment.objects.update_or_create(
            item=item, rater=to_rater,
            defaults={"status": Assignment.Status.ASSIGNED, "swap_answers": assignment.swap_answers,
                      "position": assignment.position},
        )  # fmt: skip
        if slot is not None:
            Slot.objects.filter(pk=slot.pk).update(assignment=new)
    return new
