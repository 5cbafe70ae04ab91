"""Study files (studies/DESIGN.md, "Study files"): read a YAML definition, check it against the schema and the
database, and create or update its study in one transaction; write a study back as a file.

`load_study_text` is all or nothing: a file with any problem (YAML, schema, a name the database does not hold)
raises StudyFileError listing every problem with its line and key, and nothing is created. Analysis plans are
known by name through `register_plans`, which the analysis app calls when it starts: studies never imports
analysis.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import Q

from datasets.factors import REFERENCE_LEVEL
from datasets.models import AnswerSource, Dataset, PromptRecipe
from datasets.variants import GENERATORS, MAX_SEED, MIN_SEED, VariantOptionsError
from raters.models import RaterPool
from scoring import scorers

from .assignment import AssignmentError, build_items
from .models import Judge, Rating, RubricVersion, Study, StudyJudge, StudyPool
from .rubric_schema import part_problems
from .study_schema import check, complete, study_schema
from .study_steps import apply_steps, check_steps, step_outputs
from .study_yaml import Parsed, Path, Problem, StudyFileError, dump_yaml, parse_yaml, read_yaml

MAX_FILE_BYTES = 512 * 1024
FACTOR_NAME = re.compile(r"[A-Za-z0-9]+(_[A-Za-z0-9]+)*")  # safe in an ORM lookup (no "__")
RATING_FIELDS = ("instructions", "consent_text", "panel_return_url", "claim_timeout_minutes",
                 "unstarted_claim_timeout_minutes")  # fmt: skip

_PLANS: set[str] = set()


def register_plans(names: Iterable[str]) -> None:
    """Make analysis plans known to study files by name (called by the analysis app when it starts)."""
    _PLANS.update(names)


def known_plans() -> frozenset[str]:
    return frozenset(_PLANS)


class StudyRefused(Exception):
    """A valid file that cannot be loaded as it stands (the message says why and what to do); nothing changed."""


@dataclass(frozen=True)
class Loaded:
    study: Study
    outcome: str  # created, unchanged, adopted, updated, new version
    items: int = 0  # items built for a rubric study
    created: list[str] = field(default_factory=list)  # datasets and sources the file declared and we created


def canonical_sha256(definition: dict[str, Any]) -> str:
    text = json.dumps(definition, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode_file(data: bytes) -> str:
    """The text of an uploaded or read file; StudyFileError when it is too large or not UTF-8."""
    if len(data) > MAX_FILE_BYTES:
        raise StudyFileError([Problem(1, (), f"the file is larger than {MAX_FILE_BYTES // 1024} KB")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise StudyFileError([Problem(line, (), "the file is not UTF-8 text")]) from None


def read_definition(text: str) -> tuple[dict[str, Any], Parsed]:
    """The definition in its stored form (defaults filled, keys in order), checked against the schema."""
    parsed = parse_yaml(text)
    problems = [Problem(parsed.line(path), path, message) for path, message in check(parsed.data)]
    if problems:
        raise StudyFileError(problems)
    return complete(parsed.data), parsed


def _checkable(text: str) -> tuple[dict[str, Any], Parsed, list[Problem]]:
    """The file's problems of reading and of the schema, and a definition of the sections without any (the others
    left at their defaults), so the names of those sections can be checked too: every problem is reported at once.
    Raises StudyFileError when nothing can be checked further."""
    parsed = read_yaml(text)
    problems = list(parsed.problems)
    for path, message in check(parsed.data):
        if not any(path[: len(bad)] == bad for bad in parsed.unread):  # an unreadable value is not also a wrong type
            problems.append(Problem(parsed.line(path), path, message))
    if not isinstance(parsed.data, dict):
        raise StudyFileError(problems)
    broken = {problem.path[0] for problem in problems if problem.path}
    sections = {key: value for key, value in parsed.data.items() if key not in broken}
    sections.setdefault("format", 1)
    sections.setdefault("name", "")
    return complete({key: sections[key] for key in sections if key in study_schema()["properties"]}), parsed, problems


# --- Names against the database ------------------------------------------------------------------------------


@dataclass
class _Resolved:
    datasets: dict[str, Dataset | None] = field(default_factory=dict)  # None: declared imported, to create
    sources: dict[str, AnswerSource | None] = field(default_factory=dict)
    rubric_version: RubricVersion | None = None
    pools: dict[str, RaterPool] = field(default_factory=dict)
    judge_sources: dict[str, AnswerSource] = field(default_factory=dict)  # by judge name
    judges: dict[str, Judge] = field(default_factory=dict)  # the stored judges of those names


class _Checker:
    def __init__(self, definition: dict[str, Any], parsed: Parsed, skip: set[str | int]):
        self.definition = definition
        self.skip = skip  # sections with problems already (left at their defaults here)
        self.parsed = parsed
        self.problems: list[Problem] = []
        self.resolved = _Resolved()

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(self.parsed.line(path), path, message))

    def run(self) -> _Resolved:
        check_steps(self.definition.get("steps", []), self.problem)
        self.questions()
        self.conditions()
        self.scorers()
        self.rubric()
        self.human_slice()
        self.judges()
        self.references()
        self.plans()
        url = self.definition["rating"]["panel_return_url"]
        if url:
            try:
                URLValidator()(url)
            except ValidationError:
                self.problem(("rating", "panel_return_url"), f"not a web address: {url!r}")
        return self.resolved

    def duplicates(self, key: str, identity) -> None:
        seen: dict[Any, int] = {}
        for index, entry in enumerate(self.definition.get(key, [])):
            found = identity(entry)
            if found in seen:
                self.problem((key, index), f"the same entry as {key}[{seen[found]}]")
            seen.setdefault(found, index)

    def questions(self) -> None:
        entries = self.definition["questions"]
        names = {entry["dataset"] for entry in entries} | {
            entry["variant_run"]["base_dataset"] for entry in entries if entry["variant_run"]
        }
        stored = {dataset.name: dataset for dataset in Dataset.objects.filter(name__in=names)}
        made_by_steps = step_outputs(self.definition.get("steps", []))
        for index, entry in enumerate(entries):
            name, path = entry["dataset"], ("questions", index)
            if name in made_by_steps and name not in stored:
                self.resolved.datasets.setdefault(name, None)  # the file's steps make it
            elif name in stored:
                self.resolved.datasets[name] = stored[name]
                self.levels(stored[name], entry["levels"], (*path, "levels"))
            elif entry["imported"]:
                self.resolved.datasets.setdefault(name, None)
            elif entry["variant_run"]:
                run = entry["variant_run"]
                command = f"generate_variants {run['generator']} --base {json.dumps(run['base_dataset'])}"
                self.problem((*path, "dataset"), f"no dataset named {name!r}: make it first with {command} "
                             f"--seed {run['seed']}")  # fmt: skip
            else:
                self.problem((*path, "dataset"), f"no dataset named {name!r}")
            if entry["variant_run"]:
                self.variant_run(entry["variant_run"], name, (*path, "variant_run"), stored)
        self.duplicates("questions", lambda entry: (entry["dataset"], json.dumps(entry["levels"], sort_keys=True)))

    def levels(self, dataset: Dataset, levels: dict[str, str], path: Path) -> None:
        """Each level must select some question of a dataset that has questions (an empty one is filled later)."""
        questions = dataset.questions.all()
        if not levels or not questions.exists():
            return
        for factor, level in levels.items():
            if not FACTOR_NAME.fullmatch(factor):
                self.problem((*path, factor), "a factor's name is letters, digits and single underscores")
                continue
            at_level = Q(**{f"levels__{factor}": level})
            if level == REFERENCE_LEVEL:  # a question without the factor is at its reference level
                at_level |= ~Q(levels__has_key=factor)
            if not questions.filter(at_level).exists():
                self.problem((*path, factor), f"no question of {dataset.name!r} is at {factor} = {level!r}")

    def variant_run(self, run: dict[str, Any], dataset: str, path: Path, stored: dict[str, Dataset]) -> None:
        generator = GENERATORS.get(run["generator"])
        if generator is None:
            known = ", ".join(sorted(GENERATORS))
            self.problem((*path, "generator"), f"no variant generator named {run['generator']!r} (known: {known})")
            return
        if run["version"] != generator.version:
            message = f"{generator.name} is at version {generator.version}, not {run['version']}"
            self.problem((*path, "version"), message)
        if not MIN_SEED <= run["seed"] <= MAX_SEED:
            self.problem((*path, "seed"), f"the seed must be from {MIN_SEED} to {MAX_SEED}")
        if run["base_dataset"] not in stored:
            self.problem((*path, "base_dataset"), f"no dataset named {run['base_dataset']!r}")
        try:
            options = generator.check_options(dict(run["options"]))
        except VariantOptionsError as error:
            self.problem((*path, "options"), str(error))
            return
        made = generator.dataset_name(run["seed"], options)
        if made != dataset:
            self.problem(path, f"this run makes the dataset {made!r}, not {dataset!r}")

    def conditions(self) -> None:
        entries = self.definition["conditions"]
        names = {entry["source"] for entry in entries}
        stored = {source.name: source for source in AnswerSource.objects.filter(name__in=names)}
        named = {entry["recipe"] for entry in entries}
        recipes = set(PromptRecipe.objects.filter(name__in=named).values_list("name", flat=True))
        for index, entry in enumerate(entries):
            name, path = entry["source"], ("conditions", index)
            source = stored.get(name)
            if source is not None:
                self.resolved.sources[name] = source
                if entry["imported"] and source.base_url:
                    message = f"{name!r} is a model with an endpoint ({source.base_url}): imported answers would pass "
                    self.problem((*path, "source"), message + "for its own; name the imported run another way")
            elif entry["imported"]:
                self.resolved.sources.setdefault(name, None)
            else:
                self.problem((*path, "source"), f"no answer source named {name!r}")
            if entry["imported"] and entry["recipe"] is not None:
                self.problem((*path, "recipe"), "an imported condition has no recipe: its answers were made elsewhere")
            elif entry["recipe"] is not None and entry["recipe"] not in recipes:
                self.problem((*path, "recipe"), f"no prompt recipe named {entry['recipe']!r}")
        self.duplicates("conditions", lambda entry: (entry["source"], entry["recipe"]))

    def scorers(self) -> None:
        known = set(scorers.SCORERS) | set(scorers.IMPORTED_SCORES)
        for index, entry in enumerate(self.definition["scorers"]):
            if (entry["name"], entry["version"]) in known:
                continue
            versions = sorted(version for name, version in known if name == entry["name"])
            if versions:
                message = f"the scorer {entry['name']!r} has no version {entry['version']} (versions: {versions})"
                self.problem(("scorers", index, "version"), message)
            else:
                names = ", ".join(sorted({name for name, _ in known}))
                self.problem(("scorers", index, "name"), f"no scorer named {entry['name']!r} (known: {names})")
        self.duplicates("scorers", lambda entry: (entry["name"], entry["version"]))

    def rubric(self) -> None:
        rubric, pools = self.definition["rubric"], self.definition["pools"]
        if rubric is not None:
            versions = RubricVersion.objects.filter(rubric__name=rubric["name"])
            self.resolved.rubric_version = versions.filter(number=rubric["version"]).first()
            if self.resolved.rubric_version is None:
                numbers = sorted(versions.values_list("number", flat=True))
                if numbers:
                    self.problem(("rubric", "version"), f"the rubric {rubric['name']!r} has no version "
                                 f"{rubric['version']} (versions: {numbers})")  # fmt: skip
                else:
                    self.problem(("rubric", "name"), f"no rubric named {rubric['name']!r}")
            levels = [index for index, entry in enumerate(self.definition["questions"]) if entry["levels"]]
            for index in levels:
                self.problem(("questions", index, "levels"), "a rated study's items come from whole datasets: "
                             "filtering them by levels is not supported yet")  # fmt: skip
        elif pools and "rubric" not in self.skip:
            self.problem(("pools",), "rater pools rate a rubric: give the study a rubric, or no pools")
        stored = {pool.name: pool for pool in RaterPool.objects.filter(name__in={entry["pool"] for entry in pools})}
        for index, entry in enumerate(pools):
            if entry["pool"] in stored:
                self.resolved.pools[entry["pool"]] = stored[entry["pool"]]
            else:
                known = ", ".join(RaterPool.objects.order_by("name").values_list("name", flat=True))
                self.problem(("pools", index, "pool"), f"no rater pool named {entry['pool']!r} (known: {known})")
        self.duplicates("pools", lambda entry: entry["pool"])

    def judges(self) -> None:
        """Each judge's source is a model with an endpoint; a judge of that name already stored must be the same
        judge, unless nothing else uses it (no replies, no other study): then loading makes it the file's."""
        entries = self.definition.get("judges", [])
        if entries and self.definition["rubric"] is None and "rubric" not in self.skip:
            self.problem(("judges",), "judges answer the study's rubric: give the study a rubric, or no judges")
        sources = {s.name: s for s in AnswerSource.objects.filter(name__in={entry["source"] for entry in entries})}
        stored = {j.name: j for j in Judge.objects.filter(name__in={entry["name"] for entry in entries})}
        for index, entry in enumerate(entries):
            path = ("judges", index)
            source = sources.get(entry["source"])
            if source is None:
                self.problem((*path, "source"), f"no answer source named {entry['source']!r}")
            elif not source.base_url:
                self.problem((*path, "source"), f"{source.name!r} has no endpoint (base URL): a judge's source is a "
                             "model to ask")  # fmt: skip
            else:
                self.resolved.judge_sources[entry["name"]] = source
            if not entry["shown_fields"]:
                self.problem((*path, "shown_fields"), "a judge must be shown something of an item")
            rubric_version = self.resolved.rubric_version
            if entry.get("questions") and rubric_version is not None:
                for problem in part_problems(rubric_version.definition, entry["questions"]):
                    self.problem((*path, "questions"), problem)
            judge = stored.get(entry["name"])
            if judge is None:
                continue
            self.resolved.judges[entry["name"]] = judge
            if source is None or rubric_version is None:  # reported above, or a study without rubric
                continue
            if not _same_judge(judge, entry, rubric_version):
                in_use = _judge_in_use(judge, entry, Q(study__name=self.definition["name"]))
                if in_use:
                    self.problem((*path, "name"), in_use)
        self.duplicates("judges", lambda entry: entry["name"])

    def human_slice(self) -> None:
        """People's random slice: a share above 0 or a number of items, not both, of a study with rater pools."""
        chosen = self.definition.get("human_slice")
        if chosen is None:
            return
        if "share" in chosen and "items" in chosen:
            self.problem(("human_slice",), "give either a share of the items or a number of items, not both")
        elif "share" not in chosen and "items" not in chosen:
            self.problem(("human_slice",), "give a share of the items (share: 0.2) or a number of items (items: 500)")
        elif "share" in chosen and not chosen["share"] > 0:
            self.problem(("human_slice", "share"), "must be above 0 (people rate some of the items)")
        if not self.definition["pools"] and "pools" not in self.skip:
            self.problem(("human_slice",), "a human slice is what rater pools rate: give the study pools, or no slice")

    def references(self) -> None:
        """Each reference answers a single-valued question of the study's rubric, which shows one answer (a score
        is of one answer), with that question's options, from a known scorer."""
        entries = self.definition.get("references", [])
        version = self.resolved.rubric_version
        if entries and self.definition["rubric"] is None and "rubric" not in self.skip:
            self.problem(("references",), "references are compared with the judges on the study's rubric: give "
                         "the study a rubric, or no references")  # fmt: skip
        known = set(scorers.SCORERS) | set(scorers.IMPORTED_SCORES)
        questions = {}
        if version is not None:
            if entries and version.display != "one_answer":
                self.problem(("references",), "a score is of one answer: references need a rubric showing one "
                             f"answer, not {version.display!r}")  # fmt: skip
            questions = {q["key"]: q for q in version.definition.get("questions", []) if q.get("type") == "single"}
        pools = {entry["pool"] for entry in self.definition["pools"]}
        for index, entry in enumerate(entries):
            path = ("references", index)
            if (entry["scorer"], entry["version"]) not in known:
                self.problem((*path, "scorer"), f"no scorer {entry['scorer']!r} at version {entry['version']}")
            if entry["name"] in pools:
                self.problem((*path, "name"), f"{entry['name']!r} is a rater pool of the study: name the labels "
                             "another way")  # fmt: skip
            for key in entry["where"]:
                if not FACTOR_NAME.fullmatch(key):
                    self.problem((*path, "where", key), "a key of a score's value is letters, digits and single "
                                 "underscores")  # fmt: skip
            if not entry["values"]:
                self.problem((*path, "values"), "name the question's option of at least one score outcome")
            if version is None:
                continue
            question = questions.get(entry["field"])
            if question is None:
                asked = ", ".join(questions) or "none"
                self.problem((*path, "field"), f"the rubric has no single-choice question {entry['field']!r} "
                             f"(its single-choice questions: {asked})")  # fmt: skip
                continue
            options = [option["key"] for option in question.get("options", [])]
            for outcome, option in entry["values"].items():
                if option not in options:
                    self.problem((*path, "values", outcome), f"{option!r} is not an option of {entry['field']!r} "
                                 f"(its options: {', '.join(options)})")  # fmt: skip
        self.duplicates("references", lambda entry: (entry["name"], entry["field"]))

    def plans(self) -> None:
        known = known_plans()
        for index, entry in enumerate(self.definition["plans"]):
            if entry["plan"] not in known:
                names = ", ".join(sorted(known)) or "none registered"
                self.problem(("plans", index, "plan"), f"no analysis plan named {entry['plan']!r} (known: {names})")
        self.duplicates("plans", lambda entry: json.dumps(entry, sort_keys=True))


# --- Loading ------------------------------------------------------------------------------------------------


def load_study_text(text: str, *, new_version: bool = False) -> Loaded:
    """Create, update or find the study the file defines (all or nothing).

    The same file again changes nothing. A changed file for a study with data (answers, items) raises
    StudyRefused, unless `new_version`: then a new study `<name> (v2)` (v3, ...) is made, or found unchanged.
    """
    definition, parsed, problems = _checkable(text)
    try:
        return _load(definition, parsed, problems, new_version=new_version)
    except IntegrityError:  # a study, dataset or source of the same name made by someone else meanwhile
        raise StudyRefused(
            "another load or import created a study, dataset or source of the same name at the same moment; "
            "nothing was created: load the file again"
        ) from None


def _load(definition: dict[str, Any], parsed: Parsed, problems: list[Problem], *, new_version: bool) -> Loaded:
    checker = _Checker(definition, parsed, skip={problem.path[0] for problem in problems if problem.path})
    with transaction.atomic():
        resolved = checker.run()
        if problems or checker.problems:
            raise StudyFileError(problems + checker.problems)
        name = definition["name"]
        study = Study.objects.select_for_update().filter(name=name).first()
        if study is None:
            return _create(definition, resolved, parsed, "created")
        if definition_of(study) == definition:
            if study.definition != definition:  # made on the pages or by the demo: it takes the file as its own
                _store_definition(study, definition)
                return Loaded(study, "adopted")
            return Loaded(study, "unchanged")
        data = study_data(study)
        if not data:
            return _update(study, definition, resolved, parsed)
        if not new_version:
            raise StudyRefused(
                f"the study {name!r} (id {study.pk}) has {data} and its file differs "
                f"({_differences(study, definition)}): load it with --new-version to make a new study beside it, or "
                "give the study another name"
            )
        return _new_version(definition, resolved, parsed)


def study_data(study: Study) -> str:
    """What a study holds that a changed file must not pull from under it, in words ('' when nothing)."""
    counts = {
        "answers": study.study_answers.count(),
        "items": study.items.count(),
        "ratings": Rating.objects.filter(assignment__item__study=study).count(),
    }
    return ", ".join(_counted(count, what) for what, count in counts.items() if count)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count != 1 else f"1 {noun.removesuffix('s')}"


def _differences(study: Study, definition: dict[str, Any]) -> str:
    stored = definition_of(study)
    changed = [key for key in {**stored, **definition} if stored.get(key) != definition.get(key)]
    return "changed: " + ", ".join(changed)


def _new_version(definition: dict[str, Any], resolved: _Resolved, parsed: Parsed) -> Loaded:
    number = 2
    while True:
        name = f"{definition['name']} (v{number})"
        if len(name) > Study._meta.get_field("name").max_length:
            raise StudyFileError([Problem(parsed.line(("name",)), ("name",), "too long to add a version to")])
        versioned = {**definition, "name": name}
        study = Study.objects.select_for_update().filter(name=name).first()
        if study is None:
            return _create(versioned, resolved, parsed, "new version")
        if definition_of(study) == versioned:
            return Loaded(study, "unchanged")
        number += 1


def _create(definition: dict[str, Any], resolved: _Resolved, parsed: Parsed, outcome: str) -> Loaded:
    created = _create_declared(definition, resolved)
    study = Study(name=definition["name"])
    items = _apply(study, definition, resolved, parsed)
    return Loaded(study, outcome, items, created)


def _update(study: Study, definition: dict[str, Any], resolved: _Resolved, parsed: Parsed) -> Loaded:
    created = _create_declared(definition, resolved)
    study.study_pools.all().delete()
    study.study_judges.all().delete()
    items = _apply(study, definition, resolved, parsed)
    return Loaded(study, "updated", items, created)


def _apply(study: Study, definition: dict[str, Any], resolved: _Resolved, parsed: Parsed) -> int:
    """Write the definition onto the study's row and pools; build a rated study's items. Returns the items built."""
    study.description = definition["description"]
    study.rubric_version = resolved.rubric_version
    for name in RATING_FIELDS:
        setattr(study, name, definition["rating"][name])
    study.definition = definition
    study.definition_sha256 = canonical_sha256(definition)
    study.save()
    StudyPool.objects.bulk_create(
        StudyPool(study=study, pool=resolved.pools[entry["pool"]], replication=entry["replication"],
                  items_per_rater=entry["items_per_rater"])
        for entry in definition["pools"]
    )  # fmt: skip
    _apply_judges(study, definition, resolved, parsed)
    if study.rubric_version is None:
        return 0
    datasets = [resolved.datasets[entry["dataset"]] for entry in definition["questions"]]
    sources = list(dict.fromkeys(resolved.sources[entry["source"]] for entry in definition["conditions"]))
    try:
        return build_items(
            study=study, dataset_ids=[d.pk for d in datasets if d], source_ids=[s.pk for s in sources if s]
        )
    except AssignmentError as error:
        raise StudyFileError([Problem(parsed.line(("conditions",)), ("conditions",), str(error))]) from None


def _same_judge(judge: Judge, entry: dict[str, Any], rubric_version: RubricVersion | None) -> bool:
    return judge_entry(judge) == entry and judge.rubric_version_id == getattr(rubric_version, "pk", None)


def _judge_in_use(judge: Judge, entry: dict[str, Any], this_study: Q) -> str:
    """Why a stored judge cannot become the file's (another study holds it, it has replies), or ''."""
    others = judge.study_judges.exclude(this_study).values_list("study__name", flat=True)
    used = [f"study {name!r}" for name in others] + (["replies"] if judge.replies.exists() else [])
    if not used:
        return ""
    return (f"a judge named {entry['name']!r} already exists with another source, rubric or recipe, and has "
            f"{', '.join(used)}: give this one another name")  # fmt: skip


def _apply_judges(study: Study, definition: dict[str, Any], resolved: _Resolved, parsed: Parsed) -> None:
    """The study holds its file's judges: each made, or made the file's when stored and nothing else uses it
    (checked again here: a new version's judge of the old study's name is held by the old study)."""
    for index, entry in enumerate(definition.get("judges", [])):
        path = ("judges", index)
        judge = resolved.judges.get(entry["name"]) or Judge(name=entry["name"])
        if judge.pk and not _same_judge(judge, entry, study.rubric_version):
            in_use = _judge_in_use(judge, entry, Q(study=study))
            if in_use:
                raise StudyFileError([Problem(parsed.line((*path, "name")), (*path, "name"), in_use)])
        judge.source = resolved.judge_sources[entry["name"]]
        judge.rubric_version = study.rubric_version
        for name in ("repeats", "instructions", "shown_fields", "examples"):
            setattr(judge, name, entry[name])
        judge.questions = entry.get("questions", [])
        try:
            judge.full_clean()
            judge.save()
        except ValidationError as error:  # the checks above should have said it: still a problem, not a crash
            raise StudyFileError([Problem(parsed.line(path), path, "; ".join(error.messages))]) from None
        StudyJudge.objects.create(study=study, judge=judge)


def judge_entry(judge: Judge) -> dict[str, Any]:
    """A judge as an entry of a study file's `judges`."""
    return {
        "name": judge.name,
        "source": judge.source.name,
        "repeats": judge.repeats,
        "instructions": judge.instructions,
        "shown_fields": judge.shown_fields,
        "examples": judge.examples,
        **({"questions": judge.questions} if judge.questions else {}),  # only when set: older files stay the same
    }


def _create_declared(definition: dict[str, Any], resolved: _Resolved) -> list[str]:
    """The datasets and sources the file declares as imported and the database lacks, created empty, and the
    file's steps (with the datasets they write to)."""
    steps_note = f"Created by the study file of {definition['name']!r}: its generation steps fill it."
    created = apply_steps(definition.get("steps", []), steps_note)
    for name in list(resolved.datasets):
        if resolved.datasets[name] is None and Dataset.objects.filter(name=name).exists():  # a step's output
            resolved.datasets[name] = Dataset.objects.get(name=name)
    note = f"Created empty by the study file of {definition['name']!r}: an import of released outputs fills it."
    for name, dataset in resolved.datasets.items():
        if dataset is None:
            resolved.datasets[name] = Dataset.objects.create(name=name, description=note)
            created.append(f"dataset {name}")
    for name, source in resolved.sources.items():
        if source is None:
            resolved.sources[name] = AnswerSource.objects.create(
                name=name, kind=AnswerSource.Kind.IMPORTED, model_name=name, description=note
            )
            created.append(f"source {name}")
    return created


def _store_definition(study: Study, definition: dict[str, Any]) -> None:
    study.definition = definition
    study.definition_sha256 = canonical_sha256(definition)
    study.save(update_fields=["definition", "definition_sha256"])


# --- Writing back --------------------------------------------------------------------------------------------


def definition_of(study: Study) -> dict[str, Any]:
    """The study's definition: as loaded, or for a study made on the pages (or by the demo) read from its rows."""
    if study.definition:
        return complete(study.definition)  # a key added to the format later reads as its default
    version = study.rubric_version
    items = study.items.select_related(
        "answer__source", "answer__question__dataset", "question__dataset", "pair__dataset",
        "answer_1__source", "answer_1__question__dataset", "answer_2__source",
    ).order_by("id")  # fmt: skip
    datasets: dict[str, None] = {}
    sources: dict[str, None] = {}
    for item in items.iterator(chunk_size=2000):
        for answer in (item.answer, item.answer_1, item.answer_2):
            if answer is not None:
                datasets.setdefault(answer.question.dataset.name)
        # answer 1's source before answer 2's: the order a pairwise study compares them in
        for answer in (item.answer, item.answer_1, item.answer_2):
            if answer is not None:
                sources.setdefault(answer.source.name)
    pools = study.study_pools.select_related("pool").order_by("pool__name")
    derived = {
        "format": 1,
        "name": study.name,
        "description": study.description,
        "questions": [{"dataset": name} for name in sorted(datasets)],
        "conditions": [{"source": name} for name in sources],
        "rubric": {"name": version.rubric.name, "version": version.number} if version else None,
        "pools": [
            {"pool": p.pool.name, "replication": p.replication, "items_per_rater": p.items_per_rater} for p in pools
        ],
        "judges": [judge_entry(held.judge) for held in study.study_judges.select_related("judge__source")],
        "rating": {name: getattr(study, name) for name in RATING_FIELDS},
    }
    return complete(derived)


def export_study(study: Study) -> str:
    """The study's file: its definition as comment-free YAML, keys in the schema's order."""
    return dump_yaml(complete(definition_of(study)))


OUTCOMES = {
    "created": "created",
    "unchanged": "unchanged: the study already holds this file",
    "adopted": "unchanged: the study (set up before study files) now keeps this file as its definition",
    "updated": "updated: the study had no data yet, so it now follows the changed file",
    "new version": "created as a new version: the study of that name has data and its file changed",
}


def describe(loaded: Loaded) -> str:
    """What loading did, in one sentence."""
    parts = [OUTCOMES[loaded.outcome]]
    if loaded.items:
        parts.append(f"{_counted(loaded.items, 'items')} to rate")
    parts += [f"{what} (empty, declared imported)" for what in loaded.created]
    return "; ".join(parts)
