"""Building a study's items and assigning them to raters.

Every rating an item needs from a pool is a Slot row (replication 3 = three slots), so replication is
met exactly: an assignment is made by taking a free slot, under a row lock. Two ways to take slots:
- `assign_study`: the coordinator hands out a pool's free slots, balancing load across its raters;
- `claim_items`: a rater (e.g. a crowd-panel consumer) takes the next free slots themselves, with
  `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent claimers never take the same slot.
Both never give a rater the same item twice, nor an item with an answer they wrote.
"""

import hashlib
import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from datasets.models import Answer, CounterfactualPair
from raters.models import RaterProfile

from . import rubric_schema
from .models import SCORERS_ONLY_ITEMS, Assignment, Slot, Study, StudyAnswer, StudyItem
from .transitions import StaleTransition, hold_study_open, lock_assignment

BATCH = 5000
# Pairwise: how many equally least-loaded raters assign_study weighs for each slot's display order.
EQUALS_TO_WEIGH = 8
LOCKED = "This study is locked: its assignments can no longer change."


class AssignmentError(Exception):
    """A request the assignment rules forbid, in words for the coordinator."""


# What an item is made of, per rubric display: (fewest, most answer sources, the rule in words, what a
# study with no items lacked).
SOURCES = {
    "one_answer": (1, None, "A study of single answers needs at least one answer source.",
                   "The chosen sources have no answers to these datasets' questions"),
    "two_answers": (2, 2, "A study of two answers side by side compares exactly two answer sources.",
                    "The two sources never answered the same question of these datasets"),
    "two_questions": (1, 1, "A study of two questions uses the answers of exactly one source to both.",
                      "The source did not answer both questions of any counterfactual pair of these datasets"),
}  # fmt: skip


# --- Items ---------------------------------------------------------------------------------------


def build_items(*, study: Study, dataset_ids: list[int], source_ids: list[int]) -> int:
    """Create the study's items from datasets x answer sources; returns how many were new.

    As the rubric's display says: one answer: one item per answer of the sources; two answers: one per
    question answered by both of exactly two sources; two questions: one per pair whose two questions the
    (one) source answered.
    When a source answered a question several times (other settings), its latest answer is used.
    """
    if study.is_scorers_only:
        raise AssignmentError(SCORERS_ONLY_ITEMS)
    latest = _latest_answers(dataset_ids, source_ids)
    display = study.display
    if display == "one_answer":
        existing = set(study.items.values_list("answer_id", flat=True))
        new = [StudyItem(study=study, answer_id=a) for (_, _), a in sorted(latest.items()) if a not in existing]
    elif display == "two_answers":
        if len(source_ids) != 2:
            raise AssignmentError(SOURCES[display][2])
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
    elif display == "two_questions":
        if len(source_ids) != 1:
            raise AssignmentError(SOURCES[display][2])
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
    else:
        raise AssignmentError(f"The study's rubric shows {display!r}, which is not a way items are made.")
    with transaction.atomic():  # bulk_create skips save(): the items' answers are linked here, with them
        StudyItem.objects.bulk_create(new, batch_size=BATCH)
        StudyItem.link_answers(new)
    create_slots(study=study)
    return len(new)


def items_for_answers(*, study: Study, base_only: bool = False, expect: dict[str, str] | None = None) -> int:
    """One item per answer linked to the study (`StudyAnswer`: imported into it, generated for it) that is not
    an item yet, for a study whose rubric shows one answer; returns how many were new.

    Unlike `build_items` (a source's latest answer per question), every linked answer becomes an item, each
    condition's too: how a study's judges (or people) rate the answers an import gave it, e.g. BiasMedQA's
    released responses under the auto-evaluator judge. Under the study's row lock, so two runs add each answer
    once; refused for a locked study.

    `base_only`: only answers to questions that are no variant (ContextSRH's people rate the answers to the
    original questions). `expect`: every new item is an attention check expecting these answers of the rubric's
    single-choice questions (ContextSRH's gate, `{"relevant": "all"}`); checked against the rubric first.
    """
    if study.is_scorers_only:
        raise AssignmentError(SCORERS_ONLY_ITEMS)
    if study.display != "one_answer":
        raise AssignmentError("Items made from a study's answers show one answer each: the study's rubric shows "
                              f"{study.display!r}.")  # fmt: skip
    if expect:
        expectation_problem = _expectation_problem(study.rubric_version.definition, expect)
        if expectation_problem:
            raise AssignmentError(expectation_problem)
    with transaction.atomic():
        locked = Study.objects.select_for_update().filter(pk=study.pk).values_list("locked_at", flat=True).first()
        if locked is not None:
            raise AssignmentError("This study is locked: no items are added to it.")
        existing = set(study.items.values_list("answer_id", flat=True))
        linked = StudyAnswer.objects.filter(study=study)
        if base_only:
            linked = linked.filter(answer__question__base__isnull=True)
        linked_ids = linked.order_by("answer_id").values_list("answer_id", flat=True)
        check = {"is_attention_check": True, "expected_values": dict(expect)} if expect else {}
        new = [
            StudyItem(study=study, answer_id=answer_id, **check)
            for answer_id in linked_ids.iterator()
            if answer_id not in existing
        ]
        StudyItem.objects.bulk_create(new, batch_size=BATCH)
        StudyItem.link_answers(new)
        create_slots(study=study)
    return len(new)


def _expectation_problem(definition: dict, expect: dict[str, str]) -> str | None:
    """Why `expect` cannot be an attention check's expected answers under this rubric, or None."""
    for key, value in expect.items():
        asked = next((q for q in rubric_schema.questions(definition) if q["key"] == key), None)
        if asked is None or asked["type"] != "single":
            return f"The rubric has no single-choice question {key!r} to expect an answer of."
        keys = [option["key"] for option in asked.get("options") or []]
        if value not in keys:
            return f"{value!r} is not an answer of the rubric's question {key!r} (its answers: {', '.join(keys)})."
    return None


def _latest_answers(dataset_ids, source_ids) -> dict[tuple[int, int], int]:
    rows = (
        Answer.objects.filter(question__dataset_id__in=dataset_ids, source_id__in=source_ids)
        .values_list("question_id", "source_id", "id")
        .order_by("question_id", "source_id", "created_at", "id")
    )
    return {(question, source): answer for question, source, answer in rows.iterator(chunk_size=BATCH)}


def human_slice(study: Study) -> dict | None:
    """The study file's `human_slice` ({share or items, seed}), or None: people rate every item."""
    definition = study.definition if isinstance(study.definition, dict) else {}
    return definition.get("human_slice")


def slice_rank(seed: int, item_id: int) -> bytes:
    """An item's key in the seeded draw: a hash of (seed, item), so the order is a random permutation that the
    same seed gives again, and an item's key does not change when other items are added."""
    return hashlib.sha256(f"{seed}:{item_id}".encode()).digest()


def sliced_item_ids(item_ids: list[int], chosen: dict) -> set[int]:
    """The items people rate: the first `items` (or `share` of them, rounded, at least one) in the seeded draw."""
    share = chosen.get("share", 0)
    wanted = chosen["items"] if "items" in chosen else max(1, round(share * len(item_ids))) if item_ids else 0
    seed = chosen.get("seed", 0)
    return set(sorted(item_ids, key=lambda item_id: slice_rank(seed, item_id))[:wanted])


def create_slots(*, study: Study) -> int:
    """One slot per (item, pool, replication index); idempotent, and a raised replication adds slots. With a human
    slice (the study file's `human_slice`), only the items of the slice get slots: the only place people's items
    are chosen (assign_study and claim_items take slots)."""
    created = 0
    chosen = human_slice(study)
    sliced = None
    if chosen is not None:
        sliced = sliced_item_ids(list(study.items.values_list("id", flat=True)), chosen)
    for study_pool in study.study_pools.all():
        if connection.vendor == "postgresql":
            created += _insert_slots_postgresql(study, study_pool, sliced)
            continue
        have = dict(
            Slot.objects.filter(study=study, pool_id=study_pool.pool_id).values_list("item_id").annotate(n=Max("index"))
        )
        batch = []
        for item_id in study.items.values_list("id", flat=True).iterator(chunk_size=BATCH):
            if sliced is not None and item_id not in sliced:
                continue
            start = have[item_id] + 1 if item_id in have else 0
            batch.extend(Slot(study=study, item_id=item_id, pool_id=study_pool.pool_id, index=i)
                         for i in range(start, study_pool.replication))  # fmt: skip
            if len(batch) >= BATCH:
                created += len(Slot.objects.bulk_create(batch, ignore_conflicts=True))
                batch = []
        created += len(Slot.objects.bulk_create(batch, ignore_conflicts=True))
    return created


def _insert_slots_postgresql(study: Study, study_pool, sliced: set[int] | None) -> int:
    # Hundreds of thousands of slots: one INSERT ... SELECT instead of Python objects, then fresh planner
    # statistics so that claims walk the free-slot index.
    in_slice = "" if sliced is None else "AND item.id = ANY(%s)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Slot._meta.db_table} (study_id, item_id, pool_id, index, shuffle_key)
            SELECT %s, item.id, %s, g.index, floor(random() * 2147483647)::int
            FROM {StudyItem._meta.db_table} AS item CROSS JOIN generate_series(0, %s - 1) AS g(index)
            WHERE item.study_id = %s {in_slice}
            ON CONFLICT (item_id, pool_id, index) DO NOTHING
            """,
            [study.id, study_pool.pool_id, study_pool.replication, study.id]
            + ([] if sliced is None else [sorted(sliced)]),
        )
        created = cursor.rowcount
        if created > 10_000:
            cursor.execute(f"ANALYZE {Slot._meta.db_table}")
    return created


# --- Rules shared by both ways of assigning ------------------------------------------------------


class DisplayOrders:
    """Pairwise display order (swap_answers) of new assignments, counterbalanced two ways: each item is shown
    about half each way across its raters (whatever their pool), and each rater sees about half of their items
    each way (so the order cannot be learnt from a rater's own items).

    An item's balance comes first: while it is uneven, its next rater gets the order that evens it (so an item
    with an even number of ratings is exactly half and half). When the item leaves a choice, the rater's own
    balance decides. Item rows are locked until commit, so claimers of other slots of these items wait and
    each sees the orders given before it.
    """

    def __init__(self, study: Study, item_ids, rater_ids, *, lock: bool = True):
        self.pairwise = study.display == "two_answers"  # only two answers side by side have an order
        self.by_item: dict[int, int] = defaultdict(int)  # shown swapped minus shown as stored
        self.by_rater: dict[int, int] = defaultdict(int)
        if not self.pairwise:
            return
        if lock:  # without it, a prediction only (claims ordering their candidates)
            list(StudyItem.objects.select_for_update().filter(id__in=item_ids).order_by("id").values_list("id"))
        active = Assignment.objects.active()
        for item_id, swapped in active.filter(item_id__in=item_ids).values_list("item_id", "swap_answers"):
            self.by_item[item_id] += 1 if swapped else -1
        mine = active.filter(item__study=study, rater_id__in=rater_ids).values_list("rater_id", "swap_answers")
        for rater_id, swapped in mine.iterator(chunk_size=BATCH):
            self.by_rater[rater_id] += 1 if swapped else -1

    def evening(self, item_id: int) -> bool | None:
        """The order that evens an uneven item; None when the item is even and leaves a choice."""
        balance = self.by_item[item_id]
        return None if balance == 0 or not self.pairwise else balance < 0

    def choose(self, item_id: int, rater_id: int) -> bool:
        if not self.pairwise:
            return False
        swap = self.evening(item_id)
        if swap is None:
            leaning = self.by_rater[rater_id]
            swap = leaning < 0 if leaning else (item_id + rater_id) % 2 == 1
        self.by_item[item_id] += 1 if swap else -1
        self.by_rater[rater_id] += 1 if swap else -1
        return swap


def _display_orders(study: Study, chosen) -> list[bool]:
    """swap_answers for each new (slot, item, index, rater): items that are uneven first, so that the free
    choices that follow can even out what they gave the rater."""
    orders = DisplayOrders(study, {item for _, item, _, _ in chosen}, {rater for *_, rater in chosen})
    sequence = sorted(range(len(chosen)), key=lambda n: orders.evening(chosen[n][1]) is None)
    swaps = [False] * len(chosen)
    for n in sequence:
        swaps[n] = orders.choose(chosen[n][1], chosen[n][3])
    return swaps


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
    """Give every free slot of a pool to the least-loaded eligible rater of that pool (see
    RaterProfile.objects.assignable: only raters who sign in); pairwise, among equally loaded raters, to
    the one whose own display order the item's order evens out."""
    report = AssignReport()
    raters = list(RaterProfile.objects.assignable().filter(pool_id=pool_id).order_by("id"))
    if not raters:
        raise AssignmentError("This pool has no raters yet: invite some first.")
    with transaction.atomic():
        hold_study_open(study.pk, locked_message=LOCKED)
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
        orders = DisplayOrders(study, {item_id for _, item_id, _ in slots}, [r.id for r in raters])
        user_of = {r.id: r.user_id for r in raters}
        heap = [(load[r.id], r.id) for r in raters]
        heapq.heapify(heap)
        chosen: list[tuple[int, int, int, int]] = []  # slot, item, index, rater
        swaps: list[bool] = []
        for slot_id, item_id, index in slots:
            skipped, equals = [], []  # equally least-loaded raters who may take the item
            while heap and len(equals) < (EQUALS_TO_WEIGH if orders.pairwise else 1):
                rater_load, rater_id = heapq.heappop(heap)
                if equals and rater_load > equals[0][0]:
                    skipped.append((rater_load, rater_id))
                    break
                if rater_id in held[item_id] or user_of[rater_id] in authors.get(item_id, ()):
                    skipped.append((rater_load, rater_id))
                else:
                    equals.append((rater_load, rater_id))
            if equals:
                wanted = orders.evening(item_id)
                if wanted is not None:  # the rater who most needs that order, least loaded first
                    equals.sort(key=lambda e: (orders.by_rater[e[1]] if wanted else -orders.by_rater[e[1]], e))
                (rater_load, rater_id), *others = equals
                skipped.extend(others)
                chosen.append((slot_id, item_id, index, rater_id))
                swaps.append(orders.choose(item_id, rater_id))
                held[item_id].add(rater_id)
                heapq.heappush(heap, (rater_load + 1, rater_id))
            else:
                report.unassignable += 1
            for entry in skipped:
                heapq.heappush(heap, entry)
        _create_assignments(study, chosen, load, swaps=swaps)
    report.assigned = len(chosen)
    pseudonyms = {r.id: r.pseudonym for r in raters}
    for _, _, _, rater_id in chosen:
        report.by_rater[pseudonyms[rater_id]] = report.by_rater.get(pseudonyms[rater_id], 0) + 1
    return report


def _create_assignments(study, chosen, positions, expires_at=None, swaps=None) -> list[Assignment]:
    assignments = []
    swaps = swaps if swaps is not None else _display_orders(study, chosen)
    for (_, item_id, _, rater_id), swap in zip(chosen, swaps, strict=True):
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

    Safe under concurrency: each slot is locked and skipped by other claimers (SKIP LOCKED); an empty result
    is confirmed by a claim that waits for those locks. Stale claims of others are expired first (see
    expire_stale_claims), so their slots can be taken.
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
    # SKIP LOCKED can see nothing while other claimers hold free slots they will not all take (each locks a
    # few candidates and takes one), so "nothing" is only believed once a claim that waits for those locks
    # agrees. The order is the same in every claim, so waiting claimers cannot deadlock one another.
    for attempt in range(CLAIM_ATTEMPTS):
        claimed = _claim_free_slots(study, rater, count, authored, expires_at, skip_locked=attempt == 0)
        if claimed or not _free_slots(study, rater, authored).exists():
            return claimed
    return []


CLAIM_ATTEMPTS = 5


def _free_slots(study: Study, rater: RaterProfile, authored: list[int]):
    """The study's unfilled slots of the rater's pool, for items the rater has neither rated nor written."""
    return (
        Slot.objects.filter(study=study, pool_id=rater.pool_id, assignment__isnull=True)
        .exclude(item_id__in=Assignment.objects.filter(rater=rater).values("item_id"))
        .exclude(item_id__in=authored)
    )


def _claim_free_slots(study, rater, count, authored, expires_at, *, skip_locked: bool) -> list[Assignment]:
    with transaction.atomic():
        free = (
            _free_slots(study, rater, authored)
            .select_for_update(skip_locked=skip_locked)
            .order_by("index", "shuffle_key")
        )
        candidates = list(free.values_list("id", "item_id", "index")[: count * 4])
        if study.display == "two_answers":
            candidates = _evening_the_claimer_first(study, rater.id, candidates)
        chosen, items = [], set()
        for slot_id, item_id, index in candidates:
            if item_id not in items:  # two free slots of one item: a rater takes one
                chosen.append((slot_id, item_id, index, rater.id))
                items.add(item_id)
            if len(chosen) == count:
                break
        position = Assignment.objects.filter(rater=rater).aggregate(p=Max("position"))["p"]
        positions = defaultdict(int, {rater.id: (position or 0) + 1})
        return _create_assignments(study, chosen, positions, expires_at=expires_at)


def _evening_the_claimer_first(study: Study, rater_id: int, candidates: list) -> list:
    """Reorder free slots (id, item, index) so that, within each replication index (least-rated items still
    first), items whose display order would even out the claimer's own come first.

    An uneven item's next order is forced (DisplayOrders); an even one leaves a choice. This is a prediction
    read without locks: _display_orders decides under the item locks, so items stay balanced whatever happens.
    """
    orders = DisplayOrders(study, {item for _, item, _ in candidates}, [rater_id], lock=False)
    remaining, ordered = list(candidates), []
    while remaining:
        lowest = min(index for _, _, index in remaining)
        group = [c for c in remaining if c[2] == lowest]
        leaning = orders.by_rater[rater_id]
        # An item helps when it leaves a choice, or when the order it forces is the one the claimer lacks.
        helps = [c for c in group if leaning == 0 or orders.evening(c[1]) in (None, leaning < 0)]
        pick = (helps or group)[0]
        remaining.remove(pick)
        ordered.append(pick)
        orders.choose(pick[1], rater_id)
    return ordered


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


def withdraw_assignment(*, assignment: Assignment, seen_status: str | None = None) -> None:
    """Take an item back from a rater (their ratings, if any, are kept but no longer count); its slot is free
    again, for another rater.

    `seen_status` is the status the coordinator acted on (default: `assignment`'s). Re-read under the row
    lock, the withdrawal is refused (StaleTransition) if the item was withdrawn meanwhile, or rated since it
    was seen unrated: that rating would silently stop counting.
    """
    seen = seen_status or assignment.status
    with transaction.atomic():
        hold_study_open(assignment.item.study_id, locked_message=LOCKED)
        current = lock_assignment(assignment.pk)
        if current.status == Assignment.Status.WITHDRAWN:
            raise StaleTransition(f"Item {current.item_id} was already withdrawn from {current.rater.pseudonym}.")
        if current.status == Assignment.Status.SUBMITTED and seen != Assignment.Status.SUBMITTED:
            raise StaleTransition(
                f"{current.rater.pseudonym} rated item {current.item_id} meanwhile, so it was not withdrawn. "
                "Withdraw it again if that rating should not count."
            )
        _take_back(current)
    assignment.status = Assignment.Status.WITHDRAWN


def _take_back(assignment: Assignment) -> None:
    Slot.objects.filter(assignment=assignment).update(assignment=None)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.WITHDRAWN)


def reassign_assignment(*, assignment: Assignment, to_rater: RaterProfile) -> Assignment:
    """Move an unrated item from one rater to another eligible rater of the same pool (same display order).

    Re-read under the row lock: refused (StaleTransition) if it was withdrawn or rated meanwhile.
    """
    if assignment.is_done:
        raise AssignmentError("This item is already rated; withdraw it instead if the rating should not count.")
    if to_rater.pool_id != assignment.rater.pool_id:
        raise AssignmentError("Reassign within the same rater pool, so the pool's replication stays right.")
    if not RaterProfile.objects.assignable().filter(pk=to_rater.pk).exists():
        raise AssignmentError(f"{to_rater.pseudonym} cannot take items: they dropped out or cannot sign in.")
    item = assignment.item
    if to_rater.user_id in _authors_by_item([item.id]).get(item.id, set()):
        raise AssignmentError(f"{to_rater.pseudonym} wrote one of this item's answers.")
    with transaction.atomic():
        hold_study_open(item.study_id, locked_message=LOCKED)
        current = lock_assignment(assignment.pk)
        if current.status == Assignment.Status.WITHDRAWN:
            raise StaleTransition(f"Item {current.item_id} was withdrawn from {current.rater.pseudonym} meanwhile.")
        if current.status == Assignment.Status.SUBMITTED:
            raise StaleTransition(
                f"{current.rater.pseudonym} rated item {current.item_id} meanwhile, so it was not moved."
            )
        if Assignment.objects.active().filter(item=item, rater=to_rater).exists():
            raise AssignmentError(f"{to_rater.pseudonym} already has this item.")
        slot = Slot.objects.select_for_update().filter(assignment=current).first()
        _take_back(current)
        new, _ = Assignment.objects.update_or_create(
            item=item, rater=to_rater,
            defaults={"status": Assignment.Status.ASSIGNED, "swap_answers": current.swap_answers,
                      "position": current.position},
        )  # fmt: skip
        if slot is not None:
            Slot.objects.filter(pk=slot.pk).update(assignment=new)
    assignment.status = Assignment.Status.WITHDRAWN
    return new
