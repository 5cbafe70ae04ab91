"""Import a released Q-Pain run's outputs (`deepseek-32k_qpain_outputs.jsonl`, ../shared/datasets/qpain/SOURCE.md):
one command from the file to scored answers (DESIGN.md, Q-Pain).

Each line is one prompt of the run: a (context, vignette, race, gender) profile with the name it used, the closed
and open prompts sent, the run's parse of the completion (`answer`, `dosage`, `explanation`, or `generated_text`
where its parser failed) and four natural-log probabilities (`prob_yes`, `prob_no`, `prob_high`, `prob_low`,
null where the run recorded none). The import
1. imports the base vignettes ("Q-Pain vignettes") from the committed copy if they are missing;
2. makes the run's variants with the qpain generator, its names read from the file (a names table), so each
   variant is the vignette the run filled (`Q-Pain variants (qpain v1, names from SOURCE)`);
3. stores one answer per line of the source (an imported release, never asked), to the variant of its profile;
4. stores the released numbers as scores `released_p_no`, `released_p_yes`, `released_p_high`, `released_p_low`
   v1: `measured` with the probability (exp of the log-probability), or `missing` where the file has null; the
   score's value keeps the log-probability as released.

Two streaming passes like the other importers (datasets/DESIGN.md): pass 1 checks every line and keeps only the
names table (a name per profile); any bad line rejects the file with its line number and nothing is written.
Pass 2 writes everything in one transaction. A second import of the same file creates nothing.
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import transaction

from datasets.importers.answers import check_study, link_imported
from datasets.importers.errors import ImportRejected, RowError, RowErrors
from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes
from datasets.importers.reading import Opener, Source, jsonl_rows, opener_for
from datasets.importers.report import ImportReport
from datasets.importers.store import batches
from datasets.models import Answer, AnswerSource, Dataset, Question, VariantRun, settings_fingerprint, text_fingerprint
from datasets.variants import BaseQuestion, VariantOptionsError, get_generator, qpain
from datasets.variants.runs import VariantRunRefused, run_variant_run, start_variant_run
from scoring.models import Score
from scoring.scorers import MEASURED, MISSING

DEFAULT_SOURCE = "deepseek-32k"
SCORER_VERSION = 1
# the file's field -> the score it is stored as
QUANTITIES = {
    "prob_no": "released_p_no",
    "prob_yes": "released_p_yes",
    "prob_high": "released_p_high",
    "prob_low": "released_p_low",
}
CONTEXT_KEYS = {name: key for key, name in qpain.CONTEXTS.items()}
PARSED_FIELDS = ("answer", "dosage", "explanation")
UNPARSED_FIELDS = ("generated_text",)
SEED = 0  # the names come from the file, so the seed changes nothing; 0 names the run
# Released runs this importer knows: source name -> (release, the source's description).
KNOWN_RELEASES = {
    "deepseek-32k": (
        "Q-Pain deepseek-32k run (github.com/GiovanniBonadeo/Q_pain_analysis @ ed75253d)",
        "deepseek-32k at temperature 0, max_tokens 150, in a third-party Q-Pain run with three closed examples "
        '(low-dose Patient C, "No" Patient B, high-dose Patient A): github.com/GiovanniBonadeo/Q_pain_analysis @ '
        "ed75253d, results/<context>/vignette_NN/<race>_<gender>.json; an unreviewed student project. Treated as "
        "an adaptation of Q-Pain under CC BY-SA 4.0. Imported, never asked.",
    ),
}
TEXT_NOTE = (
    "{release}: {path}. The run kept only its parse of the completion: this text is the parsed answer, "
    "'Dosage: <High|Low>' when a dosage was parsed, and the parsed explanation verbatim, joined by new lines "
    "(the completion itself where the run's parser failed). The released log-probabilities are natural logs; "
    "they are stored as the scores released_p_* (probabilities)."
)


@dataclass
class OutputsReport(ImportReport):
    """ImportReport plus the variants made and the released scores; `questions_*` count the base vignettes."""

    variants_dataset: str = ""
    variants_created: int = 0
    variants_existing: int = 0
    scores_created: int = 0
    scores_existing: int = 0
    # scorer -> {"measured": n, "missing": n} over the file's lines
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    prompts_matching: int = 0
    prompts_differing: list[str] = field(default_factory=list)  # variant ids whose open prompt is not the variant's

    def summary_lines(self) -> list[str]:
        lines = super().summary_lines()
        lines.append(f"Variants ({self.variants_dataset}): {self.variants_created} new, "
                     f"{self.variants_existing} already present")  # fmt: skip
        lines.append(f"Released scores: {self.scores_created} new, {self.scores_existing} already present")
        for scorer, counts in self.outcomes.items():
            lines.append(f"  {scorer} v{SCORER_VERSION}: {counts.get(MEASURED, 0)} measured, "
                         f"{counts.get(MISSING, 0)} missing (null in the file)")  # fmt: skip
        total = self.prompts_matching + len(self.prompts_differing)
        lines.append(f"Open prompts equal to their variant's (Vignette/Question/Answer:): {self.prompts_matching} "
                     f"of {total}")  # fmt: skip
        if self.prompts_differing:
            shown = ", ".join(self.prompts_differing[:10])
            more = f" and {len(self.prompts_differing) - 10} more" if len(self.prompts_differing) > 10 else ""
            lines.append(f"  differing: {shown}{more}")
        if not (self.answers_created or self.scores_created or self.variants_created or self.questions_created):
            lines.append("Nothing new: everything in this file was already imported.")
        return lines


@dataclass
class OutputRecord:
    line: int
    context: str  # the key, e.g. acute_cancer
    vignette_idx: int
    race: str
    gender: str
    name: str
    closed_prompt: str
    open_prompt: str
    source_path: str
    text: str
    parsed: dict
    logprobs: dict[str, float | None]

    @property
    def base_id(self) -> str:
        return f"{self.context}-{self.vignette_idx:02d}"

    @property
    def variant_id(self) -> str:
        return qpain.variant_id(self.base_id, self.race, self.gender)

    @property
    def name_key(self) -> str:
        return qpain.name_key(self.context, self.vignette_idx, self.race, self.gender)


def answer_text(value: dict) -> str:
    """The answer as far as the release kept it: the parsed answer, `Dosage: X` when one was parsed, and the
    explanation, one per line; or the completion where the run's parser failed (`generated_text`)."""
    if "generated_text" in value:
        return value["generated_text"]
    dosage = f"Dosage: {value['dosage']}" if value.get("dosage") else ""
    return "\n".join(part for part in (value.get("answer") or "", dosage, value.get("explanation") or "") if part)


def _text(value: dict, key: str, *, required: bool = True) -> str | None:
    found = value.get(key)
    if found is None and not required:
        return None
    if not isinstance(found, str):
        raise ValueError(f"{key} must be a text, found {found!r}"[:300])
    return found


def _record(line: int, value: dict) -> OutputRecord:
    """One line as a record; ValueError says what is wrong with it."""
    context = value.get("context")
    if context not in CONTEXT_KEYS:
        raise ValueError(f"context {context!r} is not a Q-Pain context; known: {', '.join(CONTEXT_KEYS)}")
    vignette_idx = value.get("vignette_idx")
    if isinstance(vignette_idx, bool) or not isinstance(vignette_idx, int) or not 0 <= vignette_idx <= 99:
        raise ValueError(f"vignette_idx must be a whole number from 0 to 99, found {vignette_idx!r}")
    race, gender = value.get("race"), value.get("gender")
    if race not in qpain.RACES:
        raise ValueError(f"race {race!r} is not one of {', '.join(qpain.RACES)}")
    if gender not in qpain.GENDERS:
        raise ValueError(f"gender {gender!r} is not one of {', '.join(qpain.GENDERS)}")
    name = _text(value, "name")
    if not name.strip() or name != name.strip():
        raise ValueError(f"name must be a name without surrounding spaces, found {name!r}")
    closed_prompt, open_prompt = _text(value, "closed_prompt"), _text(value, "open_prompt")
    if not open_prompt.strip():
        raise ValueError("open_prompt is empty")
    if "generated_text" in value:
        parsed = {"generated_text": _text(value, "generated_text"),
                  "finish_reason": _text(value, "finish_reason", required=False)}  # fmt: skip
    else:
        missing = [key for key in (*PARSED_FIELDS, *QUANTITIES) if key not in value]
        if missing:
            raise ValueError(f"no {', '.join(missing)} (and no generated_text, as the unparsed records have)")
        parsed = {"answer": _text(value, "answer"), "dosage": _text(value, "dosage", required=False),
                  "explanation": _text(value, "explanation", required=False)}  # fmt: skip
    logprobs: dict[str, float | None] = {}
    for key in QUANTITIES:
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            raise ValueError(f"{key} must be a number (a natural-log probability) or null, found {number!r}")
        if number is not None and number > 0:
            raise ValueError(f"{key} is {number}: a natural-log probability is at most 0")
        logprobs[key] = None if number is None else float(number)
    return OutputRecord(
        line=line, context=CONTEXT_KEYS[context], vignette_idx=vignette_idx, race=race, gender=gender, name=name,
        closed_prompt=closed_prompt, open_prompt=open_prompt,
        source_path=_text(value, "source_path", required=False) or "", text=answer_text(value), parsed=parsed,
        logprobs=logprobs,
    )  # fmt: skip


def _records(source: Opener, errors: RowErrors) -> Iterator[OutputRecord]:
    for line, value, problem in jsonl_rows(source):
        if problem is None:
            try:
                yield _record(line, value)
                continue
            except ValueError as error:
                problem = str(error)
        errors.add(line, problem)


def read_names(source: Source) -> tuple[int, dict[str, str]]:
    """Pass 1: check every line; (lines, the names table {"context/NN/Race/gender": name}). ImportRejected with
    every bad line."""
    errors = RowErrors()
    names: dict[str, str] = {}
    lines = 0
    for record in _records(opener_for(source), errors):
        lines += 1
        if record.name_key in names:
            errors.add(record.line, f"a second record for {record.context} vignette {record.vignette_idx}, "
                                    f"{record.race} {record.gender}")  # fmt: skip
        names[record.name_key] = record.name
    if errors:
        raise errors.rejected()
    if not names:
        raise ImportRejected([RowError(0, "the file holds no records")])
    return lines, names


def import_qpain_outputs(
    source: Source, filename: str, *, source_name: str = DEFAULT_SOURCE, study: int | None = None
) -> OutputsReport:
    """Import the file, all or nothing; for a study (its id), each answer created or found is linked to it."""
    opener = opener_for(source)
    check_study(study, sources=[source_name])
    lines, names = read_names(opener)
    release, description = KNOWN_RELEASES.get(source_name, (f"Q-Pain released outputs of {source_name}", ""))
    report = OutputsReport(rows=lines)
    with transaction.atomic():
        base = _base_vignettes(report)
        answer_source = _answer_source(source_name, description or f"Q-Pain outputs imported from {filename}.", report)
        variants = _make_variants(base, names, source_name, report)
        writer = _Writer(answer_source, variants, release, filename, report, study)
        errors = RowErrors()
        for batch in batches(_records(opener, errors), lambda record: len(record.text) + len(record.closed_prompt)):
            writer.write(batch)
        if errors:  # the file changed between the passes
            raise errors.rejected()
    return report


def _base_vignettes(report: OutputsReport) -> Dataset:
    base = Dataset.objects.filter(name=QPAIN_DATASET).first()
    if base is None:
        imported = import_qpain_vignettes()
        report.datasets_created.extend(imported.datasets_created)
        report.questions_created += imported.questions_created
        base = Dataset.objects.get(name=QPAIN_DATASET)
    return base


def _answer_source(name: str, description: str, report: OutputsReport) -> AnswerSource:
    found = AnswerSource.objects.filter(name=name).first()
    if found is None:
        report.sources_created.append(name)
        return AnswerSource.objects.create(
            name=name, kind=AnswerSource.Kind.IMPORTED, model_name=name, description=description
        )
    if found.base_url:  # a model a job can ask: released answers must not pass for its own
        raise ImportRejected([RowError(0, (
            f"the source {name!r} is a model with an endpoint ({found.base_url}); imported answers would pass for "
            "its own: name the released run another way with --source"))])  # fmt: skip
    return found


def _make_variants(
    base: Dataset, names: dict[str, str], source_name: str, report: OutputsReport
) -> dict[str, Question]:
    """The run's variants (made by the qpain generator with the file's names unless already there): variant id ->
    question."""
    generator = get_generator(qpain.NAME)
    options = generator.check_options({"names": names, "names_label": source_name})
    bases = base.questions.filter(**generator.base_filter).order_by("id").only("id", "external_id", "text", "metadata")
    try:
        expected = {
            spec.external_id: (text_fingerprint(spec.text), question.id)
            for question in bases
            for spec in generator.variants(BaseQuestion(question.external_id, question.text, question.metadata),
                                           SEED, options)
        }  # fmt: skip
    except VariantOptionsError as error:  # a profile the run did not ask
        raise ImportRejected(
            [RowError(0, f"the file does not cover the vignettes of {base.name!r}: {error}")]
        ) from None
    except ValueError as error:
        raise ImportRejected([RowError(0, f"{base.name!r} cannot be filled: {error}")]) from None
    extra = set(names) - {qpain.name_key(*_profile(key)) for key in expected}
    if extra:
        raise ImportRejected([RowError(0, f"records for profiles with no vignette in {base.name!r}: "
                                          f"{', '.join(sorted(extra)[:10])}")])  # fmt: skip
    report.variants_dataset = generator.dataset_name(SEED, options)
    target = Dataset.objects.filter(name=report.variants_dataset).first()
    stored = {} if target is None else {
        external_id: (digest, base_id)
        for external_id, digest, base_id in target.questions.filter(external_id__in=expected).values_list(
            "external_id", "text_hash", "base_id")
    }  # fmt: skip
    if stored != expected:
        try:
            run = start_variant_run(generator=qpain.NAME, base_dataset=base, seed=SEED, options=options, queue=False)
        except VariantRunRefused as refused:
            raise ImportRejected([RowError(0, f"the variants cannot be made: {refused}")]) from None
        run = run_variant_run(run.id) or run
        if run.status != VariantRun.Status.DONE:
            raise ImportRejected([RowError(0, f"variant run {run.id} failed: {run.error}")])
        report.variants_created, report.variants_existing = run.created, run.existing
        if target is None:
            report.datasets_created.append(report.variants_dataset)
        target = run.dataset
    else:
        report.variants_existing = len(expected)
    return {question.external_id: question for question in target.questions.filter(external_id__in=expected)}


def _profile(variant_id: str) -> tuple[str, int, str, str]:
    """(context, vignette_idx, race, gender) of a variant id `acute_cancer-00-Black-woman`."""
    base_id, race, gender = variant_id.rsplit("-", 2)
    context, _, number = base_id.rpartition("-")
    return context, int(number), race, gender


def open_prompt(variant: Question) -> str:
    """The open prompt of the official notebook for a variant (the Q-Pain recipes' item template)."""
    return f"Vignette: {variant.text}\nQuestion: {variant.metadata['query']}\nAnswer:"


class _Writer:
    def __init__(self, source: AnswerSource, variants: dict[str, Question], release: str, filename: str,
                 report: OutputsReport, study: int | None = None):  # fmt: skip
        self.source = source
        self.study = study
        self.variants = variants
        self.release = release
        self.filename = filename
        self.report = report
        self.parameters = {"release": release}
        self.settings_hash = settings_fingerprint(self.parameters)

    def write(self, batch: list[OutputRecord]) -> None:
        answers = self._answers(batch)
        link_imported(self.study, answers.values())
        self._scores(batch, answers)

    def _answers(self, batch: list[OutputRecord]) -> dict[int, int]:
        """line -> answer id, creating the missing answers; a stored answer with another text is an error."""
        stored = {
            question_id: (pk, text)
            for question_id, pk, text in Answer.objects.filter(
                source=self.source, settings_hash=self.settings_hash,
                question_id__in=[self.variants[record.variant_id].id for record in batch],
            ).values_list("question_id", "id", "text")
        }  # fmt: skip
        ids: dict[int, int] = {}
        new: dict[int, Answer] = {}
        for record in batch:
            variant = self.variants[record.variant_id]
            if open_prompt(variant) == record.open_prompt:
                self.report.prompts_matching += 1
            else:
                self.report.prompts_differing.append(record.variant_id)
            if variant.id in stored:
                pk, text = stored[variant.id]
                if text != record.text:
                    raise ImportRejected([RowError(record.line, (
                        f"{self.source.name!r} already has a different answer to {record.variant_id} from "
                        f"{self.release!r}; it is never overwritten"))])  # fmt: skip
                ids[record.line] = pk
                self.report.answers_existing += 1
                continue
            prompt = record.closed_prompt + record.open_prompt
            new[record.line] = Answer(
                question=variant, source=self.source, text=record.text, model_name=self.source.name, prompt=prompt,
                parameters=self.parameters, settings_hash=self.settings_hash,
                response_metadata={"prompt": prompt, "release": self.release, "source_path": record.source_path,
                                   "file": self.filename, "parsed": record.parsed},
                provenance_note=TEXT_NOTE.format(release=self.release, path=record.source_path or self.filename),
                refusal=not record.text.strip(),
            )  # fmt: skip
            self.report.empty_answers += not record.text.strip()
        Answer.objects.bulk_create(new.values())
        self.report.answers_created += len(new)
        return ids | {line: answer.pk for line, answer in new.items()}

    def _scores(self, batch: list[OutputRecord], answers: dict[int, int]) -> None:
        scored = set(
            Score.objects.filter(
                answer_id__in=answers.values(), scorer__in=QUANTITIES.values(), version=SCORER_VERSION
            ).values_list("answer_id", "scorer")
        )
        new = []
        for record in batch:
            for key, scorer in QUANTITIES.items():
                logprob = record.logprobs[key]
                outcome = MISSING if logprob is None else MEASURED
                counts = self.report.outcomes.setdefault(scorer, {MEASURED: 0, MISSING: 0})
                counts[outcome] += 1
                if (answers[record.line], scorer) in scored:
                    self.report.scores_existing += 1
                    continue
                new.append(Score(
                    answer_id=answers[record.line], scorer=scorer, version=SCORER_VERSION, outcome=outcome,
                    number=None if logprob is None else math.exp(logprob),
                    value={"field": key, "logprob": logprob, "release": self.release},
                ))  # fmt: skip
        Score.objects.bulk_create(new)
        self.report.scores_created += len(new)
