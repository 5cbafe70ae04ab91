"""Import MEDIC's JSONL files (`Desire`, `Prompt`, `Answer`, `Style` records; datasets/DESIGN.md, "MEDIC import").

Every record becomes what it is in MEDIC's chain: a desire, an expanded desire (`Desire_source_id`), a patient
question made from a desire (a `Prompt` with `Desire_source_id`) or a restyled question (`Prompt_source_id`),
each a question of one dataset whose `base` is the record it came from; an `Answer` is an answer of the source
named by its `chatbot_name`. `Style` records are only counted.

All files or nothing, in the import streams' passes (DESIGN.md, "Imports stream"): pass 1 reads every file and
keeps per record only its id, a 64-bit hash of its text and its link, then checks the links and the database;
any problem rejects every file, each problem named by file and line. Pass 2 writes the questions in batches
(a base found later in the files is linked at the end), pass 3 the answers, all in one transaction.
"""

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from ..chains.medic_templates import ensure_medic_recipes
from ..factors import levels_problem
from ..medic_styles import style_levels
from ..models import Answer, AnswerSource, Dataset, PromptRecipe, Question, settings_fingerprint, text_fingerprint
from .answers import check_study, link_imported
from .errors import RowErrors
from .reading import Opener, jsonl_rows
from .report import ImportReport
from .store import BATCH_ROWS, batches, get_or_create_datasets, short_hash

MEDIC_DATASET = "MEDIC (BBN fixtures)"
DESIRE, PROMPT, ANSWER, STYLE = "Desire", "Prompt", "Answer", "Style"
TYPES = (DESIRE, PROMPT, ANSWER, STYLE)
LINKS = {"Desire_source_id": DESIRE, "Prompt_source_id": PROMPT}  # the link field -> the type it points to
DERIVED_ID_PREFIX = "desire-sha256-"  # a Desire without an id: the prefix and 16 hex digits of its text's SHA-256
MAX_ID_CHARS = 200  # Question.external_id
NO_SETTINGS = settings_fingerprint({})  # imported answers carry no generation settings


def derived_desire_id(text: str) -> str:
    """The stable id of a Desire that has none: the same text always gets the same id."""
    return DERIVED_ID_PREFIX + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class MedicFile:
    name: str  # as named in errors and provenance (the file name)
    open: Opener


@dataclass
class Record:
    """One question (a Desire or a Prompt, nested prompts included) or answer read from a file."""

    where: str  # "FILE, line N" (and the nested prompt's place)
    type: str
    id: str
    text: str
    metadata: dict
    file: str
    link: str | None = None  # the id it came from (Desire_source_id / Prompt_source_id; a nested prompt's desire)
    link_type: str | None = None
    derived_id: bool = False
    nested_in: str | None = None
    prompt_id: str = ""  # answers
    chatbot: str = ""

    def step(self) -> str:
        if self.type == DESIRE:
            return "expanded_desire" if self.link else "desire"
        return "question" if self.link_type == DESIRE else "restyled"

    def levels(self) -> dict[str, str]:
        return {"step": self.step(), **style_levels(self.metadata.get("style"))}

    def question_metadata(self) -> dict:
        kept = {"type": self.type, "metadata": self.metadata, "file": self.file}
        if self.derived_id:
            kept["derived_id"] = True
        if self.nested_in:
            kept["nested_in"] = self.nested_in
        return kept


def read_records(file: MedicFile, errors: RowErrors, counts: dict[str, int]) -> Iterator[Record]:
    """Every question and answer of the file, nested prompts after their desire; a bad line adds its problem
    to `errors` (and yields nothing); `counts` gets the records read per type."""
    for line, value, problem in jsonl_rows(file.open):
        where = f"{file.name}, line {line}"
        if problem or value is None:
            errors.add(0, f"{where}: {problem}")
            continue
        kind = value.get("type")
        if kind not in TYPES:
            known = ", ".join(TYPES)
            found = f"unknown type {kind!r}" if "type" in value else "no type"
            errors.add(0, f"{where}: {found}; each record names its type: {known}")
            if isinstance(value.get("metadata"), str):  # the malformed fixture's second line has both faults
                errors.add(0, f"{where}: metadata must be a JSON object, found a string")
            continue
        counts[kind] = counts.get(kind, 0) + 1
        for record_or_problem in _records(value, where, file.name):
            if isinstance(record_or_problem, str):
                errors.add(0, record_or_problem)
            else:
                yield record_or_problem


def _records(value: dict, where: str, filename: str) -> Iterator[Record | str]:
    kind = value["type"]
    text = value.get("text")
    if not isinstance(text, str) or not text.strip():
        yield f"{where}: a {kind} needs a text (a non-empty string)"
        return
    if kind == STYLE:
        return
    metadata = value.get("metadata")
    if metadata is None and kind != PROMPT:
        metadata = {}
    if metadata is None:
        yield f"{where}: a Prompt needs metadata naming its source (Desire_source_id or Prompt_source_id)"
        return
    if not isinstance(metadata, dict):
        yield f"{where}: metadata must be a JSON object, found {'a string' if isinstance(metadata, str) else 'other'}"
        return
    if kind == ANSWER:
        yield _answer(value, text, metadata, where, filename)
    elif kind == DESIRE:
        yield from _desire(value, text, metadata, where, filename)
    else:
        yield _prompt(value, text, metadata, where, filename, parent=None)


def _plain_id(value: object, field_name: str, where: str) -> str:
    """The id: a non-empty string of at most MAX_ID_CHARS characters (else _Bad)."""
    if not isinstance(value, str) or not value.strip():
        raise _Bad(f"{where}: {field_name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise _Bad(f"{where}: {field_name} is longer than {MAX_ID_CHARS} characters")
    return value


class _Bad(Exception):
    """What is wrong with a record, with its place."""


def _check_style(metadata: dict, where: str) -> None:
    style = metadata.get("style")
    if style is not None and not isinstance(style, str):
        raise _Bad(f"{where}: style must be a string")
    if problem := levels_problem(style_levels(style)):
        raise _Bad(f"{where}: style: {problem}")


def _link(metadata: dict, where: str, allowed: tuple[str, ...]) -> tuple[str | None, str | None]:
    named = [name for name in LINKS if name in metadata]
    wrong = [name for name in named if name not in allowed]
    if wrong:
        raise _Bad(f"{where}: a record of this type cannot have {wrong[0]}")
    if len(named) > 1:
        raise _Bad(f"{where}: name one source, Desire_source_id or Prompt_source_id, not both")
    if not named:
        return None, None
    return _plain_id(metadata[named[0]], named[0], where), LINKS[named[0]]


def _desire(value: dict, text: str, metadata: dict, where: str, filename: str) -> Iterator[Record | str]:
    try:
        derived = "id" not in value or value["id"] is None
        desire_id = derived_desire_id(text) if derived else _plain_id(value["id"], "id", where)
        link, link_type = _link(metadata, where, ("Desire_source_id",))
        _check_style(metadata, where)
    except _Bad as bad:
        yield str(bad)
        return
    yield Record(where, DESIRE, desire_id, text, metadata, filename, link, link_type, derived_id=derived)
    prompts = value.get("prompts") or []
    if not isinstance(prompts, list):
        yield f"{where}: prompts must be a list of Prompt records"
        return
    for index, nested in enumerate(prompts):
        place = f"{where}, prompts[{index}]"
        if not isinstance(nested, dict) or nested.get("type", PROMPT) != PROMPT:
            yield f"{place}: a nested prompt must be a Prompt record"
            continue
        nested_text = nested.get("text")
        nested_metadata = nested.get("metadata", {})
        if not isinstance(nested_text, str) or not nested_text.strip():
            yield f"{place}: a Prompt needs a text (a non-empty string)"
        elif not isinstance(nested_metadata, dict):
            yield f"{place}: metadata must be a JSON object"
        else:
            yield _prompt(nested, nested_text, nested_metadata, place, filename, parent=desire_id)


def _prompt(value: dict, text: str, metadata: dict, where: str, filename: str, parent: str | None) -> Record | str:
    try:
        prompt_id = _plain_id(value.get("id"), "id", where)
        link, link_type = _link(metadata, where, tuple(LINKS))
        if link is None and parent is not None:  # a desire's nested prompts come from it
            link, link_type = parent, DESIRE
        if link is None:
            raise _Bad(f"{where}: a Prompt's metadata names its source: Desire_source_id or Prompt_source_id")
        _check_style(metadata, where)
    except _Bad as bad:
        return str(bad)
    return Record(where, PROMPT, prompt_id, text, metadata, filename, link, link_type, nested_in=parent)


def _answer(value: dict, text: str, metadata: dict, where: str, filename: str) -> Record | str:
    try:
        answer_id = _plain_id(value.get("id"), "id", where)
        prompt_id = _plain_id(value.get("prompt_id"), "prompt_id", where)
        chatbot = _plain_id(value.get("chatbot_name"), "chatbot_name", where)
    except _Bad as bad:
        return str(bad)
    return Record(where, ANSWER, answer_id, text, metadata, filename, prompt_id=prompt_id, chatbot=chatbot)


# --- Pass 1: check -----------------------------------------------------------------------------


@dataclass
class _Seen:
    """What pass 1 keeps per record: hashes, links and places, never texts."""

    questions: dict[str, tuple[int, str | None, str, str]] = field(
        default_factory=dict
    )  # id -> text, link, type, where
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (target id, target type, where)
    answers: dict[tuple[str, str], tuple[str, int, str]] = field(default_factory=dict)  # (prompt, chatbot) -> id
    answer_prompts: list[tuple[str, str]] = field(default_factory=list)  # (prompt id, where)
    chatbots: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)


def import_medic_files(
    files: list[MedicFile], *, dataset: str = MEDIC_DATASET, study: int | None = None
) -> ImportReport:
    """Import the files into the dataset (created if missing), all or nothing; ImportRejected names every
    problem by file and line. MEDIC's generation templates come with its data: the recipes of
    `datasets/chains/medic_templates.py` are made when missing (a MEDIC study file's steps name them)."""
    errors = RowErrors()
    seen = _Seen()
    for file in files:
        _check_file(file, seen, errors)
    stored = Dataset.objects.filter(name__iexact=dataset).first()
    if not errors:
        _check_links(seen, stored, errors)
        _check_database(seen, stored, errors)
    if errors:
        raise errors.rejected()
    check_study(study, sources=sorted(seen.chatbots), datasets=[stored.name if stored else dataset])
    report = ImportReport(rows=sum(seen.counts.values()))
    with transaction.atomic():
        if made := ensure_medic_recipes(PromptRecipe):
            report.notes.append(f"MEDIC's generation templates: {made} prompt recipes made")
        target = get_or_create_datasets([dataset], report)[dataset]
        _write_questions(files, target, report, errors)
        if seen.answer_prompts:
            _write_answers(files, target, report, errors, study)
        if errors:  # a file changed between the passes
            raise errors.rejected()
    report.notes.append("Records read: " + ", ".join(f"{seen.counts.get(kind, 0)} {kind}" for kind in TYPES))
    if seen.counts.get(STYLE):
        report.notes.append(f"Style records: {seen.counts[STYLE]} read and counted; styles are stored as levels")
    return report


def _check_file(file: MedicFile, seen: _Seen, errors: RowErrors) -> None:
    for record in read_records(file, errors, seen.counts):
        if record.type == ANSWER:
            _check_answer(record, seen, errors)
            continue
        digest = short_hash(record.text.strip())
        known = seen.questions.setdefault(record.id, (digest, record.link, record.type, record.where))
        if known[:3] != (digest, record.link, record.type):
            errors.add(0, f"{record.where}: id {record.id!r} is also {known[3]}, with another text, type or source")
            continue
        if known[3] != record.where:
            continue  # the same record again (a desire without id repeated): one question
        if record.link is not None:
            seen.links.append((record.link, record.link_type or "", record.where))


def _check_answer(record: Record, seen: _Seen, errors: RowErrors) -> None:
    key = (record.prompt_id, record.chatbot)
    digest = short_hash(record.text.strip())
    known = seen.answers.setdefault(key, (record.id, digest, record.where))
    if known[:2] != (record.id, digest):
        errors.add(0, f"{record.where}: {record.chatbot!r} answers {record.prompt_id!r} twice (also {known[2]})")
        return
    if known[2] == record.where:
        seen.answer_prompts.append((record.prompt_id, record.where))
        seen.chatbots.add(record.chatbot)


def _stored_types(dataset: Dataset | None, ids: set[str]) -> dict[str, str]:
    """external id -> MEDIC type of the dataset's stored questions among these ids."""
    if dataset is None or not ids:
        return {}
    found: dict[str, str] = {}
    id_list = sorted(ids)
    for start in range(0, len(id_list), BATCH_ROWS):
        rows = dataset.questions.filter(external_id__in=id_list[start : start + BATCH_ROWS])
        for external_id, kind in rows.values_list("external_id", "metadata__type"):
            found[external_id] = str(kind) if kind else "question without a MEDIC type"
    return found


def _check_links(seen: _Seen, dataset: Dataset | None, errors: RowErrors) -> None:
    """Every source id and every answer's prompt is a record of the import or a question of the dataset."""
    outside = {target for target, _, _ in seen.links if target not in seen.questions}
    outside |= {prompt for prompt, _ in seen.answer_prompts if prompt not in seen.questions}
    stored = _stored_types(dataset, outside)
    for target, target_type, where in seen.links:
        kind = seen.questions[target][2] if target in seen.questions else stored.get(target)
        if kind is None:
            errors.add(0, f"{where}: its source {target!r} is neither in these files nor in the dataset")
        elif kind != target_type:
            errors.add(0, f"{where}: its source {target!r} is a {kind}, not a {target_type}")
    for prompt, where in seen.answer_prompts:
        if prompt not in seen.questions and prompt not in stored:
            errors.add(0, f"{where}: its prompt {prompt!r} is neither in these files nor in the dataset")


def _check_database(seen: _Seen, dataset: Dataset | None, errors: RowErrors) -> None:
    """Stored questions are never overwritten: an id stored with another text or source is an error, and so is
    a chatbot's stored answer to a prompt that differs. Texts may repeat under other ids: every MEDIC question
    carries levels, so the plain questions' text constraint does not apply (models.Question)."""
    if dataset is None:
        return
    ids = sorted(seen.questions)
    for start in range(0, len(ids), BATCH_ROWS):
        batch = ids[start : start + BATCH_ROWS]
        for external_id, text_hash, base_id in dataset.questions.filter(external_id__in=batch).values_list(
            "external_id", "text_hash", "base__external_id"
        ):
            digest, link, _, where = seen.questions[external_id]
            if int(text_hash[:16], 16) != digest:  # short_hash(text) is the fingerprint's first 64 bits
                errors.add(0, f"{where}: {dataset.name!r} holds {external_id!r} with another text; never overwritten")
            elif base_id != link:
                errors.add(0, f"{where}: {dataset.name!r} holds {external_id!r} with another source ({base_id!r})")
    _check_stored_answers(seen, dataset, errors)


def _check_stored_answers(seen: _Seen, dataset: Dataset, errors: RowErrors) -> None:
    keys = sorted(seen.answers)
    for start in range(0, len(keys), BATCH_ROWS):
        batch = keys[start : start + BATCH_ROWS]
        stored = Answer.objects.filter(
            question__dataset=dataset,
            question__external_id__in={prompt for prompt, _ in batch},
            source__name__in={chatbot for _, chatbot in batch},
            settings_hash=NO_SETTINGS,
        ).values_list("question__external_id", "source__name", "text", "response_metadata__medic_answer_id")
        for prompt, chatbot, text, answer_id in stored:
            known = seen.answers.get((prompt, chatbot))
            if known is not None and (known[0] != answer_id or known[1] != short_hash(text.strip())):
                errors.add(0, f"{known[2]}: {chatbot!r} already has another answer to {prompt!r}; never overwritten")


# --- Pass 2: questions; pass 3: answers ----------------------------------------------------------


def _question_records(files: list[MedicFile], errors: RowErrors) -> Iterator[Record]:
    counts: dict[str, int] = {}
    for file in files:
        yield from (record for record in read_records(file, errors, counts) if record.type != ANSWER)


def _pks(dataset: Dataset, ids: set[str], known: dict[str, int]) -> None:
    missing = [external_id for external_id in ids if external_id not in known]
    if missing:
        known.update(dataset.questions.filter(external_id__in=missing).values_list("external_id", "id"))


def _write_questions(files: list[MedicFile], dataset: Dataset, report: ImportReport, errors: RowErrors) -> None:
    pk_by_id: dict[str, int] = {}  # every id of the import written or found so far
    unlinked: dict[str, str] = {}  # id -> source id, for questions written before their source
    for batch in batches(_question_records(files, errors), lambda record: len(record.text) + 200):
        _pks(dataset, {r.id for r in batch} | {r.link for r in batch if r.link}, pk_by_id)
        new: dict[str, Question] = {}
        for record in batch:
            if record.id in pk_by_id or record.id in new:
                report.questions_existing += 1
                continue
            base = pk_by_id.get(record.link) if record.link else None
            if record.link and base is None:
                unlinked[record.id] = record.link
            new[record.id] = Question(
                dataset=dataset, external_id=record.id, text=record.text, text_hash=text_fingerprint(record.text),
                base_id=base, levels=record.levels(), metadata=record.question_metadata(),
            )  # fmt: skip
        Question.objects.bulk_create(new.values(), batch_size=BATCH_ROWS)
        pk_by_id.update((question.external_id, question.pk) for question in new.values())
        report.questions_created += len(new)
    linked = [Question(pk=pk_by_id[external_id], base_id=pk_by_id[link]) for external_id, link in unlinked.items()]
    Question.objects.bulk_update(linked, ["base"], batch_size=BATCH_ROWS)


def _write_answers(
    files: list[MedicFile], dataset: Dataset, report: ImportReport, errors: RowErrors, study: int | None
) -> None:
    sources: dict[str, AnswerSource] = {}
    seen: set[tuple[str, str]] = set()
    for file in files:
        answers = (record for record in read_records(file, errors, {}) if record.type == ANSWER)
        for batch in batches(answers, lambda record: len(record.text) + 200):
            pk_by_id: dict[str, int] = {}
            _pks(dataset, {record.prompt_id for record in batch}, pk_by_id)
            for chatbot in {record.chatbot for record in batch} - sources.keys():
                sources[chatbot] = _source(chatbot, report)
            stored = {
                (question_id, source_id): pk
                for question_id, source_id, pk in Answer.objects.filter(
                    question_id__in=pk_by_id.values(), source__in={sources[r.chatbot] for r in batch},
                    settings_hash=NO_SETTINGS,
                ).values_list("question_id", "source_id", "id")
            }  # fmt: skip
            found, new = [], []
            for record in batch:
                key = (record.prompt_id, record.chatbot)
                if key in seen:
                    continue
                seen.add(key)
                existing = stored.get((pk_by_id[record.prompt_id], sources[record.chatbot].pk))
                if existing is not None:
                    report.answers_existing += 1
                    found.append(existing)
                    continue
                new.append(
                    Answer(
                        question_id=pk_by_id[record.prompt_id],
                        source=sources[record.chatbot],
                        text=record.text,
                        model_name=record.chatbot,
                        parameters={},
                        settings_hash=NO_SETTINGS,
                        response_metadata={"medic_answer_id": record.id, "metadata": record.metadata},
                        provenance_note=f"MEDIC answer {record.id} from {record.file}",
                    )  # fmt: skip
                )
            Answer.objects.bulk_create(new, batch_size=BATCH_ROWS)
            report.answers_created += len(new)
            link_imported(study, [*found, *(answer.pk for answer in new)])


def _source(chatbot: str, report: ImportReport) -> AnswerSource:
    source = AnswerSource.objects.filter(name=chatbot).first()
    if source is None:
        source = AnswerSource.objects.create(
            name=chatbot, kind=AnswerSource.Kind.IMPORTED, model_name=chatbot,
            description="Answers imported from MEDIC's files (chatbot_name).",
        )  # fmt: skip
        report.sources_created.append(source.name)
    return source


def medic_file(path: str | Path) -> MedicFile:
    file = Path(path)
    return MedicFile(file.name, lambda: file.open("rb"))
