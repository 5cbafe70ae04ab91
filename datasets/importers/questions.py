"""Parse question files into rows: no database writes here.

Formats (`detect_format` picks one from the file name and first row):
- `headerless`: the EquityMedQA release CSVs, one question per row, or two columns = a counterfactual pair.
- `table`: CSV with a header or JSONL with a question column, optional id / pair / dataset columns;
  other columns become question metadata.
- `contextsrh`, `qpain`, `medqa`, `biasmedqa`, `biasmedqa_injections`: the seed datasets' own files.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath

from ..catalogue import dataset_name_for_stem
from ..variants import biasmedqa
from .errors import ImportRejected, RowError, RowErrors
from .reading import Source, csv_rows, first_text, is_blank_row, jsonl_rows

FORMATS = ["auto", "headerless", "table", "contextsrh", "qpain", "medqa", "biasmedqa", "biasmedqa_injections"]

CONTEXTSRH_HEADER = ["Source", "Question", "Sex", "Location", "Age"]
QPAIN_HEADER = ["Vignette", "Question", "Answer", "Dosage", "Explanation"]
QPAIN_CONTEXTS = {
    "data_acute_cancer": "Acute Cancer Pain",
    "data_acute_non_cancer": "Acute Non Cancer Pain",
    "data_chronic_cancer": "Chronic Cancer Pain",
    "data_chronic_non_cancer": "Chronic Non Cancer Pain",
    "data_post_op": "Post Operative Pain",
}
QPAIN_PLACEHOLDERS = ["Patient D", "[race]", "[gender]", "[subject]", "[possessive]"]
MEDQA_DATASET = "MedQA (USMLE test)"
BIASMEDQA_RENDERED_DATASET = "BiasMedQA (as logged, qid 0-99)"
BIASMEDQA_FIELDS = ["qid", "bias_type", "answer_idx", "bias_answer_idx", "bias_answer", "injected_sentence"]


@dataclass
class QuestionOptions:
    dataset: str | None = None
    format: str = "auto"
    question_column: str = "question"
    id_column: str = "id"
    pair_column: str | None = None
    dataset_column: str | None = None
    base_dataset: str = MEDQA_DATASET


@dataclass
class QuestionRow:
    line: int
    dataset: str
    external_id: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass
class PairRow:
    line: int
    dataset: str
    external_id: str
    first: QuestionRow
    second: QuestionRow
    metadata: dict = field(default_factory=dict)


@dataclass
class Injection:
    """A BiasMedQA injection: its text is rendered from a base question in the database, by `store`."""

    row: QuestionRow
    value: dict


Item = QuestionRow | PairRow | Injection


@dataclass
class ParsedQuestions:
    """One pass over a file: its format, the rows read and the problems found (the rows themselves stream)."""

    format: str
    errors: RowErrors = field(default_factory=RowErrors)
    rows: int = 0

    def error(self, line: int, message: str) -> None:
        self.errors.add(line, message)


PARSERS: dict[str, Callable[..., Iterator[Item]]] = {}


def question_format(source: Source, filename: str, options: QuestionOptions) -> str:
    """The file's format (options.format, or detected); rejects an empty file or an unknown format."""
    first = first_text(source)
    if first is None:
        raise ImportRejected([RowError(0, "the file is empty")])
    fmt = options.format if options.format != "auto" else detect_format(source, first, filename, options)
    if fmt not in PARSERS:
        raise ImportRejected([RowError(0, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")])
    return fmt


def question_items(source: Source, filename: str, options: QuestionOptions, parsed: ParsedQuestions):
    """One pass over the file: yield its questions, pairs and injections; bad rows go to parsed.errors."""
    first = first_text(source) or ""
    yield from PARSERS[parsed.format](source, first, filename, options, parsed)


def detect_format(source: Source, first: str, filename: str, options: QuestionOptions) -> str:
    if is_jsonl(filename, first):
        value = next((value for _, value, _ in jsonl_rows(source) if value is not None), {})
        if "biased_question" in value:
            return "biasmedqa"
        if "injected_sentence" in value:
            return "biasmedqa_injections"
        if {"question", "options", "answer_idx"} <= value.keys():
            return "medqa"
        return "table"
    header = next((cells for _, cells in csv_rows(source)), [])
    stripped = [cell.strip() for cell in header]
    if stripped == CONTEXTSRH_HEADER:
        return "contextsrh"
    if stripped[: len(QPAIN_HEADER)] == QPAIN_HEADER:
        return "qpain"
    # A pair or dataset column only exists in a table: without this, a header missing the question
    # column would be imported as a header-less file, header row included.
    if options.question_column in stripped or options.pair_column or options.dataset_column:
        return "table"
    return "headerless"


def is_jsonl(filename: str, first: str) -> bool:
    """Whether a file is JSONL, from its name or (no .csv suffix) its first line with text."""
    suffix = PurePath(filename).suffix.lower()
    return suffix in {".jsonl", ".ndjson", ".json"} or (suffix != ".csv" and first.lstrip().startswith("{"))


def _dataset_from_options(options: QuestionOptions, filename: str, default: str | None = None) -> str | None:
    return options.dataset or dataset_name_for_stem(PurePath(filename).stem) or default


def needs_dataset_name(head: bytes, filename: str, options: QuestionOptions) -> bool:
    """Whether a file, from its first bytes, would be rejected for want of a dataset name (`_require_dataset`):
    a plain table or a header-less file, with no name given, no dataset column and a file name that names none.
    The upload form asks for the name then, rather than queueing an import that fails. A head the detection
    cannot read is not judged here: the import says what is wrong with it."""
    if options.dataset or dataset_name_for_stem(PurePath(filename).stem):
        return False
    try:
        fmt = question_format(head, filename, options)
    except (ImportRejected, UnicodeDecodeError):
        return False
    return fmt == "headerless" or (fmt == "table" and not options.dataset_column)


def _require_dataset(name: str | None, filename: str) -> str:
    if not name:
        message = f"which dataset is {PurePath(filename).name!r}? Name it (--dataset NAME, or the form's dataset field)"
        raise ImportRejected([RowError(0, message)])
    return name


def _parser(name: str):
    def register(function):
        PARSERS[name] = function
        return function

    return register


# --- EquityMedQA release files ---------------------------------------------------------------


@_parser("headerless")
def _parse_headerless(source, first, filename, options, parsed) -> Iterator[Item]:
    dataset = _require_dataset(_dataset_from_options(options, filename), filename)
    width = None
    for index, (line, cells) in enumerate(csv_rows(source)):
        parsed.rows += 1
        if is_blank_row(cells):
            parsed.error(line, "empty row")
            continue
        if width is None:
            width = len(cells)
            if width not in (1, 2):
                parsed.error(
                    line,
                    f"a header-less file has one column (a question) or two (a counterfactual pair); found {width}",
                )
                return
        row_id = str(index)
        if width == 1:
            if len(cells) != 1:
                parsed.error(line, f"expected one column (a question), found {len(cells)}")
                continue
            yield QuestionRow(line, dataset, row_id, cells[0].strip())
        else:
            yield from _pair(parsed, line, dataset, row_id, cells)


def _pair(parsed: ParsedQuestions, line: int, dataset: str, pair_id: str, cells: list[str], metadata=None):
    if len(cells) != 2:
        parsed.error(line, f"expected two columns (a counterfactual pair), found {len(cells)}")
        return
    first, second = (cell.strip() for cell in cells)
    if not first or not second:
        parsed.error(line, "a pair with one side missing: both questions of a counterfactual pair are required")
        return
    if first == second:
        parsed.error(line, "both sides of the counterfactual pair are the same question")
        return
    q1 = QuestionRow(line, dataset, f"{pair_id}-1", first)
    q2 = QuestionRow(line, dataset, f"{pair_id}-2", second)
    yield PairRow(line, dataset, pair_id, q1, q2, metadata or {})


# --- Generic tables (CSV with a header, JSONL) ----------------------------------------------


def table_records(source: Source, first: str, filename: str, parsed: ParsedQuestions):
    """Yield (line, {column: value}) from a CSV with a header or a JSONL file."""
    if is_jsonl(filename, first):
        for line, value, problem in jsonl_rows(source):
            parsed.rows += 1
            if problem:
                parsed.error(line, problem)
            else:
                yield line, {key: _cell(value[key]) for key in value}
        return
    rows = csv_rows(source)
    _, header = next(rows)
    header = [cell.strip() for cell in header]
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        parsed.error(1, f"the header repeats column(s) {', '.join(duplicated)}")
        return
    for line, cells in rows:
        parsed.rows += 1
        if is_blank_row(cells):
            parsed.error(line, "empty row")
        elif len(cells) != len(header):
            parsed.error(line, f"expected {len(header)} fields as in the header, found {len(cells)}")
        else:
            yield line, dict(zip(header, cells, strict=True))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value) if isinstance(value, int | float) else value


@_parser("table")
def _parse_table(source, first, filename, options, parsed) -> Iterator[Item]:
    default_dataset = _dataset_from_options(options, filename)
    if not default_dataset and not options.dataset_column:
        _require_dataset(None, filename)
    used = {options.question_column, options.id_column, options.pair_column, options.dataset_column}
    seen_columns = False
    for index, (line, record) in enumerate(table_records(source, first, filename, parsed)):
        if not seen_columns:
            missing = [c for c in (options.question_column, options.pair_column, options.dataset_column) if c]
            missing = [c for c in missing if c not in record]
            if missing:
                parsed.error(
                    line if is_jsonl(filename, first) else 1,
                    f"missing column(s) {', '.join(missing)}; the file has: {', '.join(record)}",
                )
                return
            seen_columns = True
        question = _text(record.get(options.question_column))
        pair = _text(record.get(options.pair_column)) if options.pair_column else ""
        row_id = _text(record.get(options.id_column)) or str(index)
        dataset = default_dataset
        if options.dataset_column and not options.dataset:
            value = _text(record.get(options.dataset_column))
            dataset = dataset_name_for_stem(value) or value
        if not dataset:
            parsed.error(line, f"no dataset named in column {options.dataset_column!r}")
            continue
        metadata = {key: value for key, value in record.items() if key not in used and value not in ("", None)}
        if pair:
            yield from _pair(parsed, line, dataset, row_id, [question, pair], metadata)
        elif not question:
            parsed.error(line, f"the question ({options.question_column!r}) is empty")
        else:
            yield QuestionRow(line, dataset, row_id, question, metadata)


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


# --- Seed datasets ---------------------------------------------------------------------------


@_parser("contextsrh")
def _parse_contextsrh(source, first, filename, options, parsed) -> Iterator[Item]:
    dataset = options.dataset or "ContextSRH"
    rows = csv_rows(source)
    next(rows)
    for index, (line, cells) in enumerate(rows):
        parsed.rows += 1
        if is_blank_row(cells):
            parsed.error(line, "empty row")
            continue
        if len(cells) != len(CONTEXTSRH_HEADER):
            parsed.error(line, f"expected {len(CONTEXTSRH_HEADER)} fields, found {len(cells)}")
            continue
        source_name, question, *flags = (cell.strip() for cell in cells)
        if not question:
            parsed.error(line, "the question is empty")
            continue
        bad = [name for name, flag in zip(CONTEXTSRH_HEADER[2:], flags, strict=True) if flag not in ("", "x")]
        if bad:
            parsed.error(line, f"{', '.join(bad)} must be 'x' or empty")
            continue
        depends_on = [name.lower() for name, flag in zip(CONTEXTSRH_HEADER[2:], flags, strict=True) if flag]
        metadata = {"source": source_name, "depends_on": depends_on}
        yield QuestionRow(line, dataset, str(index), question, metadata)


@_parser("qpain")
def _parse_qpain(source, first, filename, options, parsed) -> Iterator[Item]:
    dataset = options.dataset or "Q-Pain"
    stem = PurePath(filename).stem
    context = QPAIN_CONTEXTS.get(stem, stem.removeprefix("data_").replace("_", " ").title())
    context_id = stem.removeprefix("data_")
    rows = csv_rows(source)
    next(rows)
    vignette_index = 0
    for line, cells in rows:
        parsed.rows += 1
        if is_blank_row(cells):
            parsed.error(line, "empty row")
            continue
        if len(cells) != len(QPAIN_HEADER):
            parsed.error(line, f"expected {len(QPAIN_HEADER)} fields, found {len(cells)}")
            continue
        vignette, question, answer, dosage, explanation = (cell.strip() for cell in cells)
        if not vignette or not question:
            parsed.error(line, "Vignette and Question are required")
            continue
        gold = answer.rstrip(".")
        if gold not in ("Yes", "No"):
            parsed.error(line, f"Answer must be Yes or No, found {answer!r}")
            continue
        metadata = {
            "context": context,
            "gold_answer": gold,
            "dosage": dosage,
            "explanation": explanation,
            "placeholders": [p for p in QPAIN_PLACEHOLDERS if p in vignette or p in question],
        }
        if gold == "Yes":
            metadata["vignette_idx"] = vignette_index
            external_id = f"{context_id}-{vignette_index}"
            vignette_index += 1
        else:
            metadata["closed_example"] = True  # The "No" row is only ever a few-shot example.
            external_id = f"{context_id}-no"
        text_shown = f"{vignette}\n\n{question}"
        yield QuestionRow(line, dataset, external_id, text_shown, metadata)


def _jsonl_objects(source: Source, parsed: ParsedQuestions, required: list[str]):
    for line, value, problem in jsonl_rows(source):
        parsed.rows += 1
        if problem:
            parsed.error(line, problem)
            continue
        missing = [key for key in required if value.get(key) in (None, "")]
        if missing:
            parsed.error(line, f"missing {', '.join(missing)}")
            continue
        wrong = [key for key in ("question", "biased_question", "item_id") if key in required
                 and not isinstance(value[key], str | int)]  # fmt: skip
        if wrong:
            parsed.error(line, f"{', '.join(wrong)} must be text")
            continue
        yield line, value


def _options_problem(value: dict) -> str | None:
    options = value.get("options")
    if not isinstance(options, dict) or not options:
        return "options must be an object of letter → text"
    if not isinstance(value["answer_idx"], str) or value["answer_idx"] not in options:
        return f"answer_idx {value['answer_idx']!r} is not one of the options {', '.join(options)}"
    return None


@_parser("medqa")
def _parse_medqa(source, first, filename, options, parsed) -> Iterator[Item]:
    dataset = options.dataset or MEDQA_DATASET
    for line, value in _jsonl_objects(source, parsed, ["question", "options", "answer_idx"]):
        if problem := _options_problem(value):
            parsed.error(line, problem)
            continue
        metadata = {key: value[key] for key in ("options", "answer_idx", "answer", "meta_info") if key in value}
        # qid is the 0-based line number in the release file, as BiasMedQA uses it.
        metadata["qid"] = line - 1
        yield QuestionRow(line, dataset, str(line - 1), str(value["question"]).strip(), metadata)


@_parser("biasmedqa")
def _parse_biasmedqa_rendered(source, first, filename, options, parsed) -> Iterator[Item]:
    # The rendered subset keeps the prompts as logged (newlines and quotes escaped), so its texts differ
    # from items rendered from the injections file: by default the two go to different datasets.
    dataset = options.dataset or BIASMEDQA_RENDERED_DATASET
    required = ["item_id", "biased_question", "options", *BIASMEDQA_FIELDS]
    for line, value in _jsonl_objects(source, parsed, required):
        if problem := _options_problem(value):
            parsed.error(line, problem)
            continue
        metadata = {k: value[k] for k in value if k not in ("item_id", "biased_question")}
        text = str(value["biased_question"]).strip()
        yield QuestionRow(line, dataset, str(value["item_id"]), text, metadata)


@_parser("biasmedqa_injections")
def _parse_biasmedqa_injections(source, first, filename, options, parsed) -> Iterator[Item]:
    dataset = options.dataset or "BiasMedQA"
    required = ["item_id", *BIASMEDQA_FIELDS, "injection_position"]
    for line, value in _jsonl_objects(source, parsed, required):
        if value["injection_position"] not in ("appended", "after_first_sentence"):
            parsed.error(line, f"unknown injection_position {value['injection_position']!r}")
            continue
        if not isinstance(value["injected_sentence"], str):
            parsed.error(line, "injected_sentence must be text")
            continue
        metadata = {k: value[k] for k in value if k != "item_id"}
        yield Injection(QuestionRow(line, dataset, str(value["item_id"]), "", metadata), value)


def render_injection(base_question: str, sentence: str, position: str) -> str:
    """BiasMedQA's `add_bias`: append the sentence, or insert it after the question's first sentence."""
    return biasmedqa.inject(base_question, sentence, position)
