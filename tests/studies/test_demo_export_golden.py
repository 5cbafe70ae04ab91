"""The demo's ratings export, byte for byte as it was before the study model (issue 18).

The golden files are the export of `seed_demo` on main @ bed4c1d, with only the submission times masked (the
demo stamps ratings with the time it runs). The authors' notebook reads these files: a change here must be a
deliberate change of the export format, never a side effect. The demo's judged study (issue 19,
studies/demo_judges.py) came later and gives the Q-Pain profiles race and gender levels, which add their columns:
so the demo is seeded here as it was then, without it.
"""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from datasets.demo import seed_demo
from studies.demo import seed_demo_studies
from studies.demo_ratings import seed_simulated_ratings

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden" / "demo_export"
SUBMITTED_AT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def masked(path: Path) -> bytes:
    return SUBMITTED_AT.sub("<submitted_at>", path.read_bytes().decode()).encode()


def test_the_demo_export_of_questions_without_levels_is_byte_identical_to_the_golden_files(tmp_path):
    seed_demo()
    seed_demo_studies()
    seed_simulated_ratings()
    call_command("export_ratings", out=tmp_path, stdout=StringIO())

    written = sorted(path.name for path in tmp_path.glob("ratings_*.csv"))
    assert written == sorted(path.name for path in GOLDEN.glob("ratings_*.csv"))
    for name in written:
        actual, expected = masked(tmp_path / name), (GOLDEN / name).read_bytes()
        if actual != expected:
            artifacts = Path("artifacts") / "demo_export"
            artifacts.mkdir(parents=True, exist_ok=True)
            (artifacts / name).write_bytes(actual)
        assert actual == expected, f"{name} differs from the golden export (the actual file: artifacts/demo_export)"
