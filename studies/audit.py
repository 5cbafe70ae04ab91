"""Database guards of the audit trail (see DESIGN.md, "Audit trail"): triggers that refuse, whoever asks,

- deleting a rating (PostgreSQL; on SQLite the model layer refuses, see below),
- changing any column of a rating, except retiring it (is_current from true to false, as a revision does),
- changing a study's lock once set, or its rubric version once locked,
- moving an assignment that has ratings to another rater or item,
- changing what a rated item shows (its study, answers, question or pair), rated by a person or replied to by
  a judge,
- changing or deleting a judge's reply or rating at all (PostgreSQL; on SQLite changing, as for ratings).

They are (re)installed after every `migrate`, not in a migration: SQLite alters a table by rebuilding it,
which drops the table's triggers, and the rating guard on SQLite names the table's columns.
"""

from django.db import connections, transaction

from .models import Rating

REFUSED = "restrict_violation"  # SQLSTATE 23001: Django raises IntegrityError, as for SQLite's RAISE(ABORT)
RATING_MESSAGE = "ratings are an audit trail: a rating is never deleted or changed (a revision adds a rating)"
LOCK_MESSAGE = "the study is locked: its lock and rubric version cannot change"
ASSIGNMENT_MESSAGE = "the assignment has ratings (an audit trail): its rater and item cannot change"
ITEM_MESSAGE = "the item has ratings (an audit trail): its study, answers, question and pair cannot change"
JUDGE_MESSAGE = "judge replies and ratings are an audit trail: they are never deleted or changed"
JUDGE_TABLES = ["studies_judgereply", "studies_judgerating"]
TABLES = {"studies_rating", "studies_study", "studies_assignment", "studies_studyitem", *JUDGE_TABLES}
ITEM_COLUMNS = ["study_id", "answer_id", "question_id", "pair_id", "answer_1_id", "answer_2_id"]
ITEM_RATED = (
    "EXISTS (SELECT 1 FROM studies_rating JOIN studies_assignment ON studies_assignment.id = "
    "studies_rating.assignment_id WHERE studies_assignment.item_id = OLD.id) "
    "OR EXISTS (SELECT 1 FROM studies_judgereply WHERE studies_judgereply.item_id = OLD.id)"
)

POSTGRESQL = [
    f"""
    CREATE OR REPLACE FUNCTION studies_rating_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE'
           OR (to_jsonb(NEW) - 'is_current') IS DISTINCT FROM (to_jsonb(OLD) - 'is_current')
           OR (NEW.is_current AND NOT OLD.is_current) THEN
            RAISE EXCEPTION '{RATING_MESSAGE} (rating %)', OLD.id USING ERRCODE = '{REFUSED}';
        END IF;
        RETURN NEW;
    END $$
    """,
    """
    CREATE OR REPLACE TRIGGER studies_rating_append_only BEFORE UPDATE OR DELETE ON studies_rating
    FOR EACH ROW EXECUTE FUNCTION studies_rating_append_only()
    """,
    f"""
    CREATE OR REPLACE FUNCTION studies_study_lock_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{LOCK_MESSAGE} (study %)', OLD.id USING ERRCODE = '{REFUSED}';
    END $$
    """,
    """
    CREATE OR REPLACE TRIGGER studies_study_lock_is_final BEFORE UPDATE ON studies_study FOR EACH ROW
    WHEN (OLD.locked_at IS NOT NULL AND (NEW.locked_at IS DISTINCT FROM OLD.locked_at
                                         OR NEW.rubric_version_id IS DISTINCT FROM OLD.rubric_version_id))
    EXECUTE FUNCTION studies_study_lock_is_final()
    """,
    f"""
    CREATE OR REPLACE FUNCTION studies_assignment_rated_stays() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM studies_rating WHERE assignment_id = OLD.id) THEN
            RAISE EXCEPTION '{ASSIGNMENT_MESSAGE} (assignment %)', OLD.id USING ERRCODE = '{REFUSED}';
        END IF;
        RETURN NEW;
    END $$
    """,
    """
    CREATE OR REPLACE TRIGGER studies_assignment_rated_stays BEFORE UPDATE ON studies_assignment FOR EACH ROW
    WHEN (NEW.rater_id IS DISTINCT FROM OLD.rater_id OR NEW.item_id IS DISTINCT FROM OLD.item_id)
    EXECUTE FUNCTION studies_assignment_rated_stays()
    """,
    f"""
    CREATE OR REPLACE FUNCTION studies_studyitem_rated_stays() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF {ITEM_RATED} THEN
            RAISE EXCEPTION '{ITEM_MESSAGE} (item %)', OLD.id USING ERRCODE = '{REFUSED}';
        END IF;
        RETURN NEW;
    END $$
    """,
    f"""
    CREATE OR REPLACE TRIGGER studies_studyitem_rated_stays BEFORE UPDATE ON studies_studyitem FOR EACH ROW
    WHEN ({" OR ".join(f"NEW.{column} IS DISTINCT FROM OLD.{column}" for column in ITEM_COLUMNS)})
    EXECUTE FUNCTION studies_studyitem_rated_stays()
    """,
    f"""
    CREATE OR REPLACE FUNCTION studies_judge_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{JUDGE_MESSAGE} (% %)', TG_TABLE_NAME, OLD.id USING ERRCODE = '{REFUSED}';
    END $$
    """,
    *(
        f"""
        CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
        FOR EACH ROW EXECUTE FUNCTION studies_judge_append_only()
        """
        for table in JUDGE_TABLES
    ),
]


def sqlite_statements() -> list[str]:
    # No DELETE guard on SQLite: `flush` (the demo's reset, transactional tests) empties tables with DELETE,
    # and a trigger cannot tell that from a delete of one rating. Rating's QuerySet and delete() refuse instead.
    changed = " OR ".join(
        f'NEW."{field.column}" IS NOT OLD."{field.column}"'
        for field in Rating._meta.concrete_fields
        if field.name != "is_current"
    )
    return [
        "DROP TRIGGER IF EXISTS studies_rating_append_only",
        f"""
        CREATE TRIGGER studies_rating_append_only BEFORE UPDATE ON studies_rating FOR EACH ROW
        WHEN {changed} OR (NEW.is_current AND NOT OLD.is_current)
        BEGIN SELECT RAISE(ABORT, '{RATING_MESSAGE}'); END
        """,
        "DROP TRIGGER IF EXISTS studies_study_lock_is_final",
        f"""
        CREATE TRIGGER studies_study_lock_is_final BEFORE UPDATE ON studies_study FOR EACH ROW
        WHEN OLD.locked_at IS NOT NULL AND (NEW.locked_at IS NOT OLD.locked_at
                                            OR NEW.rubric_version_id IS NOT OLD.rubric_version_id)
        BEGIN SELECT RAISE(ABORT, '{LOCK_MESSAGE}'); END
        """,
        "DROP TRIGGER IF EXISTS studies_assignment_rated_stays",
        f"""
        CREATE TRIGGER studies_assignment_rated_stays BEFORE UPDATE ON studies_assignment FOR EACH ROW
        WHEN (NEW.rater_id IS NOT OLD.rater_id OR NEW.item_id IS NOT OLD.item_id)
             AND EXISTS (SELECT 1 FROM studies_rating WHERE assignment_id = OLD.id)
        BEGIN SELECT RAISE(ABORT, '{ASSIGNMENT_MESSAGE}'); END
        """,
        "DROP TRIGGER IF EXISTS studies_studyitem_rated_stays",
        f"""
        CREATE TRIGGER studies_studyitem_rated_stays BEFORE UPDATE ON studies_studyitem FOR EACH ROW
        WHEN ({" OR ".join(f"NEW.{column} IS NOT OLD.{column}" for column in ITEM_COLUMNS)}) AND {ITEM_RATED}
        BEGIN SELECT RAISE(ABORT, '{ITEM_MESSAGE}'); END
        """,
        *(
            statement
            for table in JUDGE_TABLES
            for statement in (
                f"DROP TRIGGER IF EXISTS {table}_append_only",
                f"""
                CREATE TRIGGER {table}_append_only BEFORE UPDATE ON {table} FOR EACH ROW
                BEGIN SELECT RAISE(ABORT, '{JUDGE_MESSAGE}'); END
                """,
            )
        ),
    ]


def install_audit_guards(*, using: str = "default", **_signal_kwargs) -> bool:
    """Create or refresh the triggers; False where there is nothing to guard yet (or an unknown database)."""
    connection = connections[using]
    if connection.vendor not in ("postgresql", "sqlite"):
        return False
    if not TABLES.issubset(connection.introspection.table_names()):
        return False
    statements = POSTGRESQL if connection.vendor == "postgresql" else sqlite_statements()
    with transaction.atomic(using=using), connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    return True
