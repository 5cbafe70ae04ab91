"""Benchmark the ratings export: 1,000,000 independent ratings written in the release format.

Fills a throw-away PostgreSQL test database with set-based SQL (200,000 answered questions, 5 physicians,
every rater rating every item), then times `write_csv_files` on a 100,000-rating study and on the
1,000,000-rating study, reporting rows/s and the peak memory the export itself allocated (tracemalloc), so
that memory can be seen not to grow with the number of ratings.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/export.py [--ratings N] [--small N]
"""

import argparse
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from _django import own_test_database
from django.db import connection  # noqa: E402

from datasets.models import AnswerSource  # noqa: E402
from studies.exports import write_csv_files  # noqa: E402
from studies.models import Rubric, Study  # noqa: E402

RATERS = 5
FILL = """
WITH ds AS (INSERT INTO datasets_dataset (name, description, licence, source, created_at)
            VALUES (%(name)s, '', '', '', now()) RETURNING id),
q AS (INSERT INTO datasets_question (dataset_id, external_id, text, text_hash, metadata, levels, created_at)
      SELECT ds.id, g::text, 'Benchmark question ' || g, md5(%(name)s || g) || md5(g::text), '{}', '{}', now()
      FROM ds, generate_series(1, %(items)s) g RETURNING id),
a AS (INSERT INTO datasets_answer (question_id, source_id, text, model_name, prompt, parameters, settings_hash,
                                   response_metadata, provenance_note, refusal, created_at)
      SELECT q.id, %(source)s, 'An answer.', 'bench-model', '', '{}', 'x', '{}', '', false, now() FROM q RETURNING id)
INSERT INTO studies_studyitem (study_id, answer_id, is_attention_check, expected_values, created_at)
SELECT %(study)s, a.id, false, '{}', now() FROM a
"""
ASSIGN = """
INSERT INTO studies_assignment (item_id, rater_id, position, swap_answers, status, draft, active_seconds, assigned_at)
SELECT i.id, r.id, 0, false, 'submitted', '{}', 30, now()
FROM studies_studyitem i CROSS JOIN raters_raterprofile r WHERE i.study_id = %(study)s AND r.pseudonym LIKE 'BX%%'
"""
RATE = """
INSERT INTO studies_rating (assignment_id, rubric_version_id, revision, is_current, values, swap_answers,
                            active_seconds, wall_seconds, submitted_at)
SELECT a.id, %(version)s, 1, true,
       CASE a.id %% 3 WHEN 0 THEN '{"bias_presence": "no_bias", "dimensions": [], "other_text": "", "comment": ""}'
                      WHEN 1 THEN '{"bias_presence": "minor_bias", "dimensions": ["failure_to_challenge"],
                                    "other_text": "", "comment": "=1+1 looks like a formula"}'
                      ELSE '{"bias_presence": "severe_bias", "dimensions": ["other_bias"],
                             "other_text": "dismissive", "comment": ""}' END::jsonb,
       false, 30, 45, now()
FROM studies_assignment a JOIN studies_studyitem i ON i.id = a.item_id WHERE i.study_id = %(study)s
"""


def make_raters() -> None:
    with connection.cursor() as cursor:
        for i in range(RATERS):
            cursor.execute("INSERT INTO auth_user (username, password, is_superuser, first_name, last_name, email, "
                           "is_staff, is_active, date_joined) VALUES (%s, '!', false, '', '', '', false, true, now()) "
                           "RETURNING id", [f"bench-rater-{i}"])  # fmt: skip
            user_id = cursor.fetchone()[0]
            cursor.execute("INSERT INTO raters_raterprofile (user_id, pool_id, pseudonym, panel_participant_id, "
                           "panel_study_id, panel_session_id, created_at) SELECT %s, id, %s, '', '', '', now() "
                           "FROM raters_raterpool WHERE slug = 'physician'", [user_id, f"BX{i:03d}"])  # fmt: skip


def make_study(name: str, ratings: int) -> Study:
    version = Rubric.objects.get(kind="independent", name__startswith="EquityMedQA").latest_version()
    study = Study.objects.create(name=name, rubric_version=version)
    source = AnswerSource.objects.create(name=name, kind=AnswerSource.Kind.MODEL, model_name="bench-model")
    params = {"name": name, "items": ratings // RATERS, "study": study.id, "version": version.id, "source": source.id}
    with connection.cursor() as cursor:
        for sql in (FILL, ASSIGN, RATE):
            cursor.execute(sql, params)
        cursor.execute("ANALYZE")
    return study


def export(study: Study, label: str) -> None:
    out = Path(tempfile.mkdtemp(prefix="equityrate-export-"))
    tracemalloc.start()
    start = time.perf_counter()
    counts = write_csv_files(out, study=study)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows = sum(counts.values())
    size = (out / "ratings_independent.csv").stat().st_size / 2**20
    print(f"{label:22} {rows:>9,} rows in {elapsed:7.1f} s = {rows / elapsed:8,.0f} rows/s; "
          f"{size:6.1f} MiB of CSV; export's peak allocation {peak / 2**20:5.1f} MiB")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ratings", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000, help="ratings of the smaller study exported first")
    args = parser.parse_args()
    with own_test_database():
        make_raters()
        start = time.perf_counter()
        small = make_study("Benchmark export small", args.small)
        large = make_study("Benchmark export large", args.ratings)
        print(f"filled the database in {time.perf_counter() - start:.0f} s")
        export(small, f"{args.small:,} ratings")
        export(large, f"{args.ratings:,} ratings")
        print(
            f"peak resident memory of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
        )


if __name__ == "__main__":
    main()
