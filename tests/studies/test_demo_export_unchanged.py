"""The demo's ratings export is what it was before typed rubrics, byte for byte (issue 18: the release format
for questions without levels never changes, so the authors' notebook keeps running).

"Before" is pinned as the SHA-256 of each file written by main @ bed4c1d (the last commit with kind-keyed
rubrics) from `manage.py seed_demo`, with the `submitted_at` column left out (the simulated ratings are
imported without a time, so they get the time of the import); every other byte counts.
"""

import csv
import hashlib
import io

import pytest

from datasets.demo import seed_demo
from studies.demo import seed_demo_studies
from studies.demo_ratings import seed_simulated_ratings
from studies.exports import write_csv_files

pytestmark = pytest.mark.django_db
BEFORE = {
    "ratings_independent.csv": ("9b610f6262fd8deda17603732d1c839ce9b7c44a899f600b9efde835f1939f1d", 433),
    "ratings_pairwise.csv": ("21a382897e46c72e9ff86506ab997c75e675c8e10be14b872cb01f5772205622", 289),
    "ratings_counterfactual.csv": ("49f1c88ca31a7c1eb7fba693c7b601e5ec39e0ac0e91b5111b14e3583d1b92d7", 145),
}


def fingerprint(path) -> tuple[str, int]:
    rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    timed = rows[0].index("submitted_at")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow(row[:timed] + row[timed + 1 :])
    return hashlib.sha256(out.getvalue().encode()).hexdigest(), len(rows)


def test_the_demo_export_is_byte_for_byte_what_it_was(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed_demo()
    seed_demo_studies()
    seed_simulated_ratings()

    write_csv_files(tmp_path)

    assert {name: fingerprint(tmp_path / name) for name in BEFORE} == BEFORE
