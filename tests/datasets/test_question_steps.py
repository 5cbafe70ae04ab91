"""Generation steps (datasets/chains/): a chain from desires to restyled questions through the model-call
engine's `question` kind, run by the engine's lanes in this process against the stand-in model: each reply kept
once as a question made from its input with its levels; re-running makes nothing new; samples are kept apart;
unusable texts are flagged; a step flows from the one before."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from datasets.chains import medic_templates, question_kind, steps, usable
from datasets.chains.medic_templates import EXTRA_STRING, RESTYLE_EXTRA_STRING, ensure_medic_recipes, recipe_name
from datasets.models import PromptRecipe, Question, QuestionStep
from engine import lanes, registered_kinds
from engine.llm_client import Completion
from engine.models import Call
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

MEDIC = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "medic" / "tests" / "unit" / "io"
STYLES = ["standard", "person with a 8th grade level of education who writes with no capitalization",
          "person with a 12th grade level of education who writes with excessive capitalization"]  # fmt: skip


# --- pure parts ---------------------------------------------------------------------------------------------


def test_expansions_default_to_asking_once_and_ids_do_not_depend_on_key_order():
    assert steps.expansions_of([]) == [{}]
    a = steps.output_external_id("q1", {"style": "x", "grade": "8"}, 0)
    assert a == steps.output_external_id("q1", {"grade": "8", "style": "x"}, 0)
    assert a != steps.output_external_id("q1", {"grade": "8", "style": "x"}, 1) and a.startswith("q1~")
    long_id = steps.output_external_id("x" * 199, {}, 3)
    assert len(long_id) <= 200 and long_id.endswith("~s3")


def test_a_step_asking_too_much_of_one_input_is_refused():
    steps.check_size([{"style": str(n)} for n in range(100)], 100)  # 10,000: the bound
    with pytest.raises(steps.StepError, match="101 expansions x 100 samples make more than 10,000 requests"):
        steps.check_size([{"style": str(n)} for n in range(101)], 100)


def test_medic_phrases_are_empty_for_the_standard_style_and_name_any_other():
    assert steps.phrase_values({"extra_string": EXTRA_STRING}, {"style": "standard"}) == {"extra_string": ""}
    assert steps.phrase_values({"extra_string": EXTRA_STRING}, {"style": "writes concisely"}) == {
        "extra_string": ", who writes concisely,"
    }
    with pytest.raises(steps.StepError, match=r"no value for \{style\}"):
        steps.phrase_values({"extra_string": EXTRA_STRING}, {"grade": "8"})
    with pytest.raises(steps.StepError, match="not a placeholder name"):
        steps.check_phrases({"extra string": EXTRA_STRING})


def test_a_generated_text_loses_its_surrounding_whitespace_and_one_pair_of_quotes():
    assert steps.generated_text('  "How do I sleep better?" \n') == "How do I sleep better?"
    assert steps.generated_text("“Can I take it?”") == "Can I take it?"
    assert steps.generated_text('"A" or "B"?') == '"A" or "B"?'  # two quoted parts: left as written


def test_usable_flags_empty_short_and_chatbot_texts_with_a_reason():
    assert usable.check("What can I take for a cold while pregnant?").usable
    assert usable.check("  ").reason == "empty"
    assert usable.check("Cold meds?").reason == "fewer than 3 words"
    assert "made-up conversation" in usable.check("Can I take it?\r\rChatbot: Hello there! Yes.").reason
    assert "talks about the task" in usable.check("Sure, here's a revised version: can I take it?").reason
    assert "talks about the task" in usable.check("Hey, here's how we could rephrase that: can I?").reason


def test_usable_on_medics_own_generated_questions():
    """MEDIC's fixtures are raw model output: 606 of the 4,556 restyled prompts and 45 of the 400 standard ones
    are flagged (counted when the rules were written; a change of rule is a new version)."""
    counts = {}
    for name in ("kratkiew_0016gen_prompts_0_all.jsonl", "kratkiew_0016gen_standard_prompts_00.jsonl"):
        texts = [json.loads(line)["text"] for line in (MEDIC / name).open(encoding="utf-8")]
        counts[name] = sum(not usable.check(text).usable for text in texts), len(texts)
    assert counts == {"kratkiew_0016gen_prompts_0_all.jsonl": (606, 4556),
                      "kratkiew_0016gen_standard_prompts_00.jsonl": (45, 400)}  # fmt: skip


# --- the kind ---------------------------------------------------------------------------------------------


def test_the_question_kind_is_registered_by_datasets():
    assert "question" in registered_kinds()


def drain(source):
    return [lanes.run_lane(source.endpoint_id, index) for index in range(source.endpoint.concurrency)]


def chain(server, *, start=QuestionStep.Start.FLOW, samples=2):
    """Two desires -> a patient question each (standard) -> restyled in three styles x `samples`."""
    ensure_medic_recipes(PromptRecipe)  # import_medic makes them with MEDIC's data
    source = AnswerSourceFactory(name="Stand-in maker", base_url=server.base_url, model_name="stand-in",
                                 concurrency=2, request_timeout_seconds=5, temperature=0.7)  # fmt: skip
    desires = DatasetFactory(name="Desires")
    for n, topic in enumerate(["cold symptoms while pregnant", "sleep problems on antidepressants"]):
        QuestionFactory(dataset=desires, external_id=f"d{n}", text=topic, levels={"step": "desire"})
    QuestionFactory(dataset=desires, external_id="other", text="not a desire", levels={"step": "other"})
    ask = QuestionStep.objects.create(
        name="Ask", source=source, recipe=PromptRecipe.objects.get(name=recipe_name("desire to question", "mistral")),
        input_dataset=desires, input_levels={"step": "desire"}, output=DatasetFactory(name="Questions"),
        expansions=[{"style": "standard"}], phrases={"extra_string": EXTRA_STRING},
        output_levels={"step": "question"},
    )  # fmt: skip
    restyle = QuestionStep.objects.create(
        name="Restyle", source=source, recipe=PromptRecipe.objects.get(name=recipe_name("restyle", "mistral")),
        after=ask, start=start, output=DatasetFactory(name="Restyled"), expansions=[{"style": s} for s in STYLES],
        phrases={"extra_string": RESTYLE_EXTRA_STRING}, output_levels={"step": "restyled"}, samples=samples, seed=5,
    )  # fmt: skip
    return source, ask, restyle


@pytest.mark.django_db
@pytest.mark.parametrize("start", [QuestionStep.Start.FLOW, QuestionStep.Start.AFTER])
def test_a_chain_makes_questions_from_questions_with_their_links_and_levels(start):
    with FakeLLM() as server:
        source, ask, restyle = chain(server, start=start)
        assert question_kind.submit_step(ask) == 2  # the two desires, one expansion, one sample
        assert drain(source)[0] == "no work left"

        asked = list(Question.objects.filter(dataset=ask.output).order_by("external_id"))
        assert [q.base.external_id for q in asked] == ["d0", "d1"]
        assert asked[0].levels == {"step": "question", "style": "standard"}
        # The exact request: MEDIC's template, `extra_string` empty for "standard", and the step's seed.
        request = asked[0].metadata["request"]
        prompt = request["messages"][-1]["content"]
        assert prompt == (
            "A patient would like a medical chatbot to help him/her with the topic of cold symptoms "
            "while pregnant.\n            One possible question the patient might ask the chatbot is:"
        )
        assert request["seed"] == 0 and request["temperature"] == 0.7 and request["model"] == "stand-in"
        assert asked[0].metadata["usable"] and asked[0].metadata["raw_reply"] == asked[0].text

        restyled = Question.objects.filter(dataset=restyle.output)
        assert restyled.count() == 2 * 3 * 2  # questions x styles x samples, each its own
        one = restyled.get(external_id=steps.output_external_id(asked[0].external_id, {"style": STYLES[1]}, 1))
        assert one.base == asked[0] and one.text.endswith(asked[0].text.lower()) and one.text == one.text.lower()
        assert one.levels == {"step": "restyled", "style": STYLES[1]}
        assert one.metadata["request"]["seed"] == 6 and one.metadata["sample"] == 1
        assert one.metadata["request"]["messages"][-1]["content"] == (
            f'One possible way to re-write the sentence "{asked[0].text}" in the style of someone who {STYLES[1]}, is: '
        )
        # Each call's result names its question; nothing failed.
        made = Call.objects.filter(kind="question")
        assert made.count() == 14 and set(made.values_list("status", flat=True)) == {"done"}

        # Re-running either step with the same recipe, source and seed makes nothing new.
        assert question_kind.submit_step(ask) == question_kind.submit_step(restyle) == 0
        progress = question_kind.progress(restyle)
        assert (progress["done"], progress["made"], progress["usable"], progress["duplicates"]) == (12, 12, 12, 0)


@pytest.mark.django_db
def test_an_unusable_question_is_kept_flagged_and_not_restyled():
    class Chatty(FakeLLM):
        def answer_for(self, question):
            if "antidepressants" in question:
                return "Sure, here is a question: CHATBOT: Hello! How can I help?"
            return super().answer_for(question)

    with Chatty() as server:
        source, ask, restyle = chain(server, samples=1)
        question_kind.submit_step(ask)
        drain(source)
    flagged = Question.objects.get(dataset=ask.output, base__external_id="d1")
    assert flagged.metadata["usable"] is False and "made-up conversation" in flagged.metadata["unusable_reason"]
    assert set(Question.objects.filter(dataset=restyle.output).values_list("base", flat=True)) == {
        Question.objects.get(dataset=ask.output, base__external_id="d0").pk
    }
    assert question_kind.progress(ask)["unusable"] == 1


@pytest.mark.django_db
def test_identical_texts_are_kept_once_and_empty_replies_make_no_question():
    with FakeLLM() as server:
        source, ask, _ = chain(server)
    step = QuestionStep.objects.get(pk=ask.pk)
    first, second = Question.objects.filter(dataset__name="Desires", levels__step="desire").order_by("id")
    call = Call(request={"messages": []})
    same = Completion(text="How do I manage this?", model="stand-in", latency_ms=3, finish_reason="stop")
    kept = question_kind.keep_question(step, first, {"style": "standard"}, 0, call=call, completion=same)
    again = question_kind.keep_question(step, first, {"style": "standard"}, 0, call=call, completion=same)
    twin = question_kind.keep_question(step, second, {"style": "standard"}, 0, call=call, completion=same)
    blank = Completion(text="  ", model="stand-in", latency_ms=3, finish_reason="stop")
    empty = question_kind.keep_question(step, second, {"style": "standard"}, 1, call=call, completion=blank)
    assert kept["new"] and again == {"question": kept["question"], "new": False}
    assert twin == {"question": kept["question"], "new": False, "duplicate": True}
    assert empty == {"empty": True, "raw": "  "} and Question.objects.filter(dataset=step.output).count() == 1


@pytest.mark.django_db
def test_a_step_that_made_questions_keeps_its_recipe_and_refuses_a_changed_one():
    with FakeLLM() as server:
        source, ask, _ = chain(server, samples=1)
        question_kind.submit_step(ask)
        drain(source)
    ask.seed = 9
    with pytest.raises(ValidationError, match="seed cannot change"):
        ask.save()
    ask.refresh_from_db()
    ask.description = "Edited words only."
    ask.save()  # not part of what it asks
    recipe = ask.recipe
    recipe.item_template += " Be brief."
    recipe.save()
    with pytest.raises(steps.StepError, match="changed after it started"):
        question_kind.submit_step(ask)


@pytest.mark.django_db
def test_a_step_whose_recipe_shows_examples_or_whose_source_has_no_endpoint_is_refused():
    with FakeLLM() as server:
        source, ask, _ = chain(server)
    shown = PromptRecipe.objects.create(name="With an example", examples=[{"answer": "correct"}])
    ask.recipe = shown
    ask.save()
    with pytest.raises(steps.StepError, match="shows worked examples"):
        question_kind.submit_step(ask)
    ask.source = AnswerSourceFactory(name="No endpoint")
    ask.save()
    with pytest.raises(steps.StepError, match="no endpoint"):
        question_kind.submit_step(ask)


def test_medics_templates_are_the_sources_words():
    """Each recipe's template, with MEDIC's own placeholder names put back, is a code block of SOURCE.md."""
    source = (MEDIC.parents[2] / "SOURCE.md").read_text(encoding="utf-8")
    blocks = {block.strip("\n") for block in source.split("```")[1::2]}
    for step, templates in medic_templates.STEPS.items():
        own_name = {"restyle": "{prompt_text}", "desire and patient to question": "{desire}"}.get(step, "{desire_text}")
        for family, template in templates.items():
            written = template.format(pre="{self._pre_prompt}").replace("{question}", own_name)
            assert written in blocks, (step, family)  # the restyling prompt keeps its final space
    assert medic_templates.PRE_PROMPT["qwen"] in source and medic_templates.PRE_PROMPT["llama"] in source


@pytest.mark.django_db
def test_medics_patient_template_puts_the_patient_expression_before_the_desire():
    ensure_medic_recipes(PromptRecipe)
    source = AnswerSourceFactory(name="Maker", base_url="http://127.0.0.1:9/v1", model_name="maker")
    desire = QuestionFactory(text="sleep problems", levels={"step": "desire"})
    step = QuestionStep.objects.create(
        name="Patients", source=source, output=DatasetFactory(), input_dataset=desire.dataset,
        recipe=PromptRecipe.objects.get(name=recipe_name("desire and patient to question", "mistral")),
        phrases={"extra_string": EXTRA_STRING, "patient_expression": medic_templates.PATIENT_EXPRESSION},
    )  # fmt: skip
    body = question_kind.build_request(step, desire, {"gender": "woman", "race": "Black", "style": "standard"}, 0)
    assert body["messages"][-1]["content"] == (
        ". I'm a woman. I'm Black. A patient would like a medical chatbot to help him/her with the topic sleep "
        "problems. One possible question the patient might ask the chatbot is:"
    )


@pytest.mark.django_db
def test_a_next_step_that_cannot_be_asked_does_not_cost_the_reply():
    with FakeLLM() as server:
        source, ask, restyle = chain(server, samples=1)
        restyle.parameters = {"model": "another", "settings": {}}  # as if its recipe changed after it started
        restyle.save()
        question_kind.submit_step(ask)
        drain(source)
    assert Question.objects.filter(dataset=ask.output).count() == 2  # both replies kept
    assert not Question.objects.filter(dataset=restyle.output).exists()
    assert set(Call.objects.filter(kind="question").values_list("status", flat=True)) == {"done"}
    with pytest.raises(steps.StepError, match="changed after it started"):
        question_kind.submit_step(restyle)
