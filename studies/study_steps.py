"""A study file's `steps` (DESIGN.md, "MEDIC"; datasets/chains): checked against the database with the rest of
the file, and made (or found) as `QuestionStep`s when it loads.

A step's source must be a model with an endpoint, its recipe must exist and show no worked examples, its input
is a dataset (which must exist, or be another step's output in this file) or an earlier step of the file
(`after`), and its output dataset is created when missing but must not be another step's. A step of that name
already stored must ask the same (its `QuestionStep.RECIPE` fields), unless it has made nothing yet: then
loading makes it the file's. The study does not own its steps (datasets never depends on studies): its file
names them, and `run_steps --study` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from datasets.chains.steps import StepError, check_phrases, check_size
from datasets.models import AnswerSource, Dataset, PromptRecipe, QuestionStep

from .study_yaml import Path

Report = Callable[[Path, str], None]


def step_outputs(entries: list[dict[str, Any]]) -> set[str]:
    return {entry["output"] for entry in entries}


def check_steps(entries: list[dict[str, Any]], problem: Report) -> None:
    """Report every problem of the file's steps (with its path)."""
    sources = {s.name: s for s in AnswerSource.objects.filter(name__in={entry["source"] for entry in entries})}
    recipes = {r.name: r for r in PromptRecipe.objects.filter(name__in={entry["recipe"] for entry in entries})}
    inputs = {entry["input_dataset"] for entry in entries if entry["input_dataset"]}
    datasets = set(Dataset.objects.filter(name__in=inputs).values_list("name", flat=True))
    outputs = step_outputs(entries)
    stored = {step.name: step for step in QuestionStep.objects.filter(name__in={entry["name"] for entry in entries})}
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        path: Path = ("steps", index)
        source = sources.get(entry["source"])
        if source is None:
            problem((*path, "source"), f"no answer source named {entry['source']!r}")
        elif not source.base_url:
            problem((*path, "source"), f"{source.name!r} has no endpoint (base URL): a step's source is a model to ask")
        recipe = recipes.get(entry["recipe"])
        if recipe is None:
            problem((*path, "recipe"), f"no prompt recipe named {entry['recipe']!r}")
        elif recipe.examples:
            problem((*path, "recipe"), f"{recipe.name!r} shows worked examples: a step's recipe has none")
        if (entry["input_dataset"] is None) == (entry["after"] is None):
            problem(path, "give a step either an input_dataset or the step it comes after, not both")
        elif entry["input_dataset"] is not None and entry["input_dataset"] not in datasets | outputs:
            problem((*path, "input_dataset"), f"no dataset named {entry['input_dataset']!r}")
        elif entry["after"] is not None and entry["after"] not in seen:
            problem((*path, "after"), f"no earlier step named {entry['after']!r} in this file")
        if entry["output"] in {other["output"] for other in entries[:index]}:
            problem((*path, "output"), f"{entry['output']!r} is the output of an earlier step: each step has its own")
        try:
            check_phrases(entry["phrases"])
        except StepError as error:
            problem((*path, "phrases"), str(error))
        try:
            check_size(entry["expansions"], entry["samples"])
        except StepError as error:
            problem((*path, "expansions"), str(error))
        step = stored.get(entry["name"])
        if step is not None and step.made_any() and _differs(step, entry):
            problem((*path, "name"), f"a step named {entry['name']!r} has made questions and asks something else: "
                    "give this one another name")  # fmt: skip
        if entry["name"] in seen:
            problem((*path, "name"), f"the same name as steps[{seen[entry['name']]}]")
        seen.setdefault(entry["name"], index)


def _fields(entry: dict[str, Any], steps: dict[str, QuestionStep], datasets: dict[str, Dataset]) -> dict[str, Any]:
    return {
        "description": entry["description"],
        "source": AnswerSource.objects.get(name=entry["source"]),
        "recipe": PromptRecipe.objects.get(name=entry["recipe"]),
        "input_dataset": datasets[entry["input_dataset"]] if entry["input_dataset"] else None,
        "input_levels": entry["input_levels"],
        "after": steps[entry["after"]] if entry["after"] else None,
        "start": entry["start"],
        "output": datasets[entry["output"]],
        "expansions": entry["expansions"],
        "phrases": entry["phrases"],
        "output_levels": entry["output_levels"],
        "samples": entry["samples"],
        "seed": entry["seed"],
    }


def _differs(step: QuestionStep, entry: dict[str, Any]) -> bool:
    return step_entry(step) != {key: entry[key] for key in step_entry(step)}


def apply_steps(entries: list[dict[str, Any]], note: str) -> list[str]:
    """Make or update the file's steps (their outputs created when missing); returns what was created."""
    created = []
    names = {entry["output"] for entry in entries} | {e["input_dataset"] for e in entries if e["input_dataset"]}
    datasets = {dataset.name: dataset for dataset in Dataset.objects.filter(name__in=names)}
    for name in sorted(names - set(datasets)):
        datasets[name] = Dataset.objects.create(name=name, description=note)
        created.append(f"dataset {name}")
    steps: dict[str, QuestionStep] = {}
    for entry in entries:
        step = QuestionStep.objects.filter(name=entry["name"]).first() or QuestionStep(name=entry["name"])
        for name, value in _fields(entry, steps, datasets).items():
            setattr(step, name, value)
        step.save()  # refused (ValidationError) when it has made questions and asks something else
        steps[entry["name"]] = step
    return created


def step_entry(step: QuestionStep) -> dict[str, Any]:
    """A step as an entry of a study file's `steps`."""
    return {
        "name": step.name,
        "description": step.description,
        "source": step.source.name,
        "recipe": step.recipe.name,
        "input_dataset": step.input_dataset.name if step.input_dataset_id else None,
        "input_levels": step.input_levels,
        "after": step.after.name if step.after_id else None,
        "start": step.start,
        "output": step.output.name,
        "expansions": step.expansions,
        "phrases": step.phrases,
        "output_levels": step.output_levels,
        "samples": step.samples,
        "seed": step.seed,
    }


def steps_of(definition: dict[str, Any]) -> list[QuestionStep]:
    """The study's steps (its file's `steps`), in the file's order."""
    names = [entry["name"] for entry in definition.get("steps", [])]
    found = {step.name: step for step in QuestionStep.objects.filter(name__in=names).select_related("output")}
    return [found[name] for name in names if name in found]
