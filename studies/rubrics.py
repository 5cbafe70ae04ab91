"""The one rating form: built from a rubric version's typed questions (rubric_schema) and the item shown.

The form's fields only read what was posted; every rule is checked by `rubric_schema.validate`, the same
validator the API, drafts and judges use (shared/spec/rubrics.md, "Validation": nothing from an invalid
submission is stored). DESIGN.md, "Typed rubrics".
"""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from config.storable import text_problem
from datasets.models import Question

from . import rubric_schema
from .rubric_schema import ItemContext

SPAN_ROWS = 5  # empty quote rows offered on the page (more rows appear as they are filled, after a submit)
LIST_ROWS = 3  # empty entries of a list question offered below the stored ones
NUMBER_STEP = "0.01"  # a number field's input step (MEDIC's confidences are given to two decimals)


def item_context(item, shown_answers=()) -> ItemContext:
    """What validation needs from an item: its factor groups (when its rubric asks over them) and the texts
    of the answers shown."""
    question = _question_of(item)
    answers = shown_answers or [a for a in (item.answer, item.answer_1, item.answer_2) if a is not None]
    asks_groups = question is not None and rubric_schema.uses_groups(item.study.rubric_version.definition)
    return context_for(groups=factor_groups(question) if asks_groups else (), answers=[a.text for a in answers])


def assignment_context(assignment) -> ItemContext:
    """The item as this rater sees it: its factor groups and the answers shown, in their display order."""
    item = assignment.item
    return item_context(item, assignment.displayed_answers() if item.answer_1_id else ())


def context_for(*, groups=(), answers=()) -> ItemContext:
    return ItemContext(groups=tuple(groups), answers=tuple(answers), text_max_chars=settings.RATING_TEXT_MAX_CHARS,
                       text_problem=text_problem)  # fmt: skip


def _question_of(item) -> Question | None:
    if item.answer_id:
        return item.answer.question
    if item.question_id:
        return item.question
    return item.pair.question_1 if item.pair_id else None


def factor_groups(question: Question) -> list[tuple[str, str]]:
    """The groups an item's question is asked for: the factor levels its variants (or its base's) carry.

    E.g. ContextSRH's original question, whose variants name {"sex": "female"} and {"sex": "male"}: the
    groups are female and male (labelled "Sex: female", "Sex: male"), in the order the variants were made.
    """
    base_id = question.base_id or question.pk
    levels = Question.objects.filter(base_id=base_id).order_by("pk").values_list("levels", flat=True)
    groups: dict[str, str] = {}
    for carried in [question.levels, *levels]:
        for factor, level in (carried or {}).items():
            # the label names the factor: one item may list the groups of two (ContextSRH: ages, then sexes)
            groups.setdefault(str(level), f"{factor.replace('_', ' ').capitalize()}: {level}")
    return list(groups.items())


class SpanWidget(forms.Widget):
    """Rows of (quote, score): posted as <name>-<n>-quote and <name>-<n>-score."""

    template_name = "studies/widgets/spans.html"

    def __init__(self, question: dict, attrs=None):
        super().__init__(attrs)
        self.question = question

    def _render(self, template_name, context, renderer=None):
        # The project's templates, not the form renderer's (which sees only Django's own widget templates).
        return mark_safe(render_to_string(template_name, context))

    def id_for_label(self, id_):
        return f"{id_}-0-quote" if id_ else id_

    def value_from_datadict(self, data, files, name):
        if not hasattr(data, "getlist") and name in data:  # JSON (the API, judges): the list as sent
            return data[name]
        spans, row = [], 0
        while f"{name}-{row}-quote" in data or f"{name}-{row}-score" in data:
            quote, score = data.get(f"{name}-{row}-quote", ""), data.get(f"{name}-{row}-score", "")
            if quote.strip() or score.strip():
                spans.append({"quote": quote, "score": score})
            row += 1
        return spans

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-0-quote" not in data and (hasattr(data, "getlist") or name not in data)

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        given = list(value) if isinstance(value, list) else []
        scale = self.question["scale"]
        labels = scale.get("labels", {})
        context["widget"].update(
            rows=[(row, span if isinstance(span, dict) else {}) for row, span in
                  enumerate(given + [{}] * SPAN_ROWS)][: self.question.get("max_spans", 20)],
            quote_label=self.question["quote_label"],
            scale_label=scale["label"],
            scores=[(value, labels.get(str(value), "")) for value in rubric_schema.scale_values(scale)],
        )  # fmt: skip
        return context


class ListWidget(forms.Widget):
    """Entries of a list question, one input per field: posted as <name>-<n>-<field key>. Rows left empty are
    dropped; the rest go to the rubric's validator as typed (numbers as text, which it reads)."""

    template_name = "studies/widgets/list.html"

    def __init__(self, question: dict, attrs=None):
        super().__init__(attrs)
        self.question = question
        self.keys = [spec["key"] for spec in question["fields"]]

    def _render(self, template_name, context, renderer=None):
        return mark_safe(render_to_string(template_name, context))

    def id_for_label(self, id_):
        return f"{id_}-0-{self.keys[0]}" if id_ else id_

    def value_from_datadict(self, data, files, name):
        if not hasattr(data, "getlist") and name in data:  # JSON (the API, judges): the list as sent
            return data[name]
        entries, row = [], 0
        while any(f"{name}-{row}-{key}" in data for key in self.keys):
            entry = {key: data.get(f"{name}-{row}-{key}", "") for key in self.keys}
            if any(str(value).strip() for value in entry.values()):
                entries.append(entry)
            row += 1
        return entries

    def value_omitted_from_data(self, data, files, name):
        posted = any(f"{name}-0-{key}" in data for key in self.keys)
        return not posted and (hasattr(data, "getlist") or name not in data)

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        given = [entry if isinstance(entry, dict) else {} for entry in value] if isinstance(value, list) else []
        most = self.question.get("max_items", rubric_schema.DEFAULT_MAX_ITEMS)
        base = context["widget"]["attrs"].get("id") or name
        rows = []
        for row, entry in enumerate((given + [{}] * LIST_ROWS)[: max(most, len(given))]):
            rows.append([self._input(spec, f"{base}-{row}-{spec['key']}", f"{name}-{row}-{spec['key']}",
                                     entry.get(spec["key"])) for spec in self.question["fields"]])  # fmt: skip
        context["widget"].update(rows=rows, item_label=self.question["item_label"])
        return context

    def _input(self, spec: dict, id_: str, name: str, value) -> dict:
        shown = "" if value is None else str(value)
        field = {"kind": spec["type"], "id": id_, "name": name, "label": spec["label"], "value": shown,
                 "required": spec.get("required", False)}  # fmt: skip
        if spec["type"] == "scale":
            labels = spec.get("labels", {})
            values = rubric_schema.scale_values(spec)
            field["choices"] = [(str(v), f"{v} {labels.get(str(v), '')}".strip()) for v in values]
        if spec["type"] == "number":
            field.update(min=spec["min"], max=spec["max"], step=NUMBER_STEP)
        if spec["type"] in ("quote", "text"):
            field["maxlength"] = spec.get("max_chars", settings.RATING_TEXT_MAX_CHARS)
        return field


@dataclass
class Shown:
    """One question as the template shows it: its field, its options with descriptions, and its condition."""

    field: forms.BoundField
    question: dict
    descriptions: dict

    @property
    def condition(self) -> dict | None:
        return self.question.get("condition")

    @property
    def hint(self) -> str:
        """Shown without JavaScript (which hides the question until it applies): when to answer it."""
        if self.question.get("hint") or not self.condition:
            return self.question.get("hint", "")
        parent = self.field.form.question(self.condition["question"])
        choice = parent["type"] in ("single", "multiple")
        labels = dict(rubric_schema.options(parent, self.field.form.context)) if choice else {}
        answers = " or ".join(f"“{labels.get(v, v)}”" for v in self.condition["in"])
        return f"Answer only if your answer to “{parent['label']}” is {answers}:"

    @property
    def show_in(self) -> str:
        return " ".join(str(value) for value in self.condition["in"]) if self.condition else ""

    def options(self) -> list[tuple]:
        return [(box, self.descriptions.get(str(box.data["value"]), "")) for box in self.field]


class RatingForm(forms.Form):
    """A rubric version's questions as form fields, validated by rubric_schema.validate as a whole."""

    def __init__(self, *args, definition: dict, context: ItemContext, **kwargs):
        super().__init__(*args, **kwargs)
        self.definition, self.context = definition, context
        for q in rubric_schema.questions(definition):
            self.fields[q["key"]] = self._field(q)

    def _field(self, q: dict) -> forms.Field:
        label, kind = q["label"], q["type"]
        if kind == "single":
            choices = rubric_schema.options(q, self.context)
            return forms.ChoiceField(label=label, choices=choices, widget=forms.RadioSelect, required=False)
        if kind == "multiple":
            choices = rubric_schema.options(q, self.context)
            return forms.MultipleChoiceField(
                label=label, choices=choices, widget=forms.CheckboxSelectMultiple, required=False
            )
        if kind == "scale":
            labels = q.get("labels", {})
            choices = [(v, f"{v} {labels.get(str(v), '')}".strip()) for v in rubric_schema.scale_values(q)]
            return forms.ChoiceField(label=label, choices=choices, widget=forms.RadioSelect, required=False)
        if kind == "text":
            attrs = {"rows": q.get("rows", 3), "maxlength": self.context.text_max_chars}
            return forms.CharField(label=label, required=False, widget=forms.Textarea(attrs))
        if kind == "list":
            return forms.Field(label=label, required=False, widget=ListWidget(q))
        return forms.Field(label=label, required=False, widget=SpanWidget(q))

    def _clean_fields(self):
        # Fields only read the posted values; the rubric's validator checks them all at once, in clean().
        for name, bound in self._bound_items():
            self.cleaned_data[name] = bound.data

    def raw_values(self) -> dict:
        """What was posted, per question (a missing answer: None), as the API would send it."""
        return {name: self[name].data for name in self.fields}

    def posted_values(self) -> dict:
        """The answers present in the posted data (a draft): questions not posted at all are left out."""
        return {name: value for name, value in self.raw_values().items() if self._posted(name)}

    def _posted(self, name: str) -> bool:
        widget = self.fields[name].widget
        if isinstance(widget, SpanWidget | ListWidget):
            return not widget.value_omitted_from_data(self.data, None, name)
        return name in self.data

    def clean(self):
        values, errors = rubric_schema.validate(self.definition, self.raw_values(), self.context)
        for key, messages in errors.items():
            self.add_error(key, messages)
        return values

    def values(self) -> dict:
        """The stored answers: every question, with hidden ones empty."""
        return dict(self.cleaned_data)

    def question(self, key: str) -> dict:
        return rubric_schema.question(self.definition, key)

    def shown(self) -> list[Shown]:
        """The questions in order, for the template."""
        return [
            Shown(self[q["key"]], q, {o["key"]: o.get("description", "") for o in q.get("options") or []})
            for q in rubric_schema.questions(self.definition)
        ]


def rating_form(rubric_version, data=None, initial=None, context: ItemContext | None = None,
                definition: dict | None = None) -> RatingForm:  # fmt: skip
    """The rating form of a rubric version (or of `definition`, a part of it that a judge answers)."""
    return RatingForm(data=data, initial=initial, definition=definition or rubric_version.definition,
                      context=context or context_for())  # fmt: skip


def check_answers(
    rubric_version, values: dict, context: ItemContext, *, definition: dict | None = None
) -> tuple[dict, dict[str, list[str]]]:
    """(stored values, {}) or ({}, {question key: [messages]}): answers sent as JSON (the API, a judge's reply)
    through the rating form and its validator, exactly as the rating page checks a person's answers.
    `definition`: the part of the rubric a judge answers (rubric_schema.part); its other keys are refused."""
    form = rating_form(rubric_version, data=values, context=context, definition=definition)
    errors: dict[str, list[str]] = {}
    if not form.is_valid():
        errors = {("non_field_errors" if name == "__all__" else name): list(messages)
                  for name, messages in form.errors.items()}  # fmt: skip
    if definition is not None:
        asked = [q["key"] for q in rubric_schema.questions(definition)]
        for key in values:
            if key not in asked:
                errors[key] = [f"Not a question this judge answers (it answers: {', '.join(asked)})."]
    return ({}, errors) if errors else (form.values(), {})


def draft_problems(rubric_version, raw: dict, context: ItemContext | None = None) -> list[str]:
    """Each answer of a draft checked on its own (rubric_schema.validate, partial): "<question>: <message>"."""
    definition = rubric_version.definition
    _, errors = rubric_schema.validate(definition, raw, context or context_for(), partial=True)
    labels = {q["key"]: q["label"] for q in rubric_schema.questions(definition)}
    return [f"{labels[key]}: {' '.join(messages)}" for key, messages in errors.items()]
