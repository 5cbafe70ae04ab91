"""ContextSRH in Chromium, from the generator to Table 1, at desktop and phone widths: a coordinator makes the context
variants on the variant page; the originals and variants are answered by a stand-in model under ContextSRH's recipe
and read by `minilm_cosine`; two experts mark, in the browser, the groups each answer without context is correct
for (one marks a group fewer, so they disagree); the analyst reads Table 1 (Avg, % Win, % Human), the tests and the
agreement, and the plot. No page scrolls sideways."""

import io

import pytest
from django.core.management import call_command

from datasets.generation import jobs
from datasets.models import Answer, Question
from datasets.variants.contextsrh_recipes import ensure_contextsrh_recipe
from engine import lanes
from raters.models import RaterPool
from scoring.models import Score
from studies.assignment import assign_study
from studies.contextsrh_study import contextsrh_file
from studies.models import Assignment, Rating
from studies.study_files import load_study_text
from tests.browser.conftest import _open_page, log_in, screenshot
from tests.factories import (
    PASSWORD,
    AnalystFactory,
    AnswerSourceFactory,
    CoordinatorFactory,
    DatasetFactory,
    OnboardedRaterFactory,
    QuestionFactory,
)
from tests.llm_server import FakeLLM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
SUBMIT = "form[data-rate-form] button[type=submit]"
QUESTIONS = [
    ("srh-004", "I keep getting yeast infections. What causes them?", ["age", "sex"]),
    ("srh-024", "Is abortion still legal?", ["location"]),
    ("srh-021", "How do I know if I have a yeast infection?", ["sex"]),
]
# What each expert marks the answer without context correct for: the second leaves out 10-year-olds and men.
LEAVES_OUT = {0: set(), 1: {"10", "male"}}


def originals():
    dataset = DatasetFactory(name="ContextSRH questions (three)")
    for external_id, text, attributes in QUESTIONS:
        QuestionFactory(dataset=dataset, external_id=external_id, text=text,
                        metadata={"source": "Planned Parenthood", "attributes": attributes})  # fmt: skip
    return dataset


def rate(page, assignment: Assignment, leaves_out: set[str], width: int, rater: int) -> None:
    page.goto(f"/rate/{assignment.pk}/")
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    page.check("input[name=relevant][value=all]")
    boxes = page.locator("input[name=correct_for]")
    for index in range(boxes.count()):
        box = boxes.nth(index)
        value = box.get_attribute("value")
        if value != "not_applicable" and value not in leaves_out:
            box.check()
    if assignment.item.answer.question.external_id == "srh-004":
        screenshot(page, f"contextsrh-rating-{width}-rater-{rater}")
    with page.expect_navigation():
        page.click(SUBMIT)


@pytest.mark.parametrize("width", [1280, 390])
def test_contextsrh_from_the_generator_to_table_1(browser, live_server, width):
    coordinator, analyst = CoordinatorFactory(), AnalystFactory()
    experts = [OnboardedRaterFactory(pool="equity_expert") for _ in range(2)]
    base = originals()
    recipe = ensure_contextsrh_recipe()
    phone = {"is_mobile": True, "has_touch": True} if width == 390 else {}
    with FakeLLM() as server:
        source = AnswerSourceFactory(name="Stand-in", base_url=server.base_url, model_name="stand-in", concurrency=1)
        context, page = _open_page(browser, live_server, viewport={"width": width, "height": 900}, **phone)
        page.set_default_timeout(30_000)  # the variant run runs inline (eager Celery) in the request
        try:
            log_in(page, coordinator.username, PASSWORD)
            page.goto("/datasets/variants/new/")
            page.select_option("#id_generator", "contextsrh")
            page.select_option("#id_base_dataset", str(base.pk))
            with page.expect_navigation():
                page.get_by_role("button", name="Make the variants").click()
            page.locator("[data-field=status]", has_text="Finished").wait_for()
            # 10 ages + 2 sexes, 6 states, 2 sexes
            assert page.locator("[data-field=summary]").text_content() == "20 of 20 variants (100 %)"
            assert page.evaluate(NO_SIDEWAYS_SCROLL)
            page.context.clear_cookies()

            # The study as its file says; answers, scores and items as README's "Running ContextSRH" runs them.
            variants = Question.objects.filter(base__dataset=base).first().dataset
            study = load_study_text(contextsrh_file(
                name="ContextSRH (browser)", description="", originals=base.name, variants=variants.name,
                answerers=[source.name], pools={RaterPool.objects.get(slug="equity_expert").name: 2},
            )).study  # fmt: skip
            for dataset in (base, variants):
                jobs.start_job(dataset=dataset, source=source, recipe=recipe, study_id=study.pk)
            lanes.run_lane(source.endpoint_id, 0)
            assert Answer.objects.filter(study_links__study=study).count() == 3 + 20
            call_command("score_answers", "--scorer", "minilm_cosine", "--study", str(study.pk), stdout=io.StringIO())
            assert Score.objects.filter(scorer="minilm_cosine", outcome="measured").count() == 20
            call_command("items_from_answers", "--study", str(study.pk), "--base-only", "--expect", "relevant=all",
                         stdout=io.StringIO())  # fmt: skip
            assign_study(study=study, pool_id=RaterPool.objects.get(slug="equity_expert").pk)

            for number, expert in enumerate(experts):
                log_in(page, expert.username, PASSWORD)
                mine = Assignment.objects.filter(rater=expert.rater_profile).select_related("item__answer__question")
                assert mine.count() == 3
                for assignment in mine.order_by("position"):
                    rate(page, assignment, LEAVES_OUT[number], width, number + 1)
                page.context.clear_cookies()

            log_in(page, analyst.username, PASSWORD)
            page.goto(f"/analysis/studies/{study.pk}/contextsrh/")
            age = page.locator("[data-table1=age]")
            assert age.locator("tbody tr").count() == 10
            ten = age.locator("tbody tr", has_text="10").first.locator("td")
            assert ten.nth(2).text_content() == "0.0"  # % Human: one of two experts left out 10-year-olds
            assert page.locator("[data-table1=sex] tbody tr").count() == 2
            assert page.locator("[data-table1=location] tbody tr").count() == 6
            assert "Wilcoxon's signed-rank test over 2 questions" in page.locator("[data-tests]").text_content()
            plot = page.locator("figure.plot img").first
            plot.scroll_into_view_if_needed()
            page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=plot.element_handle())
            assert page.evaluate(NO_SIDEWAYS_SCROLL)
            screenshot(page, f"contextsrh-table1-{width}")
        finally:
            context.close()

    ratings = Rating.objects.filter(assignment__item__study=study)
    assert ratings.count() == 6 and all(r.attention_check_passed for r in ratings)
    yeast = ratings.filter(
        assignment__rater=experts[1].rater_profile, assignment__item__answer__question__external_id="srh-004"
    ).get()
    assert yeast.values == {"relevant": "all", "correct_for": ["15", "18", "21", "25", "30", "40", "50", "60", "70",
                                                               "female"]}  # fmt: skip
