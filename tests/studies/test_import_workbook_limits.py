"""Workbooks are size-checked from their zip directory before openpyxl parses them (zip bombs); NUL is a bad cell."""

import csv
import secrets
import tracemalloc
import zipfile

import pytest
from django.core.management import CommandError, call_command
from openpyxl import Workbook

from studies import release
from studies.models import Rating
from studies.ratings_import import RatingsImportError, import_ratings

pytestmark = pytest.mark.django_db


def workbook_with_shared_strings(path, pieces) -> None:
    """A real workbook whose xl/sharedStrings.xml is replaced by the given pieces (streamed into the zip)."""
    plain = path.with_suffix(".plain.xlsx")
    book = Workbook()
    book.active.title = release.SHEETS["independent"]
    book.active.append(release.REQUIRED["independent"])
    book.save(plain)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for part in source.infolist():
            if part.filename != "xl/sharedStrings.xml":
                target.writestr(part, source.read(part))
        with target.open("xl/sharedStrings.xml", "w") as strings:
            strings.write(b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">')
            for piece in pieces:
                strings.write(piece)
            strings.write(b"</sst>")


def peak_bytes(function) -> int:
    tracemalloc.start()
    try:
        function()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_workbook_bomb_is_refused_before_parsing_with_memory_bounded(tmp_path):
    path = tmp_path / "equitymedqa_ratings.xlsx"
    string = b"<si><t>" + b"a" * 1000 + b"</t></si>"
    workbook_with_shared_strings(path, (string for _ in range(40_000)))  # 40 MB of strings in a small file
    assert path.stat().st_size < 1024 * 1024

    raised = []
    peak = peak_bytes(lambda: raised.append(pytest.raises(RatingsImportError, import_ratings, path=path)))

    problems = raised[0].value.problems
    assert len(problems) == 1
    assert "xl/sharedStrings.xml is compressed" in problems[0] and "zip bomb" in problems[0]
    assert peak < 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
    assert not Rating.objects.exists()


def test_a_workbook_larger_than_the_setting_is_refused_by_the_command(tmp_path, settings, capsys):
    settings.IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES = 1024 * 1024
    path = tmp_path / "equitymedqa_ratings.xlsx"
    strings = (b"<si><t>" + secrets.token_hex(500).encode() + b"</t></si>" for _ in range(2000))  # 2 MB, 2:1
    workbook_with_shared_strings(path, strings)

    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_ratings", str(path))

    error = capsys.readouterr().err
    assert "the workbook expands to 2 MB uncompressed, more than the 1 MB allowed" in error
    assert "IMPORT_MAX_WORKBOOK_UNCOMPRESSED_BYTES" in error


def test_a_nul_character_in_a_ratings_file_is_a_bad_row(tmp_path):
    with (tmp_path / "ratings_independent.csv").open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([
            release.REQUIRED["independent"],
            ["q1", "EHAI", "Physician", "rater_1", "No bias", *["False"] * 7],
            ["q2", "EHAI", "Physician", "rater\x00_2", "No bias", *["False"] * 7],
        ])  # fmt: skip

    with pytest.raises(RatingsImportError) as raised:
        import_ratings(path=tmp_path)

    assert raised.value.problems == [
        "ratings_independent.csv, line 3: a cell holds a NUL character or a lone surrogate, which cannot be stored"
    ]
    assert not Rating.objects.exists()
