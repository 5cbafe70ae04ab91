"""The engine's `question` kind: one call asks a generation step's model to make a question from one input
question, for one expansion and sample (datasets/chains/__init__.py; engine/DESIGN.md, "Kinds").

A call's subject is `{"step", "question", "expansion", "sample"}` (the expansion's index in the step's list) and
its batch `"question-step:<step id>"`; it goes to the step's source's endpoint, so a step shares the source's
concurrency and rate limit with its answer and judge calls. `store` keeps the reply once as a question of the
step's output dataset (its external id found again by a second store), flagged when unusable (`usable.check`);
an empty reply makes no question, and a text the output already holds (another input or sample made it) is not
stored twice: MEDIC deduplicates identical questions too. The call's result names the question either way.

Steps flow: a step whose `after` is this one and which starts on each question (`flow`) gets calls for every
usable question this step stores, in the store's transaction; one that starts `after` gets its calls when
this step's batch has nothing unfinished, decided under this step's row lock (as a generation job ends).
"""

import contextlib

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

import engine
from engine import calls as engine_calls
from engine.models import Call

from ..models import Dataset, Question, QuestionStep, text_fingerprint
from ..recipes import QuestionView, RecipeError, render_prompt, request_body
from . import steps, usable

KIND = "question"


def batch_of(step_id: int) -> str:
    return f"question-step:{step_id}"


def subject_for(step_id: int, question_id: int, expansion: int, sample: int) -> dict:
    return {"step": step_id, "question": question_id, "expansion": expansion, "sample": sample}


def request_settings(step: QuestionStep) -> dict:
    """The recipe's settings with the source's temperature and max tokens: the recipe gives the words, the
    source the model and how it samples (MEDIC sets a temperature per generating model)."""
    source = step.source
    return {**step.recipe.settings(), "temperature": source.temperature, "max_tokens": source.max_tokens}


def frozen_parameters(step: QuestionStep) -> dict:
    """What decides the step's requests besides its own fields: the source's model and the request settings."""
    return {"model": step.source.model_name, "settings": request_settings(step)}


def check_step(step: QuestionStep) -> None:
    """Refuse (StepError) a step that could not be asked."""
    source = step.source
    if not source.base_url or source.endpoint_id is None:
        raise steps.StepError(f"The step's source {source} has no endpoint (base URL) to ask: give it one first.")
    if step.recipe.examples:
        raise steps.StepError(f"The recipe {step.recipe} shows worked examples: a generation step's recipe has none.")
    steps.check_phrases(step.phrases)
    if step.samples < 1:
        raise steps.StepError("A step keeps at least one sample per input.")
    steps.check_size(step.expansions, step.samples)


def _rows(call) -> tuple[QuestionStep, Question, dict[str, str], int]:
    subject = call.subject
    step = QuestionStep.objects.select_related("source", "recipe", "output").filter(pk=subject.get("step")).first()
    if step is None:
        raise engine.CallRefused(f"generation step {subject.get('step')} no longer exists")
    question = Question.objects.filter(pk=subject.get("question")).first()
    if question is None:
        raise engine.CallRefused(f"question {subject.get('question')} no longer exists")
    expansions = steps.expansions_of(step.expansions)
    index = int(subject.get("expansion", 0))
    if not 0 <= index < len(expansions):
        raise engine.CallRefused(f"the step {step} has no expansion {index}")
    return step, question, expansions[index], int(subject.get("sample", 0))


def build_request(step: QuestionStep, question: Question, expansion: dict[str, str], sample: int) -> dict:
    """The exact body sent for one (input, expansion, sample); StepError / RecipeError when it cannot be made."""
    settings = request_settings(step)
    fields = steps.template_fields(question.metadata or {}, expansion, step.phrases or {})
    view = QuestionView(question.text, fields, {**(question.levels or {}), **expansion}, question.external_id)
    body = request_body(settings, render_prompt(settings, view, []), model=step.source.model_name)
    body["seed"] = step.seed + sample  # each sample its own draw, the same one on every re-run
    return body


class QuestionKind:
    def prepare(self, call) -> engine.Request:
        step, question, expansion, sample = _rows(call)
        if step.parameters and step.parameters != frozen_parameters(step):
            raise engine.CallRefused(f"the recipe or model of step {step} changed after it started: add a new step")
        try:
            body = build_request(step, question, expansion, sample)
        except (steps.StepError, RecipeError) as error:
            raise engine.CallRefused(f"the step cannot ask this question: {error}") from None
        mode = "completion" if "prompt" in body else "chat"
        return engine.Request(mode=mode, body=body)

    def store(self, call, completion) -> dict:
        step, question, expansion, sample = _rows(call)
        result = keep_question(step, question, expansion, sample, call=call, completion=completion)
        made = Question.objects.filter(pk=result.get("question")).first() if result.get("new") else None
        # A next step that cannot be asked now (its recipe edited, its source without an endpoint) must not cost
        # this reply: it is kept, and the next step says why when it is run.
        if made is not None and made.metadata.get("usable"):
            for following in step.next_steps.filter(start=QuestionStep.Start.FLOW):
                _quietly(submit_for, following, [made])
        _quietly(advance_if_finished, step.pk, besides=call.id)
        return result

    def failed(self, call, error) -> None:
        """Nothing is made up for a failed call (it keeps its error and history), but the step may be finished."""
        _quietly(advance_if_finished, call.subject.get("step"))


def _quietly(queue, *args, **kwargs) -> None:
    """Queue a next step's calls in a savepoint; a step that refuses (StepError, RecipeError) undoes only its own
    writes: the reply being stored stays."""
    with contextlib.suppress(steps.StepError, RecipeError), transaction.atomic():
        queue(*args, **kwargs)


def keep_question(step, question, expansion, sample, *, call, completion) -> dict:
    """Store the reply once as an output question; the call's result: `{"question": id, "new": bool}`, plus
    `"duplicate": true` when the output already held the text, or `{"empty": true}` for an empty reply."""
    text = steps.generated_text(completion.text)
    if not text:
        return {"empty": True, "raw": completion.text}
    external_id = steps.output_external_id(question.external_id, expansion, sample)
    output = step.output
    # One store per output dataset at a time (the lock is held until the engine's transaction commits), so two
    # calls making the same text at once see each other: MEDIC keeps identical questions once.
    Dataset.objects.select_for_update().filter(pk=output.pk).first()
    found = output.questions.filter(external_id=external_id).first()
    if found is not None:  # a second store of this call (its lease ran out): the first one's question stands
        return {"question": found.pk, "new": False}
    same_text = output.questions.filter(text_hash=text_fingerprint(text)).first()
    if same_text is not None:
        return {"question": same_text.pk, "new": False, "duplicate": True}
    verdict = usable.check(text)
    metadata = {
        "step": step.name, "step_id": step.pk, "sample": sample, "expansion": expansion,
        "made_from": question.external_id, "model": completion.model or step.source.model_name,
        "request": call.request or {}, "raw_reply": completion.text, "latency_ms": completion.latency_ms,
        "made_at": timezone.now().isoformat(), **verdict.as_metadata(),
    }  # fmt: skip
    levels = steps.output_levels(question.levels or {}, expansion, step.output_levels or {})
    made = Question.objects.create(dataset=output, external_id=external_id, text=text, metadata=metadata,
                                   base=question, levels=levels)  # fmt: skip
    return {"question": made.pk, "new": True}


def input_questions(step: QuestionStep):
    """The step's input: its dataset's questions at its levels, or the usable questions of the step before."""
    if step.after_id is not None:
        inputs = Question.objects.filter(dataset_id=step.after.output_id, metadata__step_id=step.after_id,
                                         metadata__usable=True)  # fmt: skip
    else:
        inputs = Question.objects.filter(dataset_id=step.input_dataset_id)
    for factor, level in (step.input_levels or {}).items():
        inputs = inputs.filter(**{f"levels__{factor}": level})
    return inputs.order_by("id")


def submit_step(step: QuestionStep) -> int:
    """Queue a call for every (input, expansion, sample) of the step without an output or a call under way; a
    failed or cancelled one is put back in the queue. Returns how many were queued: none on a second run."""
    return submit_for(step, None)


def submit_for(step: QuestionStep, inputs: list[Question] | None) -> int:
    """`submit_step` over these inputs only (None: the step's whole input), under the step's row lock."""
    with transaction.atomic():
        locked = QuestionStep.objects.select_for_update().select_related("source", "recipe").get(pk=step.pk)
        check_step(locked)
        parameters = frozen_parameters(locked)
        if not locked.parameters:
            QuestionStep.objects.filter(pk=locked.pk).update(parameters=parameters)
        elif locked.parameters != parameters:
            raise steps.StepError(f"The recipe or model of step {locked} changed after it started: add a new step.")
        questions = list(input_questions(locked)) if inputs is None else inputs
        expansions = [(index, steps.expansion_key(levels)) for index, levels in
                      enumerate(steps.expansions_of(locked.expansions))]  # fmt: skip
        per_input = len(expansions) * locked.samples
        chunk = max(1, SUBJECTS_PER_CHUNK // per_input)  # memory bounded however large the input
        queued = 0
        for start in range(0, len(questions), chunk):
            queued += _submit_chunk(locked, questions[start : start + chunk], expansions)
        return queued


SUBJECTS_PER_CHUNK = 20_000


def _submit_chunk(step: QuestionStep, questions: list[Question], expansions: list[tuple[int, str]]) -> int:
    ids = [q.pk for q in questions]
    existing: dict[tuple[int, int, int], tuple[int, str]] = {}
    calls = Call.objects.filter(kind=KIND, batch=batch_of(step.pk), subject__question__in=ids)
    for call_id, subject, status in calls.values_list("id", "subject", "status"):
        key = (subject["question"], subject["expansion"], subject["sample"])
        if key not in existing or status in engine_calls.UNFINISHED:
            existing[key] = (call_id, status)
    made = set(step.output.questions.filter(base_id__in=ids).values_list("external_id", flat=True))
    new, again = [], []
    for question in questions:
        for index, key in expansions:
            for sample in range(step.samples):
                if steps.keyed_external_id(question.external_id, key, sample) in made:
                    continue
                call_id, status = existing.get((question.pk, index, sample), (None, ""))
                if call_id is None:
                    new.append(subject_for(step.pk, question.pk, index, sample))
                elif status in (Call.Status.FAILED, Call.Status.CANCELLED):
                    again.append(call_id)
    submitted = engine_calls.submit(KIND, step.source.endpoint, new, batch=batch_of(step.pk))
    return submitted + engine_calls.requeue(again)


def unfinished(step: QuestionStep) -> bool:
    return Call.objects.filter(kind=KIND, batch=batch_of(step.pk), status__in=engine_calls.UNFINISHED).exists()


def run_steps(chain: list[QuestionStep]) -> dict[str, int]:
    """Queue what the chain's steps have not asked yet, in order; {step name: calls queued}. A step on a dataset
    or flowing from the one before is submitted now (its input so far; a flowing step gets the rest as it is
    made); one that starts after the step before waits until that one has nothing unfinished."""
    queued = {}
    for step in chain:
        waiting = step.after_id is not None and step.start == QuestionStep.Start.AFTER and unfinished(step.after)
        queued[step.name] = 0 if waiting else submit_step(step)
    return queued


def advance_if_finished(step_id, *, besides: int | None = None) -> int:
    """When the step's batch has nothing unfinished (but `besides`), queue the steps that start after it; how
    many calls were queued. Under the step's row lock, so of two calls ending at once one sees the other."""
    with transaction.atomic():
        step = QuestionStep.objects.select_for_update().filter(pk=step_id).first()
        if step is None:
            return 0
        unfinished = Call.objects.filter(kind=KIND, batch=batch_of(step.pk), status__in=engine_calls.UNFINISHED)
        if besides is not None:
            unfinished = unfinished.exclude(id=besides)
        if unfinished.exists():
            return 0
        return sum(submit_step(following) for following in step.next_steps.filter(start=QuestionStep.Start.AFTER))


def progress(step: QuestionStep) -> dict[str, int]:
    """The step's calls by status, and its questions: made, usable, unusable; duplicates and empty replies."""
    counts = dict.fromkeys(Call.Status.values, 0)
    rows = Call.objects.filter(kind=KIND, batch=batch_of(step.pk)).values("status").annotate(n=Count("id"))
    counts.update({row["status"]: row["n"] for row in rows.order_by()})
    made = Question.objects.filter(dataset_id=step.output_id, metadata__step_id=step.pk)
    counts["made"] = made.count()
    counts["usable"] = made.filter(metadata__usable=True).count()
    counts["unusable"] = counts["made"] - counts["usable"]
    results = Call.objects.filter(kind=KIND, batch=batch_of(step.pk), status=Call.Status.DONE)
    counts["duplicates"] = results.filter(result__duplicate=True).count()
    counts["empty"] = results.filter(result__empty=True).count()
    return counts


def failed_calls(step: QuestionStep):
    """The step's failed calls, newest first: their input, expansion, sample and error."""
    return Call.objects.filter(kind=KIND, batch=batch_of(step.pk), status=Call.Status.FAILED).order_by("-id")


def register() -> None:
    engine.register(KIND, QuestionKind())
