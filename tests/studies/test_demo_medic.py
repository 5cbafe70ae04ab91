"""The demo's small MEDIC study (studies/demo_medic.py), run end to end in this process against the stand-in as
scripts/demo.sh configures it: 2 desires -> 2 questions -> 3 styles x 2 samples restyled, answered by two
sources, judged by two judge models (three parts each); the MEDIC report has every pair, the judges disagree
where the stand-in was told to; the committed medic.yaml is the same design at full size."""

from pathlib import Path

import pytest

from analysis.services import medic_report
from datasets.chains import question_kind
from datasets.demo import STAND_IN_PORT, seed_demo
from datasets.models import Answer, Question
from studies.demo_medic import JUDGE_ERRORS, STUDY_NAME, run_medic, seed_medic
from studies.medic_definition import DEFINITION, definition_text, styles_of
from studies.models import JudgeRating, JudgeReply
from studies.study_steps import steps_of
from tests.llm_server import FakeLLM, JudgeErrors

pytestmark = pytest.mark.django_db

SHARED_STYLES = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "medic" / "derived_styles_observed.jsonl"


def test_the_committed_medic_file_is_the_design_at_full_size():
    styles = styles_of(SHARED_STYLES)
    assert len(styles) == 95
    assert DEFINITION.read_text(encoding="utf-8") == definition_text(styles)


def test_the_demo_medic_study_runs_end_to_end_on_the_stand_in():
    seed_demo()
    demo = seed_medic(run=False)  # no stand-in yet: made, not run
    study = demo.study
    assert (demo.ran, study.name, study.items.count()) == (False, STUDY_NAME, 0)
    models = {model: JudgeErrors(rate, {}) for model, rate in JUDGE_ERRORS.items()}
    with FakeLLM(port=STAND_IN_PORT, judge_models=models):
        run_medic(study)
        again = seed_medic(run=False)  # a second seed adds nothing
    assert again.study == study

    ask, restyle = steps_of(study.definition)
    assert question_kind.progress(ask)["made"] == 2
    restyled = Question.objects.filter(dataset=restyle.output)
    assert restyled.count() == 2 * 3 * 2 and all(q.metadata["usable"] for q in restyled)
    assert {q.levels["grade"] for q in restyled} == {"6", "8", "14"}
    assert Answer.objects.filter(study_links__study=study).count() == 2 * 14
    assert study.items.count() == 28
    # Six judges (two models x three parts), one valid reply each per item.
    assert JudgeRating.objects.filter(item__study=study).count() == 6 * 28
    assert not JudgeReply.objects.filter(item__study=study).exclude(errors={}).exists()

    report = medic_report(study)
    pairs = set(zip(report.means["source"], report.means["judge"], strict=True))
    assert pairs == {(a, j) for a in ("Stand-in answerer A (demo)", "Stand-in answerer B (demo)")
                     for j in ("Stand-in MEDIC judge A (demo)", "Stand-in MEDIC judge B (demo)")}  # fmt: skip
    assert set(report.means["factor"]) >= {"", "style", "grade", "descriptor"}
    mean_row = report.agreement[report.agreement["category"] == "mean"]
    assert 0 < float(mean_row["percent_agreement"].item()) < 1  # judge B was told to err
    assert len(report.generalisation) and set(report.generalisation["n_pairs"]) <= {0, 1, 2, 3, 4}
