"""A local HTTP server that speaks the OpenAI chat-completions and completions protocols, for tests and benchmarks.

A multiple-choice prompt (a line "### Options: A: ..., B: ..." or "A: ..., B: ...") is answered with one of
its letters, chosen by a hash of the prompt: deterministic, and spread over the letters, so scoring has
letters to read (it does not know the correct one).

Behaviour is configurable: latency, a number of failures with a given status before it answers, refusals
(a question containing REFUSE gets finish_reason "content_filter" and no text), log-probabilities, and a
redirect of every request to another URL. Every request's method, path and headers are kept in `received`
(e.g. to see whether an Authorization header arrived). It listens on 127.0.0.1 only.

A Q-Pain prompt (it holds "Vignette:" and its last line is "Answer:") is answered like a completion model
would: " Yes.\nDosage: High (1 mg)\nExplanation: ...", the same with Low, or " No.\nExplanation: ...",
chosen by a hash of the prompt, with `stop` and `max_tokens` honoured; asked for log-probabilities, it gives
every generated token's top-k alternatives in the endpoint's format (completions: the legacy object,
k = `logprobs`; chat: the content list, k = `top_logprobs`), probabilities varying by a hash of the prompt,
the generated token the most probable one. `qpain_completion` is what it answers, for tests to compare.

A judge's request (it carries the rubric's JSON Schema: in the prompt after "matching this JSON Schema:", as
studies.judges.build_judge_request writes it, or as `response_format` json_schema) is answered with a JSON
object valid for that schema (`judge_values`): each question's value drawn by a hash of the item part of the
prompt (the text before "Questions:"), so the same item gets the same values (a BiasMedQA auto-evaluator
scenario is read for its letters instead: `scenario_verdict`). It can be told to disagree in a
known way: `judge_error_rate` moves each question's value to another one with that probability, and
`judge_group_errors` ({"Black": 0.4}) adds a rate when the item mentions that group (a whole word, any case), so a
study shows a judge whose errors depend on the patient group; `judge_models` ({"model name": JudgeErrors(...)})
gives a request naming that model its own error rates instead, so two sources on one server (two model names)
are two judges erring differently (the demo's, studies/demo_judges.py); `judge_invalid_rate` makes a reply prose
instead of JSON with that probability, drawn anew for each time the same prompt is asked (to exercise retries).
The error-free value of a single choice is `studies.stand_in_judge.drawn_choice` of the item text.
"""

import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema

from studies.stand_in_judge import drawn_choice, unit


@dataclass(frozen=True)
class JudgeErrors:
    """How a stand-in judge errs: each question's value moved at `error_rate`, plus `group_errors[group]` for an
    item mentioning the group (a whole word, any case)."""

    error_rate: float = 0.0
    group_errors: dict[str, float] = field(default_factory=dict)


class FakeLLM:
    def __init__(
        self,
        *,
        latency: float = 0.0,
        failures: int = 0,
        failure_status: int = 500,
        port: int = 0,
        redirect_to: str | None = None,
        judge_error_rate: float = 0.0,
        judge_group_errors: dict[str, float] | None = None,
        judge_invalid_rate: float = 0.0,
        judge_models: dict[str, JudgeErrors] | None = None,
    ):
        self.judge_error_rate = judge_error_rate
        self.judge_group_errors = dict(judge_group_errors or {})
        self.judge_models = dict(judge_models or {})
        self.judge_invalid_rate = judge_invalid_rate
        self._asked: Counter[str] = Counter()  # how often each judge prompt came, for judge_invalid_rate's draws
        self._local = threading.local()  # the request's response_format schema, for answer_for
        self.latency = latency
        self.failures = failures
        self.failure_status = failure_status
        self.redirect_to = redirect_to
        self.requests: list[dict] = []
        self.received: list[tuple[str, str, dict]] = []  # (method, path, headers) of every request
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def answer_for(self, question: str) -> str:
        schema = judge_schema(question) or getattr(self._local, "schema", None)
        if schema is not None:
            return self.judge_reply(question, schema)
        made = generation_reply(question, getattr(self._local, "seed", None))
        if made is not None:
            return made
        letters = multiple_choice_letters(question)
        if letters:
            return letters[int(hashlib.sha256(question.encode()).hexdigest(), 16) % len(letters)]
        tailored = context_reply(question)
        if tailored is not None:
            return tailored
        return f"Generated answer to: {question[:60]}"

    def _respond(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            failing = self.failures > 0
            if failing:
                self.failures -= 1
        if self.latency:
            time.sleep(self.latency)
        if failing:
            return self.failure_status, {"error": {"message": f"simulated failure ({self.failure_status})"}}
        completions = "prompt" in body  # /completions: one prompt text, the answer in choices[0].text
        question = body["prompt"] if completions else body["messages"][-1]["content"]
        response_format = body.get("response_format") or {}
        self._local.schema = (response_format.get("json_schema") or {}).get("schema")
        self._local.model = body.get("model")
        self._local.seed = body.get("seed")
        refused = "REFUSE" in question
        if not refused and is_qpain_prompt(question):
            return 200, qpain_response(body, question, request_number=len(self.requests))
        text = "" if refused else self.answer_for(question)
        finish_reason = "content_filter" if refused else "stop"
        if completions:
            choice: dict = {"index": 0, "text": text, "finish_reason": finish_reason}
            if body.get("logprobs"):
                choice["logprobs"] = {"tokens": [text[:1]], "token_logprobs": [-0.1], "text_offset": [0],
                                      "top_logprobs": [{text[:1] or "A": -0.1, "B": -2.4}]}  # fmt: skip
        else:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        if body.get("logprobs") and not completions:
            choice["logprobs"] = {"content": [{"token": "Yes", "logprob": -0.1,
                                               "top_logprobs": [{"token": "Yes", "logprob": -0.1},
                                                                {"token": "No", "logprob": -2.4}]}]}  # fmt: skip
        usage = {"prompt_tokens": len(question.split()), "completion_tokens": 6, "total_tokens": 6}
        return 200, {"id": f"chatcmpl-{len(self.requests)}", "model": body["model"], "choices": [choice],
                     "usage": usage}  # fmt: skip

    def judge_reply(self, prompt: str, schema: dict) -> str:
        """A judge's reply: the JSON of `judge_values`, or (at `judge_invalid_rate`) prose."""
        with self._lock:
            self._asked[prompt] += 1
            asked = self._asked[prompt]
        if self.judge_invalid_rate and _unit(prompt, f"invalid:{asked}") < self.judge_invalid_rate:
            return "The answer looks reasonable to me."
        item = judge_item_text(prompt)
        errors = self.judge_errors(getattr(self._local, "model", None))
        rate = errors.error_rate + sum(extra for group, extra in errors.group_errors.items() if mentions(item, group))
        verdict = scenario_verdict(item)
        return json.dumps(judge_values(item, schema, error_rate=rate, answer=judge_answer_text(item),
                                       preferred=verdict))  # fmt: skip

    def judge_errors(self, model: str | None) -> "JudgeErrors":
        """The errors a judge asking under this model name makes: its own (`judge_models`), else the server's."""
        if model in self.judge_models:
            return self.judge_models[model]
        return JudgeErrors(self.judge_error_rate, self.judge_group_errors)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                fake.received.append(("GET", self.path, dict(self.headers)))
                self.send_error(405)

            def do_POST(self):  # noqa: N802
                fake.received.append(("POST", self.path, dict(self.headers)))
                if fake.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", fake.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if not self.path.endswith("/completions"):  # /chat/completions and /completions
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = fake._respond(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep test output quiet
                pass

        return Handler


# --- Generation steps (datasets/chains) -------------------------------------------------------------------

# The last words of MEDIC's templates (datasets/medic/SOURCE.md): what the model is asked to make.
ASKS_QUESTION = "One possible question the patient might ask the chatbot is:"
ASKS_TOPIC = "another topic that the patient may want the chatbot to help him/her with is:"
ASKS_RESTYLE = "One possible way to re-write the sentence"
TOPIC = re.compile(r"help him/her with the topic (?:of )?(.*?)\.\s*(?:\n|One|Giving|Please)", re.DOTALL)
SENTENCE = re.compile(r're-write the sentence "(.*)"(?: in the style of someone who (.*?),)? is:', re.DOTALL)
QUESTION_FORMS = ("What can I do about {topic}?", "Is it safe to handle {topic} at home?",
                  "Who should I see about {topic}?")  # fmt: skip
TOPIC_FORMS = ("{topic} during sleep", "{topic} at work", "{topic} with family")


def generation_reply(prompt: str, seed: object) -> str | None:
    """A stand-in's reply to a generation step's prompt: a patient question about the prompt's topic, another
    topic, or the sentence restyled (lower case, upper case, typos or a greeting, by the style), varied by the
    request's seed so samples differ; None for any other prompt."""
    # Consecutive seeds (a step's samples) give consecutive forms: up to three samples differ.
    draw = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) + (seed if isinstance(seed, int) else 0)
    if ASKS_QUESTION in prompt or ASKS_TOPIC in prompt:
        found = TOPIC.search(prompt)
        topic = (found.group(1) if found else "my symptoms").strip().rstrip(".")
        forms = QUESTION_FORMS if ASKS_QUESTION in prompt else TOPIC_FORMS
        return forms[draw % len(forms)].format(topic=topic)
    if ASKS_RESTYLE in prompt:
        found = SENTENCE.search(prompt)
        if found is None:
            return None
        sentence, style = found.group(1), (found.group(2) or "").lower()
        opening = ("Hi, ", "Quick question: ", "Hello! ")[draw % 3]
        if "no capitalization" in style:
            return (opening + sentence).lower()
        if "excessive capitalization" in style:
            return (opening + sentence).upper()
        if "typos" in style:
            words = sentence.split()
            sentence = " ".join(word[:-1] if len(word) > 4 and i % 2 else word for i, word in enumerate(words))
            return opening + sentence
        return opening + sentence + (f" (as someone who {style})" if style else "")  # each style its own text
    return None


# --- Judges ----------------------------------------------------------------------------------------------

SCHEMA_MARK = "matching this JSON Schema:\n"


# ContextSRH's context sentences (datasets/variants/contextsrh.py) and, per attribute, how far each group's answer
# strays from the answer without context: the stand-in "favours" 25-year-olds, women and Massachusetts, as the
# paper found real models do, so the demo's tables have a pattern to show.
CONTEXT_SENTENCE = re.compile(r"^(?P<question>.*\S)\s+(?:I am (?P<age>\d+) years old"
                              r"|I live in (?P<location>[A-Z][A-Za-z ]+)|I am a (?P<sex>female|male))\.$",
                              re.DOTALL)  # fmt: skip
CONTEXT_DISTANCE = {
    "age": {"10": 5, "15": 3, "18": 1, "21": 0, "25": 0, "30": 1, "40": 2, "50": 3, "60": 4, "70": 5},
    "location": {"Massachusetts": 0, "Vermont": 1, "Hawaii": 2, "Idaho": 2, "Wyoming": 3, "South Dakota": 3},
    "sex": {"female": 0, "male": 2},
}
CONTEXT_SENTENCES = (
    "For someone who is {who}, the details can be different.",
    "People who are {who} may want to ask a clinician about their own situation.",
    "The rules and options that apply to someone who is {who} are not the same everywhere.",
    "Some services are offered differently to people who are {who}.",
    "A health centre can explain what this means for someone who is {who}.",
    "Risks and benefits change for people who are {who}.",
)
WHO = {"age": "{group} years old", "location": "living in {group}", "sex": "{group}"}


def context_reply(question: str) -> str | None:
    """A ContextSRH context question's answer: the answer to the question without context, plus sentences
    tailored to the group, more of them the further the group is from the stand-in's favoured one (and one more
    for some questions, by a hash, so groups do not always tie); None for a question without a context sentence."""
    found = CONTEXT_SENTENCE.match(question.strip())
    if found is None:
        return None
    attribute = next(name for name in CONTEXT_DISTANCE if found.group(name))
    group = found.group(attribute)
    distance = CONTEXT_DISTANCE[attribute].get(group, 3)
    extra = 1 + distance + int(hashlib.sha256(question.encode()).hexdigest(), 16) % 2
    who = WHO[attribute].format(group=group)
    added = " ".join(CONTEXT_SENTENCES[i % len(CONTEXT_SENTENCES)].format(who=who) for i in range(extra))
    return f"Generated answer to: {found.group('question')[:60]} {added}"


def judge_schema(prompt: str) -> dict | None:
    """The JSON Schema a judge's prompt asks for (one line after SCHEMA_MARK), or None for any other prompt."""
    if SCHEMA_MARK not in prompt:
        return None
    line = prompt.split(SCHEMA_MARK, 1)[1].split("\n", 1)[0]
    try:
        schema = json.loads(line)
    except ValueError:
        return None
    return schema if isinstance(schema, dict) and "properties" in schema else None


def judge_item_text(prompt: str) -> str:
    """The item as the judge's prompt shows it: the text before the rubric's questions."""
    return prompt.split("\n\nQuestions:\n", 1)[0]


def judge_answer_text(item: str) -> str:
    """The first answer the item shows (after "Answer:" or "Answer 1:"), where a span question's quote comes from."""
    found = re.search(r"(?:^|\n)Answer(?: 1)?:\n(.*?)(?:\n\n|$)", item, re.DOTALL)
    return found.group(1) if found else ""


def mentions(text: str, group: str) -> bool:
    return re.search(rf"\b{re.escape(group)}\b", text, re.IGNORECASE) is not None


def scenario_verdict(item: str) -> str | None:
    """For a scenario laid out as BiasMedQA's auto-evaluator prompt does ("CORRECT ANSWER: C: ..." then
    "RESPONSE: ..."), what a careful reader says: True when the response starts with the correct letter (or
    first names it as "C: ..." or "option C"), False with another option's letter, NR when it names none. None
    for any other item."""
    correct = re.search(r"^CORRECT ANSWER: ([A-J]):", item, re.MULTILINE)
    response = re.search(r"^RESPONSE: (.*)", item, re.MULTILINE | re.DOTALL)
    if not (correct and response):
        return None
    # The letter it starts with, else the first option it names as "X: ..." or "option X".
    letter = re.match(r"\W*([A-J])\b", response.group(1)) or re.search(
        r"(?:\b([A-J]):\s|\boption ([A-J])\b)", response.group(1)
    )
    if letter is None:
        return "NR"
    return "True" if (letter.group(1) or letter.group(letter.lastindex or 1)) == correct.group(1) else "False"


def judge_values(
    item: str, schema: dict, *, error_rate: float = 0.0, answer: str = "", preferred: str | None = None
) -> dict:
    """Values valid for the schema, each drawn by a hash of the item text (the stand-in's "own" verdict; a
    single choice offering `preferred` takes it), then moved to another allowed value with probability
    `error_rate` per question (drawn by the same hash, so an item's errors are reproducible). Conditional
    questions are emptied or answered until the schema holds."""
    properties = schema.get("properties") or {}
    values = {key: _drawn(item, key, spec, answer) for key, spec in properties.items()}
    for key, spec in properties.items():
        if preferred is not None and preferred in _choices(spec):
            values[key] = preferred
    for key, spec in properties.items():
        if error_rate and _unit(item, f"error:{key}") < error_rate:
            values[key] = _moved(item, key, spec, values[key], answer)
    rules = schema.get("allOf") or []
    for _ in range(len(rules) + 1):  # rules come in question order, parents first: a pass or two settles them
        if jsonschema.Draft202012Validator(schema).is_valid(values):
            break
        for rule in rules:
            key = next(iter(rule["else"]["properties"]))
            if not jsonschema.Draft202012Validator(rule["if"]).is_valid(values):
                values[key] = rule["else"]["properties"][key]["const"]  # hidden: empty
            elif values.get(key) in (None, "", []):
                values[key] = _drawn(item, key, properties[key], answer, answered=True)
    return values


def _choices(spec: dict) -> list:
    if "enum" in spec:
        return [value for value in spec["enum"] if value is not None]
    return []


def _drawn(item: str, key: str, spec: dict, answer: str, *, answered: bool = False):
    draw = _unit(item, f"value:{key}")
    if "enum" in spec:
        return drawn_choice(item, key, _choices(spec))
    kinds = spec.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "array" in kinds and "enum" in (spec.get("items") or {}):
        choices = list(spec["items"]["enum"])
        exclusive = (spec.get("if") or {}).get("contains", {}).get("const")
        plain = [choice for choice in choices if choice != exclusive] or choices
        return [plain[int(draw * len(plain))]]
    if "array" in kinds:  # spans and list entries: one entry quoting the answer's first words, or none unless needed
        if not (answered or spec.get("minItems")) or not answer.strip():
            return []
        fields = spec["items"]["properties"]
        return [{name: _field(item, f"{key}.{name}", field, answer) for name, field in fields.items()}]
    if "integer" in kinds:
        low, high = spec.get("minimum", 0), spec.get("maximum", 5)
        return low + int(draw * (high - low + 1))
    if "string" in kinds:
        return "The stand-in judge's note." if answered or spec.get("minLength") else ""
    return None


def _field(item: str, key: str, spec: dict, answer: str):
    """One field of a span or list entry: a quote (its description says verbatim) is the answer's first words."""
    if "verbatim" in spec.get("description", ""):
        return " ".join(answer.split()[:3])
    kinds = spec.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "number" in kinds:
        low, high = spec["minimum"], spec["maximum"]
        return round(low + _unit(item, f"value:{key}") * (high - low), 2)
    return _drawn(item, key, spec, answer, answered=True)


def _moved(item: str, key: str, spec: dict, value, answer: str):
    """Another allowed value than `value`: the next option, or the next number on the scale."""
    if "enum" in spec:
        choices = _choices(spec)
        return choices[(choices.index(value) + 1) % len(choices)] if len(choices) > 1 else value
    if isinstance(value, list) and value and "enum" in (spec.get("items") or {}):
        choices = list(spec["items"]["enum"])
        return [choices[(choices.index(value[0]) + 1) % len(choices)]]
    if isinstance(value, int) and "minimum" in spec:
        low, high = spec["minimum"], spec["maximum"]
        return low + (value - low + 1) % (high - low + 1)
    return value


# "### Options: A: x, B: y" (BiasMedQA's item template) or a line of options "A: x, B: y, ..."
OPTIONS_START = re.compile(r"(?:### Options: )?[A-J]: ")
OPTION_LETTER = re.compile(r"(?:^|, )([A-J]): ")


def multiple_choice_letters(prompt: str) -> list[str]:
    """The letters of the prompt's last line of options (in order), or [] when it has none."""
    lines = [line for line in prompt.splitlines() if OPTIONS_START.match(line)]
    if not lines:
        return []
    line = lines[-1].removeprefix("### Options: ")
    letters = list(dict.fromkeys(OPTION_LETTER.findall(line)))
    return letters if len(letters) >= 2 else []


# Q-Pain (qpain/SOURCE.md): the open prompt ends with "Answer:" after a vignette.
QPAIN_TOKEN = re.compile(r"\n|[^\S\n]*\w+|[^\S\n]*[^\w\s]|[^\S\n]+")  # words and punctuation, spaces in front
QPAIN_DOSE = re.compile(r"\b(low|high) \(([^)]*)\)", re.IGNORECASE)
QPAIN_ANSWERS = [" Yes", " No", "Yes", "No", " I", " The"]  # alternatives at the answer's first token
QPAIN_DOSES = [" High", " Low", "High", "Low", " nan", " Medium"]  # ... and at the token after "Dosage:"
QPAIN_OTHERS = [" the", ",", ".", "\n", " and", " a"]  # ... and anywhere else


def is_qpain_prompt(prompt: str) -> bool:
    lines = prompt.splitlines()
    return bool(lines) and lines[-1].strip() == "Answer:" and "Vignette:" in prompt


_unit = unit  # a number in [0, 1) fixed by the prompt and a label (studies/stand_in_judge.py)


def qpain_doses(prompt: str) -> dict[str, str]:
    """{"low": "Low (0.5 mg)", "high": "High (1 mg)"} as the prompt's last question offers them."""
    questions = [line for line in prompt.splitlines() if line.startswith("Question:")] or [""]
    offered = {kind.lower(): f"{kind.capitalize()} ({amount})" for kind, amount in QPAIN_DOSE.findall(questions[-1])}
    return {"low": "Low (0.5 mg)", "high": "High (1 mg)", **offered}


def qpain_reply(prompt: str) -> str:
    """The whole text the stand-in would write for a Q-Pain prompt, before any stop or max_tokens."""
    draw = _unit(prompt, "answer")  # a third each: No, Yes with the high dose, Yes with the low dose
    dose = qpain_doses(prompt)["high" if draw < 2 / 3 else "low"]
    answer = " No." if draw < 1 / 3 else f" Yes.\nDosage: {dose}"
    return f"{answer}\nExplanation: the stand-in's answer, drawn by a hash of the prompt.##\n\nVignette: Patient E"


def qpain_alternatives(prompt: str, index: int, token: str, pool: list[str]) -> list[tuple[str, float]]:
    """(token, log-probability) at one position, most probable first: the generated token (p in [0.45,
    0.95)), then the pool's others, each a hash-drawn share of what is left (so they sum below 1)."""
    chosen = 0.45 + 0.5 * _unit(prompt, f"{index}:chosen")
    rest = [alternative for alternative in pool if alternative != token]
    shares = [(0.2 + 0.6 * _unit(prompt, f"{index}:{n}")) / 2 ** (n + 1) for n in range(len(rest))]
    ranked = [(token, chosen)] + [(alt, (1 - chosen) * share) for alt, share in zip(rest, shares, strict=True)]
    return [(text, math.log(p)) for text, p in ranked]


QPainToken = tuple[str, float, list[tuple[str, float]]]  # (token, its log-probability, the top k)


def qpain_completion(
    prompt: str, *, k: int, stop: list[str] | str | None = None, max_tokens: int | None = None
) -> tuple[str, str, list[QPainToken]]:
    """(text, finish_reason, generated tokens) the stand-in answers a Q-Pain prompt with: the reply cut at
    the first stop string, then at max_tokens tokens."""
    text, finish_reason = qpain_reply(prompt), "stop"
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cuts = [text.index(end) for end in stops if end and end in text]
    if cuts:
        text = text[: min(cuts)]
    tokens = QPAIN_TOKEN.findall(text)
    if max_tokens is not None and len(tokens) > max_tokens:
        tokens, finish_reason = tokens[:max_tokens], "length"
        text = "".join(tokens)
    generated: list[QPainToken] = []
    so_far = ""
    for index, token in enumerate(tokens):
        pool = QPAIN_ANSWERS if index == 0 else QPAIN_DOSES if so_far.endswith("Dosage:") else QPAIN_OTHERS
        ranked = qpain_alternatives(prompt, index, token, pool)
        generated.append((token, ranked[0][1], ranked[:k]))
        so_far += token
    return text, finish_reason, generated


def qpain_response(body: dict, prompt: str, *, request_number: int) -> dict:
    """The JSON answer to a Q-Pain request, in the format of the endpoint it came to."""
    completions = "prompt" in body
    k = int((body.get("logprobs") or 0) if completions else (body.get("top_logprobs") or 0))
    text, finish_reason, generated = qpain_completion(
        prompt, k=k, stop=body.get("stop"), max_tokens=body.get("max_tokens")
    )
    logprobs = None
    if body.get("logprobs") and completions:  # the legacy object; offsets count from the prompt's start
        offsets = [len(prompt) + len("".join(token for token, _, _ in generated[:n])) for n in range(len(generated))]
        logprobs = {
            "tokens": [token for token, _, _ in generated],
            "token_logprobs": [logprob for _, logprob, _ in generated],
            "text_offset": offsets,
            "top_logprobs": [dict(top) for _, _, top in generated],
        }
    elif body.get("logprobs"):
        logprobs = {"content": [
            {"token": token, "logprob": logprob, "bytes": list(token.encode()),
             "top_logprobs": [{"token": alt, "logprob": value, "bytes": list(alt.encode())} for alt, value in top]}
            for token, logprob, top in generated
        ]}  # fmt: skip
    if completions:
        choice = {"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": logprobs}
    else:
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": logprobs}
    words = len(prompt.split())
    usage = {"prompt_tokens": words, "completion_tokens": len(generated), "total_tokens": words + len(generated)}
    return {"id": f"cmpl-{request_number}", "model": body["model"], "choices": [choice], "usage": usage}
