"""ContextSRH's question file: committed byte for byte, imported as 187 plain questions once, bad files refused naming
each bad line and storing nothing, a changed text refused."""

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from datasets.importers import ImportRejected
from datasets.importers.contextsrh import CONTEXTSRH_DATASET, CONTEXTSRH_FILE, import_contextsrh
from datasets.models import Dataset, Question

HEADER = "Source,Question,Sex,Location,Age\n"


def csv_bytes(*rows: str, header: str = HEADER) -> bytes:
    return (header + "".join(row + "\n" for row in rows)).encode("utf-8")


def test_the_committed_file_and_licence_are_the_shared_copies_byte_for_byte(shared_datasets):
    for name in (CONTEXTSRH_FILE.name, "LICENSE"):
        committed = (CONTEXTSRH_FILE.parent / name).read_bytes()
        assert committed == (shared_datasets / "contextsrh" / name).read_bytes(), name
    digest = hashlib.sha256(CONTEXTSRH_FILE.read_bytes()).hexdigest()
    assert digest == "436f12262634444eaeef6ffefecd9a66c77dbd96704617c0efd40c656224da75"  # as SOURCE.md says


@pytest.mark.django_db
def test_the_file_imports_as_187_questions_with_their_source_and_attributes():
    report = import_contextsrh()

    dataset = Dataset.objects.get(name=CONTEXTSRH_DATASET)
    assert (report.rows, report.questions_created, report.datasets_created) == (187, 187, [CONTEXTSRH_DATASET])
    assert dataset.licence == "MIT" and "Levy" in dataset.source and "2403.04858" in dataset.source
    questions = list(dataset.questions.order_by("external_id"))
    assert [q.external_id for q in questions] == [f"srh-{n:03d}" for n in range(1, 188)]
    assert all(q.base_id is None and q.levels == {} for q in questions)
    first, second, fourth = questions[0], questions[1], questions[3]
    assert first.text == "Do you always need a prescription to get birth control?"
    assert first.metadata == {"source": "Planned Parenthood", "attributes": ["age", "location"]}
    assert second.text == "If a guy uses a condom and pulls out before he comes, can you still get pregnant?"
    assert second.metadata["attributes"] == ["age"]
    assert fourth.metadata["attributes"] == ["age", "sex"]  # the yeast infections: Sex and Age marked
    assert questions[-1].text == "I'm worried I have Prostatitis, is it rare?"
    assert questions[-1].metadata == {"source": "Ask Alice", "attributes": ["age"]}
    counts = {name: sum(name in q.metadata["attributes"] for q in questions) for name in ("sex", "age", "location")}
    assert counts == {"sex": 64, "age": 106, "location": 55}
    sources = [q.metadata["source"] for q in questions]
    assert (sources.count("Planned Parenthood"), sources.count("Ask Alice")) == (116, 71)
    # Four texts end in a space in the file: kept as they are (the generator strips them).
    assert sum(q.text != q.text.rstrip() for q in questions) == 4
    assert "Questions per attribute: age 106, location 55, sex 64" in report.notes


@pytest.mark.django_db
def test_a_second_import_makes_nothing_new():
    import_contextsrh()
    again = import_contextsrh()

    assert (again.questions_created, again.questions_existing, again.datasets_used) == (0, 187, [CONTEXTSRH_DATASET])
    assert Question.objects.count() == 187


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (csv_bytes("Ask Alice,Q?,,,x", header="Source,Question,Sex,Age,Location\n"),
         ["line 1: expected the columns Source, Question, Sex, Location, Age, found Source, Question, Sex, Age, "
          "Location"]),
        (csv_bytes("Ask Alice,Is it normal?,,,x", "Ask Alice,Is it rare?,X,,", "Ask Alice,Is it late?,,yes,x"),
         ["line 3: a mark is \"x\" or empty, found Sex 'X'",
          "line 4: a mark is \"x\" or empty, found Location 'yes'"]),
        (csv_bytes("Ask Alice,Is it normal?,,,x", "Planned Parenthood,Is it rare?,,,"),
         ["line 3: no attribute marked: mark at least one of Sex, Location, Age"]),
        (csv_bytes("Ask Alice,  ,x,,", "Ask Alice,Is it normal?,,,x", ",Is it rare?,,,x"),
         ["line 2: Question is empty", "line 4: Source is empty"]),
        (csv_bytes("Ask Alice,Is it normal?,,,x", "Ask Alice,Is it normal? ,x,,", "Ask Alice,Why?,x,"),
         ["line 3: the same question as line 2", "line 4: 4 cells where the header has 5 columns"]),
    ],
    ids=["header", "mark", "no-attribute", "empty", "repeated-or-short"],
)  # fmt: skip
@pytest.mark.django_db
def test_a_bad_file_is_refused_with_every_bad_line_and_stores_nothing(content, expected):
    with pytest.raises(ImportRejected) as rejected:
        import_contextsrh(content)

    assert [str(error) for error in rejected.value.errors] == expected
    assert not Dataset.objects.exists() and not Question.objects.exists()


@pytest.mark.django_db
def test_a_changed_text_for_a_stored_id_is_refused_and_nothing_is_written():
    import_contextsrh(csv_bytes("Ask Alice,Is it normal?,,,x", "Ask Alice,Is it rare?,x,,"))

    with pytest.raises(ImportRejected) as rejected:
        import_contextsrh(csv_bytes("Ask Alice,Is it normal?,,,x", "Ask Alice,Is it common?,x,,", "Ask Alice,New?,x,,"))

    [error] = rejected.value.errors
    assert error.line == 3
    assert error.message.startswith(f"srh-002: {CONTEXTSRH_DATASET!r} holds it with a different text ('Is it rare?')")
    assert "never overwritten" in error.message
    assert sorted(Question.objects.values_list("text", flat=True)) == ["Is it normal?", "Is it rare?"]


@pytest.mark.django_db
def test_the_command_imports_the_committed_copy_or_a_file_into_a_named_dataset(tmp_path):
    out = StringIO()
    call_command("import_contextsrh", stdout=out)
    assert "Questions: 187 new, 0 already present" in out.getvalue()

    other = tmp_path / "few.csv"
    other.write_bytes(csv_bytes("Ask Alice,Is it normal?,,x,x"))
    call_command("import_contextsrh", "--file", str(other), "--dataset", "SRH trial", stdout=out)
    assert Dataset.objects.get(name="SRH trial").questions.get().metadata["attributes"] == ["age", "location"]

    other.write_bytes(csv_bytes("Ask Alice,Is it normal?,,,o"))
    with pytest.raises(CommandError, match="line 2: a mark is"):
        call_command("import_contextsrh", "--file", str(other), "--dataset", "SRH trial 2")
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_contextsrh", "--file", str(tmp_path / "missing.csv"))
    assert not Dataset.objects.filter(name="SRH trial 2").exists()
