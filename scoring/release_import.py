"""Import BiasMedQA's released model responses (`model_responses_*.csv[.gz]`, ../shared/datasets/biasmedqa/SOURCE.md).

Each row is an answer of the source named by `model` to the base MedQA question (`bias_type` none) or to the
variant with that bias and that row's bias letter (the letter was drawn per run, so the released dataset keeps
one variant per letter seen), under the row's condition (`parameters`: the release, the mitigation and the
bias, so each condition's answers are kept apart by the settings hash). The released correctness label is
stored beside it as the score `released` v1, never recomputed (scoring/DESIGN.md).

Two streaming passes like the other importers (datasets/DESIGN.md): pass 1 checks every row and keeps only
64-bit hashes; any bad row rejects the file with its line and nothing is written. Pass 2 reads the file again
and writes it in batches inside one transaction. A second import of the same file creates nothing.
"""

import functools
import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import transaction

from datasets.factors import REFERENCE_LEVEL
from datasets.importers.answers import check_study, link_imported
from datasets.importers.errors import ImportRejected, RowError, RowErrors
from datasets.importers.questions import MEDQA_DATASET
from datasets.importers.reading import Opener, Source, csv_rows, is_blank_row, opener_for, text_problem
from datasets.importers.report import ImportReport
from datasets.importers.store import BATCH_ROWS, batches, short_hash
from datasets.models import Answer, AnswerSource, Dataset, Question, settings_fingerprint, text_fingerprint
from datasets.variants import biasmedqa
from scoring.models import Score
from scoring.scorers import CORRECT, NO_ANSWER_MARKER, NON_RESPONSE, RELEASED, WRONG

RELEASE = "BiasMedQA (cog-bias-med-LLMs @ bee2807d)"
VARIANT_DATASET = "BiasMedQA (released responses)"
COLUMNS = ("model", "bias_type", "mitigation", "qid", "answer_idx", "bias_answer_idx", "response", "is_correct",
           "is_correct_raw", "is_correct_source", "source_file")  # fmt: skip
NO_BIAS = REFERENCE_LEVEL  # the unbiased question
LETTERS = frozenset("ABCDE")
# The released label -> the outcome stored as the `released` score. An empty label (the release has none, but
# SOURCE.md allows it: a label that could not be normalised) is no clear answer, like the auto-evaluator's NR.
LABELS = {"True": CORRECT, "False": WRONG, "NR": NON_RESPONSE, "": NON_RESPONSE}
LABEL_SOURCES = ("first_char_match", "auto_eval_gpt-3.5")
REPOSITORY = "https://github.com/carlwharris/cog-bias-med-LLMs"
SOURCE_DESCRIPTION = (
    f"Responses released with BiasMedQA (Schmidgall, Harris et al., arXiv:2402.08113; {REPOSITORY} at commit "
    "bee2807d6de1fa7a86588fb13b17de8c9c13556d, final_results/). The repository has no licence: internal use only."
)
VARIANT_DESCRIPTION = (
    "MedQA USMLE test questions with BiasMedQA's cognitive-bias sentences, one variant per (question, bias, "
    "bias letter) seen in the released responses (the letter was drawn per run). Made by "
    "import_biasmedqa_responses from the base questions and biasmedqa.biased_question."
)


@dataclass
class ReleaseReport(ImportReport):
    """ImportReport plus the released scores; `questions_*` count the bias variants."""

    scores_created: int = 0
    scores_existing: int = 0
    released_outcomes: dict[str, int] = field(default_factory=dict)  # of the scores created
    empty_labels: int = 0
    nr_responses: int = 0

    def summary_lines(self) -> list[str]:
        lines = super().summary_lines()
        lines.append(f"Released scores: {self.scores_created} new, {self.scores_existing} already present")
        if self.released_outcomes:
            lines.append("Released outcomes (new): " + ", ".join(f"{k} {v}" for k, v in self.released_outcomes.items()))
        lines.append(f"Responses 'NR' (no answer from the API, stored as refusals): {self.nr_responses}")
        if self.empty_labels:
            lines.append(f"Empty labels (stored as non-responses): {self.empty_labels}")
        return lines


@dataclass
class ReleaseRow:
    line: int
    model: str
    bias: str
    mitigation: str
    qid: str
    answer_idx: str
    letter: str  # the bias letter; empty for bias none
    response: str
    label: str
    label_raw: str
    label_source: str
    source_file: str

    @property
    def variant_id(self) -> str:
        return f"{self.qid}-{self.bias}-{self.letter}"

    def parameters(self) -> dict:
        return release_parameters(self.mitigation, self.bias)

    def settings_hash(self) -> str:
        return _settings_hash(self.mitigation, self.bias)

    @property
    def no_answer(self) -> bool:
        return self.response.strip() in ("", NO_ANSWER_MARKER)

    def outcome(self) -> str:
        # "NR" as the response is the logs' marker for no answer from the API (paper, Appendix C): whatever
        # the first-character rule labelled it (always False), it is no answer.
        return NON_RESPONSE if self.no_answer else LABELS[self.label]


def release_parameters(mitigation: str, bias: str) -> dict:
    """An answer's parameters: the release and its condition, so each condition's answers are kept apart."""
    return {"release": RELEASE, "condition": {"mitigation": mitigation}, "bias_type": bias}


@functools.cache
def _settings_hash(mitigation: str, bias: str) -> str:
    # A few dozen conditions in a file of 216,288 rows: hash each once.
    return settings_fingerprint(release_parameters(mitigation, bias))


@dataclass
class _Base:
    """The base questions (1,273 for MedQA test), held whole: bounded by the base dataset, not the file."""

    dataset: Dataset
    questions: dict[str, Question]  # external id (qid) -> question


def import_biasmedqa_responses(
    source: Source, filename: str, *, base_dataset: str = MEDQA_DATASET, study: int | None = None
) -> ReleaseReport:
    """Import the file, all or nothing; for a study (its id), each answer created or found is linked to it."""
    source = _decompressed(source)
    check_study(study)
    base = _base(base_dataset)
    checked = _Pass()
    _check_file(source, base, checked)
    report = ReleaseReport(rows=checked.rows)
    with transaction.atomic():
        written = _Pass()
        writer = _Writer(base, report, study)
        for batch in batches(_rows(source, base, written), _row_size):
            writer.write(batch)
        if written.errors:  # the file changed between the passes
            raise written.errors.rejected()
    return report


# --- Reading ---------------------------------------------------------------------------------------


def _decompressed(source: Source) -> Opener:
    """A gzip file (by its magic bytes, whatever its name) is read through gzip, still as a stream."""
    opener = opener_for(source)
    with opener() as stream:
        magic = stream.read(2)
    if magic != b"\x1f\x8b":
        return opener
    return lambda: _GzipStream(opener())


class _GzipStream(io.BufferedReader):
    """Decompresses as it reads; closing it closes the file under it. A damaged file rejects the import."""

    def __init__(self, raw):
        self._file = raw
        super().__init__(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[arg-type]

    def readline(self, size: int | None = -1) -> bytes:
        try:
            return super().readline(size)
        except (OSError, EOFError) as error:  # BadGzipFile is an OSError; a cut file ends with EOFError
            raise ImportRejected([RowError(0, f"the gzip file is damaged or cut short ({error})")]) from error

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._file.close()


@dataclass
class _Pass:
    rows: int = 0
    errors: RowErrors = field(default_factory=RowErrors)


def _rows(source: Opener, base: _Base, parsed: _Pass) -> Iterator[ReleaseRow]:
    records = csv_rows(source)
    header = next(records, None)
    if header is None or is_blank_row(header[1]):
        raise ImportRejected([RowError(1, f"the file has no header; expected the columns {', '.join(COLUMNS)}")])
    names = [name.strip() for name in header[1]]
    missing = [name for name in COLUMNS if name not in names]
    unknown = [name for name in names if name not in COLUMNS]
    if missing or unknown or len(set(names)) != len(names):
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(unknown)}"] if unknown else []) + (
            ["a column is named twice"] if len(set(names)) != len(names) else [])  # fmt: skip
        message = f"not a BiasMedQA responses file ({'; '.join(problems)}); expected the columns {', '.join(COLUMNS)}"
        raise ImportRejected([RowError(header[0], message)])
    index = {name: names.index(name) for name in COLUMNS}
    for line, cells in records:
        parsed.rows += 1
        if len(cells) != len(names):
            parsed.errors.add(line, f"{len(cells)} cells where the header has {len(names)} columns")
            continue
        row = ReleaseRow(line, *(cells[index[name]] for name in COLUMNS))  # type: ignore[arg-type]
        if problem := _row_problem(row, base):
            parsed.errors.add(line, problem)
            continue
        yield row


def _row_problem(row: ReleaseRow, base: _Base) -> str | None:
    for name in COLUMNS:
        if problem := text_problem(getattr(row, _attribute(name))):
            return f"{name}: {problem}"
    if not row.model.strip() or len(row.model) > 200:
        return "model must be a name of at most 200 characters"
    if row.bias != NO_BIAS and row.bias not in biasmedqa.SENTENCES:
        return f"unknown bias_type {row.bias!r}; known: {NO_BIAS}, {', '.join(biasmedqa.SENTENCES)}"
    if row.mitigation not in biasmedqa.MITIGATIONS:
        return f"unknown mitigation {row.mitigation!r}; known: {', '.join(biasmedqa.MITIGATIONS)}"
    question = base.questions.get(row.qid)
    if question is None:
        return f"qid {row.qid!r} is not a question of {base.dataset.name!r} (0 to {len(base.questions) - 1})"
    options = question.metadata.get("options") or {}
    if row.answer_idx not in LETTERS:
        return f"answer_idx {row.answer_idx!r} is not a letter A-E"
    if row.answer_idx != question.metadata.get("answer_idx"):
        return f"answer_idx {row.answer_idx} differs from question {row.qid}'s ({question.metadata.get('answer_idx')})"
    if row.bias == NO_BIAS:
        if row.letter:
            return f"bias_answer_idx must be empty when bias_type is none, not {row.letter!r}"
    elif row.letter not in LETTERS or row.letter not in options:
        return f"bias_answer_idx {row.letter!r} is not one of question {row.qid}'s options ({', '.join(options)})"
    if row.label not in LABELS:
        return f"is_correct {row.label!r} is not True, False, NR or empty"
    if row.label_source not in LABEL_SOURCES:
        return f"unknown is_correct_source {row.label_source!r}; known: {', '.join(LABEL_SOURCES)}"
    return None


def _attribute(column: str) -> str:
    return {"bias_type": "bias", "bias_answer_idx": "letter", "response": "response", "is_correct": "label",
            "is_correct_raw": "label_raw", "is_correct_source": "label_source"}.get(column, column)  # fmt: skip


def _row_size(row: ReleaseRow) -> int:
    return len(row.response) + len(row.label_raw) + 2000  # a variant's text (a MedQA vignette) is about 1 KB


def _base(name: str) -> _Base:
    dataset = Dataset.objects.filter(name__iexact=name).first()
    if dataset is None or not dataset.questions.exists():
        raise ImportRejected([RowError(0, (
            f"the base questions ({name!r}) are not imported: import them first with `python manage.py "
            "import_questions --format medqa datasets/demo_data/medqa_usmle_test.jsonl` (or "
            "../shared/datasets/biasmedqa/questions/test.jsonl), or name them with --base-dataset"))])  # fmt: skip
    questions = {q.external_id: q for q in dataset.questions.filter(base__isnull=True).only("id", "external_id", "text",
                                                                                              "metadata")}  # fmt: skip
    return _Base(dataset, questions)


# --- Pass 1: check ---------------------------------------------------------------------------


def _check_file(source: Opener, base: _Base, parsed: _Pass) -> None:
    seen: set[int] = set()  # hash(model, bias, mitigation, qid): one response per condition and question
    database = RowErrors()  # conflicts with what is stored: reported only when the file itself is well formed
    resolver = _Resolver(base)
    for batch in batches(_rows(source, base, parsed), _row_size):
        for row in batch:
            key = short_hash(row.model, row.bias, row.mitigation, row.qid)
            if key in seen:
                parsed.errors.add(row.line, (f"a second response of {row.model} to qid {row.qid} with bias "
                                             f"{row.bias} and mitigation {row.mitigation}"))  # fmt: skip
            seen.add(key)
        _check_against_database(batch, resolver, database)
    if parsed.errors:
        raise parsed.errors.rejected()
    if database:
        raise database.rejected()


def _check_against_database(batch: list[ReleaseRow], resolver: "_Resolver", errors: RowErrors) -> None:
    """A stored variant with another text, or a stored answer with another text, is a conflict (never overwritten)."""
    variants = resolver.stored_variants(batch)
    for row in batch:
        stored = variants.get(row.variant_id) if row.bias != NO_BIAS else None
        if stored is not None and stored[1] != text_fingerprint(resolver.variant_text(row)[0]):
            errors.add(row.line, f"variant {row.variant_id!r} in {VARIANT_DATASET!r} has a different text")
    answers = resolver.stored_answers(batch, {key: pk for key, (pk, _) in variants.items()})
    for row in batch:
        stored = answers.get(row.line)
        if stored is not None and stored[1] != row.response:
            errors.add(row.line, f"{row.model!r} already has a different answer to {_question_name(row)} in this "
                                 "condition")  # fmt: skip


def _question_name(row: ReleaseRow) -> str:
    return f"qid {row.qid}" if row.bias == NO_BIAS else f"variant {row.variant_id}"


class _Resolver:
    """Finds what is already stored for a batch of rows: sources, variants and answers (a query each)."""

    def __init__(self, base: _Base):
        self.base = base
        self.variant_dataset = Dataset.objects.filter(name__iexact=VARIANT_DATASET).first()
        self.sources: dict[str, AnswerSource | None] = {}

    def source(self, name: str) -> AnswerSource | None:
        if name not in self.sources:
            self.sources[name] = AnswerSource.objects.filter(name=name).first()
        return self.sources[name]

    def variant_text(self, row: ReleaseRow) -> tuple[str, str]:
        question = self.base.questions[row.qid]
        return biasmedqa.biased_question(question.text, question.metadata["options"], row.bias, row.letter)

    def stored_variants(self, batch: list[ReleaseRow]) -> dict[str, tuple[int, str]]:
        """external id -> (id, text hash) of the batch's variants already stored."""
        if self.variant_dataset is None:
            return {}
        ids = {row.variant_id for row in batch if row.bias != NO_BIAS}
        return {
            external_id: (pk, digest)
            for pk, external_id, digest in self.variant_dataset.questions.filter(external_id__in=ids).values_list(
                "id", "external_id", "text_hash"
            )
        }

    def question_id(self, row: ReleaseRow, variants: dict[str, int]) -> int | None:
        if row.bias == NO_BIAS:
            return self.base.questions[row.qid].id
        return variants.get(row.variant_id)

    def stored_answers(self, batch: list[ReleaseRow], variants: dict[str, int]) -> dict[int, tuple[int, str]]:
        """line -> (answer id, text) of the batch's rows whose answer is already stored."""
        keys: dict[tuple[int, int, str], int] = {}
        for row in batch:
            source = self.source(row.model)
            question_id = self.question_id(row, variants)
            if source is not None and question_id is not None:
                keys[(question_id, source.id, row.settings_hash())] = row.line
        if not keys:
            return {}
        stored = Answer.objects.filter(
            source_id__in={key[1] for key in keys}, question_id__in={key[0] for key in keys}
        ).values_list("question_id", "source_id", "settings_hash", "id", "text")
        return {
            keys[(question_id, source_id, digest)]: (pk, text)
            for question_id, source_id, digest, pk, text in stored
            if (question_id, source_id, digest) in keys
        }


# --- Pass 2: write ---------------------------------------------------------------------------


class _Writer:
    def __init__(self, base: _Base, report: ReleaseReport, study: int | None = None):
        self.base = base
        self.report = report
        self.study = study
        self.resolver = _Resolver(base)
        self.counted: set[int] = set()  # hash(variant id) of the variants counted as existing

    def write(self, batch: list[ReleaseRow]) -> None:
        variants = self._variants(batch)
        answers = self._answers(batch, variants)
        link_imported(self.study, answers.values())
        self._scores(batch, answers)

    def _variants(self, batch: list[ReleaseRow]) -> dict[str, int]:
        """external id -> question id of every variant the batch names, creating the missing ones."""
        if not any(row.bias != NO_BIAS for row in batch):
            return {}
        if self.resolver.variant_dataset is None:
            self.resolver.variant_dataset = Dataset.objects.create(
                name=VARIANT_DATASET, description=VARIANT_DESCRIPTION, source=f"{REPOSITORY} @ bee2807d",
                licence="none stated (MedQA base questions: MIT)",
            )  # fmt: skip
            self.report.datasets_created.append(VARIANT_DATASET)
        stored = {key: pk for key, (pk, _) in self.resolver.stored_variants(batch).items()}
        new: dict[str, Question] = {}
        for row in batch:
            if row.bias == NO_BIAS or row.variant_id in stored or row.variant_id in new:
                continue
            base = self.base.questions[row.qid]
            text, sentence = self.resolver.variant_text(row)
            new[row.variant_id] = Question(
                dataset=self.resolver.variant_dataset,
                external_id=row.variant_id,
                text=text,
                text_hash=text_fingerprint(text),
                metadata=biasmedqa.variant_metadata(base.metadata, row.bias, row.letter, sentence),
                base=base,
                levels={biasmedqa.FACTOR: row.bias},
            )
        Question.objects.bulk_create(new.values(), batch_size=BATCH_ROWS)
        self.report.questions_created += len(new)
        for key in stored:
            if (digest := short_hash(key)) not in self.counted:
                self.counted.add(digest)
                self.report.questions_existing += 1
        return stored | {key: question.pk for key, question in new.items()}

    def _source(self, name: str) -> AnswerSource:
        source = self.resolver.source(name)
        if source is None:
            source = AnswerSource.objects.create(name=name, kind=AnswerSource.Kind.IMPORTED, model_name=name,
                                                 description=SOURCE_DESCRIPTION)  # fmt: skip
            self.resolver.sources[name] = source
            self.report.sources_created.append(name)
        return source

    def _answers(self, batch: list[ReleaseRow], variants: dict[str, int]) -> dict[int, int]:
        """line -> answer id for every row of the batch, creating the missing answers."""
        for name in {row.model for row in batch}:
            self._source(name)
        stored = self.resolver.stored_answers(batch, variants)
        ids = {line: pk for line, (pk, _) in stored.items()}
        new: dict[int, Answer] = {}
        for row in batch:
            if row.line in stored:
                if stored[row.line][1] != row.response:  # stored between the passes
                    raise ImportRejected([RowError(row.line, f"{row.model!r} already has a different answer")])
                self.report.answers_existing += 1
                continue
            new[row.line] = Answer(
                question_id=self.resolver.question_id(row, variants),
                source=self.resolver.sources[row.model],
                text=row.response,
                model_name=row.model,
                parameters=row.parameters(),
                settings_hash=row.settings_hash(),
                response_metadata={"source_file": row.source_file, "is_correct_raw": row.label_raw},
                provenance_note=f"{RELEASE}: {row.source_file}",
                refusal=row.no_answer,
            )
            self.report.nr_responses += row.no_answer
            self.report.empty_answers += not row.response.strip()
        Answer.objects.bulk_create(new.values(), batch_size=BATCH_ROWS)
        self.report.answers_created += len(new)
        return ids | {line: answer.pk for line, answer in new.items()}

    def _scores(self, batch: list[ReleaseRow], answers: dict[int, int]) -> None:
        scored = set(
            Score.objects.filter(answer_id__in=answers.values(), scorer=RELEASED, version=1).values_list(
                "answer_id", flat=True
            )
        )
        new = []
        for row in batch:
            answer_id = answers[row.line]
            if answer_id in scored:
                self.report.scores_existing += 1
                continue
            outcome = row.outcome()
            outcomes = self.report.released_outcomes
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            self.report.empty_labels += row.label == ""
            value = {"label": row.label, "raw": row.label_raw, "label_source": row.label_source}
            new.append(Score(answer_id=answer_id, scorer=RELEASED, version=1, outcome=outcome, value=value))
        Score.objects.bulk_create(new, batch_size=BATCH_ROWS)
        self.report.scores_created += len(new)
