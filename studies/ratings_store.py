"""Storing ratings read from a release (studies.ratings_import reads and checks the files).

Everything is found by its natural key (dataset name, question id, source export name, study name, rater
pseudonym) and created only when missing, so importing the same files twice adds nothing.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from datasets.models import Answer, AnswerSource, CounterfactualPair, Dataset, Question
from raters.models import RaterBackground, RaterPool, RaterProfile

from .models import Assignment, Rating, RubricVersion, Study, StudyItem, StudyPool
from .release import COUNTERFACTUAL, INDEPENDENT, PAIRWISE, study_table, table_of
from .rubric_defaults import NAME_BY_RELEASE

IMPORTED_SOURCE = "Imported release"  # the answers' source when a row does not name one
PROVENANCE = "Imported from a ratings release: the answer text was not in the release."


@dataclass
class Row:
    """One rating as read from the release, with its values in stored form."""

    line: int
    study: str
    dataset: str
    question_ids: tuple[str, ...]  # (question_id,) or (question_1_id, question_2_id)
    rater_type: str
    rater_id: str
    sources: tuple[str, ...]  # export names: the answer's (independent), the item's two (pairwise, counterfactual)
    shown_first: str  # pairwise: the source shown as Answer 1
    values: dict
    rubric_version: str
    active_seconds: float
    wall_seconds: float
    submitted_at: datetime | None
    revision: int
    attention_check_passed: bool | None
    background: dict


@dataclass
class ImportReport:
    created: Counter = field(default_factory=Counter)
    already_present: int = 0


class RowChecker:
    """What no single row shows: a rater or study used inconsistently, a rating given twice."""

    def __init__(self):
        self.rater_types: dict[str, str] = {}
        self.stored_pools: dict[str, str | None] = {}
        self.study_kinds: dict[str, str | None] = {}
        self.first_seen: dict[tuple, str] = {}

    def problems(self, kind: str, row: Row, where: str) -> list[str]:
        problems = []
        rater_type = self.rater_types.setdefault(row.rater_id, row.rater_type)
        if rater_type != row.rater_type:
            problems.append(f"rater {row.rater_id} is a {rater_type!r} in an earlier row, not a {row.rater_type!r}")
        if row.rater_id not in self.stored_pools:
            profile = RaterProfile.objects.filter(pseudonym=row.rater_id).select_related("pool").first()
            self.stored_pools[row.rater_id] = profile.pool.name if profile else None
        if self.stored_pools[row.rater_id] not in (None, row.rater_type):
            problems.append(f"rater {row.rater_id} is already in the pool {self.stored_pools[row.rater_id]!r}")
        if row.study not in self.study_kinds:
            study = Study.objects.filter(name=row.study).select_related("rubric_version__rubric").first()
            self.study_kinds[row.study] = ("" if study.is_scorers_only else study_table(study)) if study else kind
        if self.study_kinds[row.study] == "":
            problems.append(f"the study {row.study!r} is read by scorers only (it has no rubric): it takes no ratings")
        elif self.study_kinds[row.study] != kind:
            problems.append(f"the study {row.study!r} is a {self.study_kinds[row.study]} study, not {kind}")
        sources = frozenset(row.sources) if kind == PAIRWISE else row.sources
        key = (kind, row.study, row.dataset, row.question_ids, sources, row.rater_id)
        if key in self.first_seen:
            problems.append(f"rater {row.rater_id} already rated this item ({self.first_seen[key]})")
        self.first_seen.setdefault(key, where)
        return problems


class RatingsStore:
    def __init__(self):
        self.report = ImportReport()
        self.cache: dict[tuple, object] = {}
        self.sources: dict[str, AnswerSource] = {}
        for source in AnswerSource.objects.all():
            # Two sources may share an export name ("Med PaLM", "Med-PaLM"); the one named exactly so wins.
            if source.export_name not in self.sources or source.name == source.export_name:
                self.sources[source.export_name] = source
        self.versions = {str(v): v for v in RubricVersion.objects.select_related("rubric")}

    def store(self, rows: Iterable[tuple[str, Row]]) -> ImportReport:
        with transaction.atomic():
            for kind, row in rows:
                self.add(kind, row)
        return self.report

    def add(self, kind: str, row: Row) -> None:
        study = self.study(kind, row)
        rater = self.rater(row)
        self.once(
            ("study pool", study.pk, rater.pool_id),
            lambda: StudyPool.objects.get_or_create(study=study, pool=rater.pool),
        )
        item = self.item(kind, study, row)
        swap = False
        if kind == PAIRWISE:
            # The file gives the display order; the item keeps its own answer order, so a swap bridges the two.
            shown_first = self.answer(self.question(row.dataset, row.question_ids[0]), row.shown_first)
            swap = shown_first.pk != item.answer_1_id
        submitted_at = row.submitted_at or timezone.now()
        defaults = {"status": Assignment.Status.SUBMITTED, "swap_answers": swap,
                    "active_seconds": row.active_seconds, "submitted_at": submitted_at}  # fmt: skip
        assignment, created = Assignment.objects.get_or_create(item=item, rater=rater, defaults=defaults)
        if not created and assignment.ratings.exists():
            self.report.already_present += 1
            return
        if not created:  # assigned on this platform but never rated: the release completes it
            assignment.status, assignment.submitted_at = Assignment.Status.SUBMITTED, submitted_at
            assignment.active_seconds = row.active_seconds
            assignment.save(update_fields=["status", "submitted_at", "active_seconds"])
        version = self.versions.get(row.rubric_version)
        Rating.objects.create(
            assignment=assignment,
            rubric_version=version if version and table_of(version.definition) == kind else study.rubric_version,
            revision=row.revision,
            values=row.values,
            swap_answers=swap,
            active_seconds=row.active_seconds,
            wall_seconds=row.wall_seconds,
            attention_check_passed=row.attention_check_passed,
            submitted_at=submitted_at,
        )
        self.report.created["ratings"] += 1

    def once(self, key: tuple, make):
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def counted(self, label: str, pair: tuple):
        instance, created = pair
        if created:
            self.report.created[label] += 1
        return instance

    def study(self, kind: str, row: Row) -> Study:
        def make():
            version = self.versions.get(row.rubric_version)
            if version is None or table_of(version.definition) != kind:
                version = RubricVersion.objects.get(rubric__name=NAME_BY_RELEASE[kind], number=1)
            # Created locked: a release is finished work, not something to assign and rate again.
            defaults = {"rubric_version": version, "locked_at": timezone.now(),
                        "description": "Imported from a ratings release."}  # fmt: skip
            return self.counted("studies", Study.objects.get_or_create(name=row.study, defaults=defaults))

        return self.once(("study", row.study), make)

    def pool(self, name: str) -> RaterPool:
        def make():
            pool = RaterPool.objects.filter(name=name).first()
            if pool is not None:
                return pool
            base = slugify(name)[:40] or "imported"
            slug, n = base, 1
            while RaterPool.objects.filter(slug=slug).exists():
                n += 1
                slug = f"{base}-{n}"
            self.report.created["rater pools"] += 1
            return RaterPool.objects.create(name=name, slug=slug, description="Created by a ratings import.")

        return self.once(("pool", name), make)

    def rater(self, row: Row) -> RaterProfile:
        def make():
            profile = RaterProfile.objects.filter(pseudonym=row.rater_id).select_related("pool").first()
            if profile is not None:
                return profile
            user_model = get_user_model()
            username, n = f"imported-{row.rater_id}", 1
            while user_model.objects.filter(username=username).exists():
                n += 1
                username = f"imported-{row.rater_id}-{n}"
            user = user_model(username=username, is_active=False)
            user.set_unusable_password()  # a pseudonym, not a person who can log in
            user.save()
            profile = RaterProfile.objects.create(user=user, pool=self.pool(row.rater_type), pseudonym=row.rater_id)
            if any(row.background.values()):
                RaterBackground.objects.create(profile=profile, **row.background)
            self.report.created["raters"] += 1
            return profile

        return self.once(("rater", row.rater_id), make)

    def dataset(self, name: str) -> Dataset:
        return self.once(("dataset", name), lambda: self.counted("datasets", Dataset.objects.get_or_create(name=name)))

    def question(self, dataset_name: str, external_id: str) -> Question:
        def make():
            # The release has no question text; the placeholder is unique per dataset, as texts must be.
            text = f"[question text not in the release: {external_id}]"
            found = Question.objects.get_or_create(
                dataset=self.dataset(dataset_name), external_id=external_id, defaults={"text": text}
            )
            return self.counted("questions", found)

        return self.once(("question", dataset_name, external_id), make)

    def source(self, export_name: str) -> AnswerSource:
        if export_name not in self.sources:
            name = IMPORTED_SOURCE if export_name == IMPORTED_SOURCE.replace(" ", "-") else export_name
            self.sources[export_name] = AnswerSource.objects.create(
                name=name, kind=AnswerSource.Kind.IMPORTED, description="Created by a ratings import."
            )
            self.report.created["answer sources"] += 1
        return self.sources[export_name]

    def answer(self, question: Question, export_name: str) -> Answer:
        def make():
            source = self.source(export_name)
            answer = Answer.objects.filter(question=question, source=source).order_by("pk").first()
            if answer is None:
                answer = Answer.objects.create(question=question, source=source, text="", provenance_note=PROVENANCE)
                self.report.created["answers"] += 1
            return answer

        return self.once(("answer", question.pk, export_name), make)

    def pair(self, question_1: Question, question_2: Question) -> CounterfactualPair:
        def make():
            found = CounterfactualPair.objects.get_or_create(
                question_1=question_1, question_2=question_2, defaults={"dataset": question_1.dataset}
            )
            return self.counted("counterfactual pairs", found)

        return self.once(("pair", question_1.pk, question_2.pk), make)

    def item(self, kind: str, study: Study, row: Row) -> StudyItem:
        questions = [self.question(row.dataset, external_id) for external_id in row.question_ids]
        if kind == INDEPENDENT:
            answer = self.answer(questions[0], row.sources[0])
            key, fields = (answer.pk,), {"answer": answer}
            found = study.items.filter(answer=answer)
        elif kind == PAIRWISE:
            a, b = (self.answer(questions[0], source) for source in row.sources)
            key, fields = frozenset((a.pk, b.pk)), {"question": questions[0], "answer_1": a, "answer_2": b}
            found = study.items.filter(Q(answer_1=a, answer_2=b) | Q(answer_1=b, answer_2=a), question=questions[0])
        else:
            assert kind == COUNTERFACTUAL
            pair = self.pair(*questions)
            a, b = self.answer(questions[0], row.sources[0]), self.answer(questions[1], row.sources[1])
            key, fields = (pair.pk, a.pk, b.pk), {"pair": pair, "answer_1": a, "answer_2": b}
            found = study.items.filter(pair=pair, answer_1=a, answer_2=b)

        def make():
            item = found.order_by("pk").first()
            if item is None:
                is_check = row.attention_check_passed is not None
                item = StudyItem.objects.create(study=study, is_attention_check=is_check, **fields)
                self.report.created["items"] += 1
            return item

        return self.once(("item", kind, study.pk, key), make)
