"""Parse question files into rows: no database writes here.

Formats (`detect_format` picks one from the file name and first row):
- `headerless`: the EquityMedQA release CSVs, one question per row, or two columns = a counterfactual pair.
- `table`: CSV with a header or JSONL with a question column, optional id / pair / dataset columns;
  other columns become question metadata.
- `contextsrh`, `qpain`, `medqa`, `biasmedqa`, `biasmedqa_injections`: the seed datasets' own files.
"""

from dataclasses import dataclass, field
from pathlib import PurePath

from ..catalogue import dataset_name_for_stem
from .errors import ImportRejected, RowError
from .reading import csv_rows, decode_text, is_blank_row, jsonl_rows

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
class ParsedQuestions:
    format: str
    questions: list[QuestionRow] = field(default_factory=list)
    pairs: list[PairRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    # Rows needing base questions from the database (BiasMedQA injections): rendered by `store`.
    injections: list[tuple[QuestionRow, dict]] = field(default_factory=list)
    rows: int = 0

    def error(self, line: int, message: str) -> None:
        self.errors.append(RowError(line, message))


def parse_questions(data: bytes, filename: str, options: QuestionOptions) -> ParsedQuestions:
    text = decode_text(data)
    if not text.strip():
        raise ImportRejected([RowError(0, "the file is empty")])
    fmt = options.format if options.format != "auto" else detect_format(text, filename, options)
    parser = {
        "headerless": _parse_headerless,
        "table": _parse_table,
        "contextsrh": _parse_contextsrh,
        "qpain": _parse_qpain,
        "medqa": _parse_medqa,
        "biasmedqa": _parse_biasmedqa_rendered,
        "biasmedqa_injections": _parse_biasmedqa_injections,
    }.get(fmt)
    if parser is None:
        raise ImportRejected([RowError(0, f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")])
    parsed = ParsedQuestions(format=fmt)
    parser(text, filename, options, parsed)
    _check_consistency(parsed)
    if parsed.errors:
        raise ImportRejected(parsed.errors)
    return parsed


def detect_format(text: str, filename: str, options: QuestionOptions) -> str:
    if is_jsonl(filename, text):
        first = next((value for _, value, _ in jsonl_rows(text) if value is not None), {})
        if "biased_question" in first:
            return "biasmedqa"
        if "injected_sentence" in first:
            return "biasmedqa_injections"
        if {"question", "options", "answer_idx"} <= first.keys():
            return "medqa"
        return "table"
    header = next((cells for _, cells in csv_rows(text)), [])
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


def is_jsonl(filename: str, text: str) -> bool:
    suffix = PurePath(filename).suffix.lower()
    return suffix in {".jsonl", ".ndjson", ".json"} or (suffix != ".csv" and text.lstrip().startswith("{"))


def _dataset_from_options(options: QuestionOptions, filename: str, default: str | None = None) -> str | None:
    return options.dataset or dataset_name_for_stem(PurePath(filename).stem) or default


def _require_dataset(parsed: ParsedQuestions, name: str | None, filename: str) -> str:
    if not name:
        parsed.error(
            0,
            f"which dataset is {PurePath(filename).name!r}? Name it (--dataset NAME, or the form's dataset field)",
        )
        raise ImportRejected(parsed.errors)
    return name


# --- EquityMedQA release files ---------------------------------------------------------------


def _parse_headerless(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    dataset = _require_dataset(parsed, _dataset_from_options(options, filename), filename)
    width = None
    for index, (line, cells) in enumerate(csv_rows(text)):
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
            parsed.questions.append(QuestionRow(line, dataset, row_id, cells[0].strip()))
        else:
            _add_pair(parsed, line, dataset, row_id, cells)


def _add_pair(parsed: ParsedQuestions, line: int, dataset: str, pair_id: str, cells: list[str], metadata=None):
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
    parsed.questions.extend([q1, q2])
    parsed.pairs.append(PairRow(line, dataset, pair_id, q1, q2, metadata or {}))


# --- Generic tables (CSV with a header, JSONL) ----------------------------------------------


def table_records(text: str, filename: str, parsed: ParsedQuestions):
    """Yield (line, {column: value}) from a CSV with a header or a JSONL file."""
    if is_jsonl(filename, text):
        for line, value, problem in jsonl_rows(text):
            parsed.rows += 1
            if problem:
                parsed.error(line, problem)
            else:
                yield line, {key: _cell(value[key]) for key in value}
        return
    rows = csv_rows(text)
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


def _parse_table(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    default_dataset = _dataset_from_options(options, filename)
    if not default_dataset and not options.dataset_column:
        _require_dataset(parsed, None, filename)
    used = {options.question_column, options.id_column, options.pair_column, options.dataset_column}
    seen_columns = False
    for index, (line, record) in enumerate(table_records(text, filename, parsed)):
        if not seen_columns:
            missing = [c for c in (options.question_column, options.pair_column, options.dataset_column) if c]
            missing = [c for c in missing if c not in record]
            if missing:
                parsed.error(
                    line if is_jsonl(filename, text) else 1,
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
            _add_pair(parsed, line, dataset, row_id, [question, pair], metadata)
        elif not question:
            parsed.error(line, f"the question ({options.question_column!r}) is empty")
        else:
            parsed.questions.append(QuestionRow(line, dataset, row_id, question, metadata))


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


# --- Seed datasets ---------------------------------------------------------------------------


def _parse_contextsrh(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    dataset = options.dataset or "ContextSRH"
    rows = csv_rows(text)
    next(rows)
    for index, (line, cells) in enumerate(rows):
        parsed.rows += 1
        if is_blank_row(cells):
            parsed.error(line, "empty row")
            continue
        if len(cells) != len(CONTEXTSRH_HEADER):
            parsed.error(line, f"expected {len(CONTEXTSRH_HEADER)} fields, found {len(cells)}")
            continue
        source, question, *flags = (cell.strip() for cell in cells)
        if not question:
            parsed.error(line, "the question is empty")
            continue
        bad = [name for name, flag in zip(CONTEXTSRH_HEADER[2:], flags, strict=True) if flag not in ("", "x")]
        if bad:
            parsed.error(line, f"{', '.join(bad)} must be 'x' or empty")
            continue
        depends_on = [name.lower() for name, flag in zip(CONTEXTSRH_HEADER[2:], flags, strict=True) if flag]
        metadata = {"source": source, "depends_on": depends_on}
        parsed.questions.append(QuestionRow(line, dataset, str(index), question, metadata))


def _parse_qpain(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    dataset = options.dataset or "Q-Pain"
    stem = PurePath(filename).stem
    context = QPAIN_CONTEXTS.get(stem, stem.removeprefix("data_").replace("_", " ").title())
    context_id = stem.removeprefix("data_")
    rows = csv_rows(text)
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
        parsed.questions.append(QuestionRow(line, dataset, external_id, text_shown, metadata))


def _jsonl_objects(text: str, parsed: ParsedQuestions, required: list[str]):
    for line, value, problem in jsonl_rows(text):
        parsed.rows += 1
        if problem:
            parsed.error(line, problem)
            continue
        missing = [key for key in required if value.get(key) in (None, "")]
        if missing:
            parsed.error(line, f"missing {', '.join(missing)}")
            continue
        yield line, value


def _options_problem(value: dict) -> str | None:
    options = value.get("options")
    if not isinstance(options, dict) or not options:
        return "options must be an object of letter → text"
    if value["answer_idx"] not in options:
        return f"answer_idx {value['answer_idx']!r} is not one of the options {', '.join(options)}"
    return None


def _parse_medqa(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    dataset = options.dataset or MEDQA_DATASET
    for line, value in _jsonl_objects(text, parsed, ["question", "options", "answer_idx"]):
        if problem := _options_problem(value):
            parsed.error(line, problem)
            continue
        metadata = {key: value[key] for key in ("options", "answer_idx", "answer", "meta_info") if key in value}
        # qid is the 0-based line number in the release file, as BiasMedQA uses it.
        metadata["qid"] = line - 1
        parsed.questions.append(QuestionRow(line, dataset, str(line - 1), value["question"].strip(), metadata))


def _parse_biasmedqa_rendered(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    # The rendered subset keeps the prompts as logged (newlines and quotes escaped), so its texts differ
    # from items rendered from the injections file: by default the two go to different datasets.
    dataset = options.dataset or BIASMEDQA_RENDERED_DATASET
    required = ["item_id", "biased_question", "options", *BIASMEDQA_FIELDS]
    for line, value in _jsonl_objects(text, parsed, required):
        if problem := _options_problem(value):
            parsed.error(line, problem)
            continue
        metadata = {k: value[k] for k in value if k not in ("item_id", "biased_question")}
        text = value["biased_question"].strip()
        parsed.questions.append(QuestionRow(line, dataset, str(value["item_id"]), text, metadata))


def _parse_biasmedqa_injections(text: str, filename: str, options: QuestionOptions, parsed: ParsedQuestions) -> None:
    dataset = options.dataset or "BiasMedQA"
    required = ["item_id", *BIASMEDQA_FIELDS, "injection_position"]
    for line, value in _jsonl_objects(text, parsed, required):
        if value["injection_position"] not in ("appended", "after_first_sentence"):
            parsed.error(line, f"unknown injection_position {value['injection_position']!r}")
            continue
        metadata = {k: value[k] for k in value if k != "item_id"}
        row = QuestionRow(line, dataset, str(value["item_id"]), "", metadata)
        parsed.injections.append((row, value))


def render_injection(base_question: str, sentence: str, position: str) -> str:
    """BiasMedQA's `add_bias`: append the sentence, or insert it after the question's first sentence."""
    if position == "after_first_sentence":
        end = base_question.find(". ")
        if end >= 0:
            return f"{base_question[: end + 1]} {sentence} {base_question[end + 2 :]}"
    return f"{base_question} {sentence}"


# --- Checks across rows ----------------------------------------------------------------------


def _check_consistency(parsed: ParsedQuestions) -> None:
    """Within one file: one id is one text, and a dataset's rows are all pairs or all single questions."""
    text_by_id: dict[tuple[str, str], str] = {}
    for row in parsed.questions:
        key = (row.dataset, row.external_id)
        if key in text_by_id and text_by_id[key] != row.text:
            parsed.error(row.line, f"id {row.external_id!r} is used twice in {row.dataset!r} for different questions")
        text_by_id.setdefault(key, row.text)
    pair_lines = {pair.line for pair in parsed.pairs}
    kinds: dict[str, set[bool]] = {}
    for row in parsed.questions:
        kinds.setdefault(row.dataset, set()).add(row.line in pair_lines)
    for dataset, found in kinds.items():
        if found == {True, False}:
            for row in parsed.questions:
                if row.dataset == dataset and row.line not in pair_lines:
                    parsed.error(
                        row.line,
                        f"a pair with one side missing: other rows of {dataset!r} are counterfactual pairs",
                    )
