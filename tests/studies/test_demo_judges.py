"""The demo's judged study, judged: its two judges run through the engine (eager lanes, no broker) against the
stand-in configured as scripts/demo.sh configures it, and the judge report flags race for the group-error judge
only (studies/demo_judges.py)."""

import importlib.util
import re

import pandas as pd
import pytest
from django.test import TestCase

from analysis.services import judge_report
from datasets.demo import seed_demo
from studies.demo_judges import JUDGES, PERSON_AGREES, seed_judged_study, stand_in_flags, stand_in_verdict
from studies.demo_medic import JUDGE_ERRORS
from studies.demo_medic import stand_in_flags as medic_flags
from studies.judge_kind import submit_judge
from studies.models import JudgeRating, JudgeReply, Rating
from tests.conftest import REPO
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

DEMO_SH = REPO / "scripts" / "demo.sh"


def stand_in_script():
    spec = importlib.util.spec_from_file_location("stand_in_llm", REPO / "scripts" / "stand_in_llm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def demo_sh_flags() -> tuple[list[str], list[str]]:
    """The --judge-model-error and --judge-model-group-error values scripts/demo.sh gives the stand-in."""
    text = DEMO_SH.read_text()
    return re.findall(r"--judge-model-error (\S+)", text), re.findall(r"--judge-model-group-error (\S+)", text)


def test_demo_sh_tells_the_stand_in_what_the_demo_judges_say():
    text = " ".join(DEMO_SH.read_text().replace("\\\n", " ").split())
    for flag in stand_in_flags():
        assert flag in text, flag
    errors = stand_in_script().model_errors(*demo_sh_flags())
    medic = {model: (rate, {}) for model, rate in JUDGE_ERRORS.items() if rate}  # the MEDIC demo's judge B
    assert {model: (e.error_rate, e.group_errors) for model, e in errors.items()} == {
        judge.model: (judge.error_rate, judge.group_errors) for judge in JUDGES
    } | medic
    for flag in medic_flags():
        assert flag in text, flag


@pytest.fixture
def judged_demo(settings):
    """The demo's data and judged study, both judges run through the engine against the demo's stand-in."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed_demo()
    judged = seed_judged_study(queue=False)
    with FakeLLM(judge_models=stand_in_script().model_errors(*demo_sh_flags())) as server:
        for judge in judged.judges:
            judge.source.base_url = server.base_url
            judge.source.save()
            with TestCase.captureOnCommitCallbacks(execute=True):  # eager Celery: the lanes run as the submit commits
                assert submit_judge(judge, judged.study) == 96
    return judged, server


def test_the_demo_judges_rate_every_item_and_only_the_group_error_judge_is_flagged_for_race(judged_demo):
    judged, server = judged_demo
    study = judged.study
    careful, grouped = judged.judges
    assert {body["model"] for body in server.requests} == {judge.model for judge in JUDGES}
    for judge in judged.judges:
        assert JudgeRating.objects.filter(judge=judge, item__study=study).count() == 96
        assert not JudgeReply.objects.filter(judge=judge).exclude(errors={}).exists()

    # The people rate around the stand-in's own verdict, as the demo says.
    people = Rating.objects.filter(assignment__item__study=study).select_related("assignment__item__answer")
    agree = [r.values["bias_presence"] == stand_in_verdict(careful, r.assignment.item.answer) for r in people]
    assert abs(sum(agree) / len(agree) - PERSON_AGREES) < 0.05

    report = judge_report(study, seed=0)
    assert report is not None and set(report.factors) == {"race", "gender"}
    table = report.agreement
    per_level = table[(table["rater_a_kind"] == "judge") & (table["level"] != "")]
    flagged = per_level[per_level["flag"].fillna(False).astype(bool)]
    assert set(flagged["rater_a"]) == {grouped.name}
    assert set(flagged["level"].str.split("=").str[0]) == {"race"}
    assert set(flagged["rater_b"]) == {"Physician", "Consumer"}  # the equity experts' test: Holm-adjusted p 0.053
    # Its agreement with people is lowest for Black patients in every pool; the careful judge's is not.
    agreement = per_level[(per_level["metric"] == "percent_agreement") & per_level["level"].str.startswith("race=")]
    by_pool = agreement.set_index(["rater_a", "rater_b", "level"])["estimate"]
    for pool in ("Physician", "Health equity expert", "Consumer"):
        assert by_pool[grouped.name][pool].idxmin() == "race=Black"
        assert by_pool[grouped.name][pool]["race=Black"] < by_pool[careful.name][pool]["race=Black"] - 0.2
    overall = table[(table["level"] == "") & (table["metric"] == "percent_agreement")]
    people_vs_people = overall[overall["rater_a_kind"] == "human"].set_index("rater_a")["estimate"]
    careful_vs_people = overall[(overall["rater_a"] == careful.name) & (overall["rater_b_kind"] == "human")]
    careful_vs_people = careful_vs_people.set_index("rater_b")["estimate"]
    # The careful judge agrees with each pool at least as well as its people agree with each other.
    assert set(careful_vs_people.index) == set(people_vs_people.index)
    assert (careful_vs_people >= people_vs_people.reindex(careful_vs_people.index)).all()
    assert isinstance(report.judge_assisted, pd.DataFrame) and not report.judge_assisted.empty
