"""Every script under benchmarks/ runs at a smoke size and prints the figures it promises, so that a change of
the models or services cannot leave a benchmark broken until someone next needs it.

Each script runs as its own process, as a person runs it, on DATABASE_URL's server (scripts that need a database
make a throw-away test_benchmark_<pid> one beside the test run's). The scripts with a Celery worker use a Redis
database of their own (BROKER), never the test run's broker (db 15) or cache (db 14). The sizes are for
correctness, not timing: the figures printed here mean nothing.
"""

import os
import re
import subprocess
import sys

import pytest

from tests import local_model
from tests.conftest import REPO, SHARED_DATASETS

BENCHMARKS = REPO / "benchmarks"
BROKER = "redis://127.0.0.1:6379/13"
RESPONSES = SHARED_DATASETS / "biasmedqa" / "model_responses" / "model_responses_qid0-49.csv"
TIMEOUT = 900  # seconds: a smoke run takes a few (the local model minutes when loaded); this stops a hang


def case(name: str, arguments: list[str], expected: list[str], *marks):
    """One script: its smoke arguments and the patterns (regular expressions) its output must contain."""
    return pytest.param(name, arguments, expected, id=name, marks=list(marks))


CASES = [
    case(
        "embedding",
        ["--answers", "50"],
        [
            r"embedded 50 answers in [\d.]+ s = \d+ answers/s",
            r"mean word pieces per answer: \d+",
            r"vectors: 50 x 384 float32",
            r"peak RSS: \d+ MiB",
            r"load average \(1 min\) before [\d.]+, after [\d.]+",
        ],
    ),
    case(
        "analysis",
        ["--scales", "1000", "--naive-budget", "5", "--sample", "10", "--database", "1000"],
        [
            r"\| ratings \| rates cells \| engine: full report \(s\) \|",
            r"\n\| 1,000 \| [\d,]+ \| [\d.]+ \|",
            r"straightforward: [\d,]+ cells",
            r"Database: 1,000 ratings imported with import_ratings in \d+ s",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "analysis_plan",
        ["--repeat", "1", "--questions", "5"],
        [
            r"[1-9][\d,]* answers, [\d,]+ scores, [1-9]\d* table rows",
            r"\| step \| seconds \(median of 1\) \|",
            r"\| load outcomes \| [\d.]+ \|",
            r"\| plan_table end to end \(no plot\) \| [\d.]+ \|",
            r"Peak Python memory while loading: \d+ MiB",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "assignment",
        ["--items", "200", "--raters-per-pool", "5", "--claims", "20"],
        [
            r"items: 200, slots: 1,800",
            r"assign_study physician \(5 raters\)\s+[\d.]+ s\n  assigned 600, unassignable 0",
            r"assignment of 1,800 ratings across 3 pools",
            r"claim_items x20 on 200 items: [\d.]+ s = [\d.]+ ms per claim",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "export",
        ["--ratings", "1000", "--small", "500"],
        [
            r"500 ratings\s+500 rows in\s+[\d.]+ s",
            r"1,000 ratings\s+1,000 rows in\s+[\d.]+ s",
            r"export's peak allocation\s+[\d.]+ MiB",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "generate_variants",
        [],  # the whole of MedQA: a few seconds
        [
            r"base: 1273 questions",
            r"\| first \(seed 0\) \| 8911 \| 8911 \| 0 \|",
            r"\| again \(seed 0\) \| 8911 \| 0 \| 8911 \|",
            r"\| seed 1 \| 8911 \|",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "generation",
        ["--answers", "8", "--concurrency", "1", "2", "--latency", "0.05", "--broker", BROKER],
        [
            r"\| C \| answers \| seconds \| answers/s \|",
            r"\n\| 2 \| 8 \| [\d.]+ \|",
            r"no duplicates: every run stored exactly 8 answers",
        ],
        pytest.mark.postgresql,
        pytest.mark.integration,
    ),
    case(
        "import_biasmedqa_release",
        ["--path", str(RESPONSES)],
        [
            r"first import: (\d+) rows in [\d.]+ s = \d+ rows/s; .*answers \1 new, 0 present; variants [1-9]\d* new",
            r"second import: (\d+) rows in [\d.]+ s = \d+ rows/s; .*answers 0 new, \1 present; variants 0 new",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "import_memory",
        ["--sizes", "1", "--bomb-mb", "2"],
        [
            r"questions_1mb\.csv\s+1\.0\s+1018 ",
            r"answers_1mb\.jsonl\s+1\.0\s+1018 ",
            r"workbook: expands to 2 MB; refused: ",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "import_questions",
        [],  # MedQA and the BiasMedQA injections: a few seconds
        [
            r"first import test\.jsonl\s+1273 rows .*\(1273 new / 0 present\)",
            r"re-import    biasmedqa_injections\.jsonl\s+8911 rows .*\(0 new / 8911 present\)",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "local_model",
        ["--prompts", "1"],
        [
            r"server start: [\d.]+ s",
            r"Q-Pain request with top-5 log-probabilities: [\d.]+ s per request",
            r"P\(No\) at the first token: \[",
            r"prompt evaluation: \d+ tokens/s",
            r"generation: [\d.]+ tokens/s",
        ],
        pytest.mark.slow,
    ),
    case(
        "judge_local_model",
        ["--items", "3"],
        [
            r"3 items x 1 repeat\(s\), judge on smollm2-135m .*response_format json_object",
            r"\| valid at the first reply \| \d+ / 3 = \d+ % \|",
            r"\| valid after retries \(rated\) \| \d+ / 3 = \d+ % \|",
            r"\| seconds per call: mean / median \| [\d.]+ / [\d.]+ \|",
            r"load average \(1, 5, 15 min\) before [\d. ]+, after [\d. ]+",
            r"finished: every \(item, repeat\) ended rated \(\d+\) or failed \(\d+\); no call left",
        ],
        pytest.mark.postgresql,
        pytest.mark.slow,
    ),
    case(
        "judge_run",
        ["--items", "40", "--concurrency", "2", "4", "--latency", "0.05", "--invalid-rate", "0.3", "--broker", BROKER],
        [
            r"40 items x 1 repeat\(s\) of a one-answer study",
            r"\| C \| \(item, repeat\) \| seconds \| replies \| replies/s \|",
            r"\n\| 2 \| 40 \| [\d.]+ \| \d+ \| [\d.]+ \| 40 \| \d+ % \| [12] \| [\d.]+ % \| \d+ \| \d+ \| \d+ \|",
            r"\n\| 4 \| 40 \| [\d.]+ \| \d+ \| [\d.]+ \| 80 \| \d+ % \| [1-4] \| [\d.]+ % \| [1-9]\d* \| \d+ \| \d+ \|",
            r"load average \(1, 5, 15 min\) before [\d. ]+, after [\d. ]+",
            r"bookkeeping: every \(item, repeat\) ended with exactly one rating, or failed after 3 invalid replies",
        ],
        pytest.mark.postgresql,
        pytest.mark.integration,
    ),
    case(
        "medic_chain",
        [
            "--desires",
            "2",
            "--styles",
            "3",
            "--samples",
            "2",
            "--concurrency",
            "2",
            "--latency",
            "0.02",
            "--broker",
            BROKER,
        ],
        [
            r"MEDIC's chain: 2 desires -> 2 questions -> 3 styles x 2 samples restyled",
            r"\| steps \(maker\) \| 14 \| [\d.]+ \| [\d.]+ \| 100 \| \d+ % \| 14 questions \|",
            r"\| answers \(2 sources\) \| 28 \| [\d.]+ \| [\d.]+ \| 200 \| \d+ % \| 28 answers \|",
            r"\| judges \(2 models x 3 parts\) \| 168 \| [\d.]+ \| [\d.]+ \| 200 \| \d+ % \| 168 judge ratings \|",
            r"peak in flight [1-4] \(at most 4 .*\); failed calls 0",
        ],
        pytest.mark.postgresql,
        pytest.mark.integration,
    ),  # fmt: skip
    case(
        "medic_local_model",
        [],
        [
            r"MEDIC's chain for one desire on smollm2-135m",
            r"\| generation steps \| 7 \| [\d.]+ \| [\d.]+ / [\d.]+ \| \d+ questions, \d+ flagged unusable",
            r"\| answers \| \d+ \| [\d.]+ \|",
            r"\| MEDIC treatment judge \(SmolLM2 \(judge\)\) \| \d+ \|",
            r"load average \(1, 5, 15 min\) before [\d. ]+, after [\d. ]+",
        ],
        pytest.mark.postgresql,
        pytest.mark.slow,
    ),
    case(
        "judge_agreement",
        ["--items", "200", "--repeats", "2", "--human-items", "50"],
        [
            r"ratings: 950 \(800 by judges, 150 by people\)",
            r"\| agreement_table \| [1-9][\d,]* \| [\d.]+ \| [\d,]+ \|",
            r"\| judge_assisted_table \| [1-9][\d,]* \| [\d.]+ \| [\d,]+ \|",
            r"\| judge_place_table \| [1-9][\d,]* \| [\d.]+ \| [\d,]+ \|",
            r"\| consistency_table \| [1-9][\d,]* \| [\d.]+ \| [\d,]+ \|",
            r"load average \(1 min\) before [\d.]+, after [\d.]+",
        ],
    ),
    case(
        "contextsrh_stats",
        ["--models", "1", "--repeat", "1"],
        [
            r"results: [\d,]+ rows \(1,518 scorer, [\d,]+ human\), 1 models x 1,518 context answers",
            r"\| similarity_frame \| 1,518 \| [\d.]+ \|",
            r"\| people_labels \+ verdicts \| [1-9][\d,]* \| [\d.]+ \|",
            r"\| contextsrh_tables end to end \| 24 \| [\d.]+ \|",
            r"tables: similarity.csv 18, group_tests.csv 3, human_agreement.csv 3",
            r"load average \(1 min\) before [\d.]+, after [\d.]+",
            r"Peak resident memory: \d+ MiB",
        ],
    ),
    case(
        "paired_statistics",
        ["--sources", "1", "--blocks", "20", "--repeat", "1"],
        [
            r"observations: 160 rows",
            r"\| paired_tests \| 28 \| [\d.]+ \|",
            r"\| group_means \| \d+ \| [\d.]+ \|",
            r"\| heat_figure PNG \(first 4 panels\) \| - \| [\d.]+ \|",
        ],
    ),
    case(
        "qpain_plan",
        ["--repeat", "1", "--blocks", "3"],
        [
            r"600 answers, [\d,]+ values \(answer x outcome\), [1-9]\d* paired tests",
            r"\| paired_tests.csv \(compute\) \| [\d.]+ \|",
            r"\| both plans end to end \(plan_table x 2\) \| [\d.]+ \|",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "qpain_requests",
        ["--vignettes", "1", "--limits", "1", "--latency", "0.01", "--broker", BROKER],
        [
            r"8 Q-Pain variants x 5 sources",
            r"\n\| 1 \| 5 \| 40 \| [\d.]+ \|",
            r"Every round: 40 requests to /completions with logprobs 5, 40 distinct",
        ],
        pytest.mark.postgresql,
        pytest.mark.integration,
    ),
    case(
        "recipe_bounds",
        [],  # 5, 6 and 7 pairs: under a second each
        [
            r"\n    5 +[\d.]+ .*rendered 700,188 characters",
            r"\n    6 +[\d.]+ .*refused: ",
            r"\n    7 +[\d.]+ .*refused: ",
        ],
    ),
    case(
        "results_table",
        ["--answers", "200", "--ratings", "60", "--repeat", "1"],
        [
            r"200 answers x 2 scorers \+ 60 ratings: 664 rows \(264 human, 400 scorer;",
            r"\| results_table \| 664 \| [\d.]+ \|",
            r"\| release_frames \(the four tables' input\) \| 60 \| [\d.]+ \|",
            r"\| plan_outcomes \(biasmedqa-accuracy\) \| 200 \| [\d.]+ \|",
            r"\| today: loading.load_frames \| 60 \| [\d.]+ \|",
            r"Peak resident memory: \d+ MiB \(\d+ MiB before the first step\)",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "score_answers",
        ["--path", str(RESPONSES)],
        [
            r"first run: (\d+) answers in [\d.]+ s = \d+ answers/s; .*'scored': \1,",
            r"second run: \d+ answers in [\d.]+ s = \d+ answers/s; .*'scored': 0,",
        ],
        pytest.mark.postgresql,
    ),
    case(
        "stand_in_run",
        ["--questions", "2", "--concurrency", "2", "--broker", BROKER],
        [r"14 BiasMedQA variants x", r"\| 14 \| 14 \| 14 \| [\d.]+ \|", r"answers by letter: \{'[A-E]'"],
        pytest.mark.postgresql,
        pytest.mark.integration,
    ),
]


def test_every_benchmark_has_a_smoke_run():
    scripts = {path.stem for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_")}
    covered = {param.values[0] for param in CASES}
    assert scripts - covered == set(), "benchmarks without a smoke run here: add them to CASES"
    assert covered - scripts == set(), "smoke runs of benchmarks that no longer exist"


def skip_or_fail_without_what_it_needs(request) -> None:
    database = os.environ.get("DATABASE_URL", "postgres://")  # the scripts' own default is PostgreSQL
    if request.node.get_closest_marker("postgresql") and not database.startswith("postgres"):
        pytest.fail(
            "the benchmarks run on PostgreSQL: run the tests with scripts/test.sh (DATABASE_URL=postgres://...)"
        )
    # The local model's rules (tests/datasets/test_local_model.py); installed, the script starts its own server.
    needs_model = request.node.callspec.params["name"] in {"local_model", "judge_local_model", "medic_local_model"}
    if needs_model and os.environ.get("LOCAL_MODEL_SKIP") == "1" and not local_model.is_installed():
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs the local model's tests, but it is not installed and LOCAL_MODEL_SKIP=1")
        pytest.skip("the local model is not installed and LOCAL_MODEL_SKIP=1 (scripts/local_model.sh install)")


@pytest.mark.parametrize(("name", "arguments", "expected"), CASES)
def test_benchmark_runs_at_a_smoke_size(name, arguments, expected, shared_datasets, request):
    skip_or_fail_without_what_it_needs(request)
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *arguments], cwd=REPO, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip
    output = f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr[-5000:]}"
    assert result.returncode == 0, output
    missing = [pattern for pattern in expected if not re.search(pattern, result.stdout)]
    assert not missing, f"not in the output: {missing}\n{output}"
