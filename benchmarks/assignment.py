"""Benchmark the assignment engine at scale: 100,000 items x 3 pools x triple rating.

Creates 100,000 answered questions, builds an independent study over them with three pools at
replication 3 (900,000 slots), hands every pool's slots to its raters (assign_study), then times
single claims (claim_items) on a consumer-style study. Runs on a throw-away PostgreSQL test database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/assignment.py \\
        [--items N] [--claims N]
"""

import argparse
import resource
import time

from _django import own_test_database
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402

from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint  # noqa: E402
from raters.models import RaterPool, RaterProfile  # noqa: E402
from studies.assignment import assign_study, build_items, claim_items  # noqa: E402
from studies.models import Assignment, Rubric, Slot, Study, StudyPool  # noqa: E402


def timed(label, function):
    start = time.perf_counter()
    result = function()
    elapsed = time.perf_counter() - start
    print(f"{label:48} {elapsed:8.2f} s")
    return result, elapsed


def make_answers(n: int) -> tuple[Dataset, AnswerSource]:
    dataset = Dataset.objects.create(name="Benchmark questions")
    source = AnswerSource.objects.create(name="Benchmark model", kind="model")
    texts = [f"Benchmark question {i}: what should a patient with condition {i} do?" for i in range(n)]
    Question.objects.bulk_create(
        (
            Question(dataset=dataset, external_id=str(i), text=t, text_hash=text_fingerprint(t))
            for i, t in enumerate(texts)
        ),
        batch_size=5000,
    )
    digest = settings_fingerprint({})
    Answer.objects.bulk_create(
        (Answer(question_id=q, source=source, text="An answer.", settings_hash=digest)
         for q in dataset.questions.values_list("id", flat=True).iterator(chunk_size=5000)),
        batch_size=5000,
    )  # fmt: skip
    return dataset, source


def make_raters(pool: RaterPool, n: int) -> None:
    # A usable password: only raters who sign in are assigned (RaterProfile.objects.assignable).
    password = make_password("benchmark")
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"bench-{pool.slug}-{i}", password=password) for i in range(n)
    )
    RaterProfile.objects.bulk_create(
        RaterProfile(user=u, pool=pool, pseudonym=f"B{pool.slug[:3]}{i}") for i, u in enumerate(users)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--raters-per-pool", type=int, default=60)
    parser.add_argument("--claims", type=int, default=1000, help="single claims timed on the consumer-style study")
    args = parser.parse_args()
    with own_test_database():
        pools = list(RaterPool.objects.filter(slug__in=["physician", "equity_expert", "consumer"]))
        dataset, source = timed(f"create {args.items:,} questions + answers", lambda: make_answers(args.items))[0]
        for pool in pools:
            make_raters(pool, args.raters_per_pool)
        version = Rubric.objects.get(kind="independent", name__startswith="EquityMedQA").latest_version()
        study = Study.objects.create(name="Benchmark study", rubric_version=version)
        for pool in pools:
            StudyPool.objects.create(study=study, pool=pool, replication=3)
        timed("build items + slots (build_items)", lambda: build_items(study=study, dataset_ids=[dataset.id],
                                                                         source_ids=[source.id]))  # fmt: skip
        print(f"  items: {study.items.count():,}, slots: {Slot.objects.filter(item__study=study).count():,}")
        total = 0.0
        for pool in pools:
            report, seconds = timed(f"assign_study {pool.slug} ({args.raters_per_pool} raters)",
                                    lambda p=pool: assign_study(study=study, pool_id=p.id))  # fmt: skip
            total += seconds
            print(f"  assigned {report.assigned:,}, unassignable {report.unassignable}")
        assignments = Assignment.objects.filter(item__study=study).count()
        print(f"assignment of {assignments:,} ratings across 3 pools: {total:.1f} s = {assignments / total:,.0f} /s")

        claim_study = Study.objects.create(name="Benchmark claims", rubric_version=version)
        StudyPool.objects.create(study=claim_study, pool=pools[0], replication=3)
        build_items(study=claim_study, dataset_ids=[dataset.id], source_ids=[source.id])
        raters = list(RaterProfile.objects.filter(pool=pools[0])[:50])
        start = time.perf_counter()
        claims = 0
        for i in range(args.claims):
            claims += len(claim_items(study=claim_study, rater=raters[i % len(raters)], count=1))
        elapsed = time.perf_counter() - start
        print(
            f"claim_items x{args.claims} on {args.items:,} items: {elapsed:.2f} s = "
            f"{elapsed / claims * 1000:.1f} ms per claim"
        )
        print(f"peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
