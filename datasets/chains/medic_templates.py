"""MEDIC's prompt-generation templates as prompt recipes (datasets/medic/SOURCE.md, "Prompt-generation
templates", quoted there from BBN's `bbn_medic` at commit e9b0518; Apache-2.0), one recipe per step and model
family where the wording differs. `{question}` is the input question's text (MEDIC's `{desire_text}` /
`{prompt_text}`), `{extra_string}` a step phrase (`EXTRA_STRING` / `RESTYLE_EXTRA_STRING`: empty for the
style "standard"). The whitespace is the source's: its templates are indented Python strings, so the second line
starts with twelve spaces, and the restyling prompt ends with a space.

Where we differ: `_pre_prompt` is written into each family's template rather than added by a model wrapper;
MEDIC's wrappers apply the model's chat template to the text, and so does an OpenAI-compatible server to a user
message.
"""

PRE_PROMPT = {
    "mistral": "",  # Mistral / BioMistral
    "llama": "'Please give a full and complete answer for the following request. ",  # the stray ' is the source's
    "qwen": "Please give a full and complete answer in English for the following request. ",
}
INDENT = " " * 12

# "A patient{extra_string} would like a medical chatbot to help him/her with the topic of {desire_text}."
WANTS = "{pre}A patient{{extra_string}} would like a medical chatbot to help him/her with the topic "
DESIRE_TO_DESIRE = {
    "mistral": WANTS + "of {{question}}.\n" + INDENT + "Giving your answer in six words or less, another topic that "
    "the patient may want the chatbot to help him/her with is:",
    "qwen": WANTS + "of {{question}}.\n" + INDENT + "Please give in English and in six words or less a similar topic "
    "that the patient may want the chatbot to help him/her with is:",
}
ASKS = "One possible question the patient might ask the chatbot is:"
DESIRE_TO_QUESTION = {
    "mistral": WANTS + "of {{question}}.\n" + INDENT + ASKS,
    "llama": WANTS + "{{question}}.\n" + INDENT + ASKS,  # "topic {desire_text}", no "of", as in the source
}
DESIRE_TO_QUESTION["qwen"] = DESIRE_TO_QUESTION["mistral"]  # Mistral, BioMistral and Qwen share it
# `prompt_for_desire_patient_to_chatbot_prompt`: one template for every family; `{patient_expression}` a phrase
# (e.g. "I'm a woman. I'm Black": the template adds the full stop), `{desire}` the input's text.
DESIRE_PATIENT_TO_QUESTION = {
    family: "{pre}. {{patient_expression}}. " + WANTS.removeprefix("{pre}") + "{{question}}. " + ASKS
    for family in PRE_PROMPT
}
RESTYLE = {family: '{pre}One possible way to re-write the sentence "{{question}}"{{extra_string}} is: '
           for family in PRE_PROMPT}  # fmt: skip

# `extra_string`: "" for the style "standard", else the source's phrase over the style.
EXTRA_STRING = {"factor": "style", "cases": {"standard": ""}, "default": ", who {style},"}
RESTYLE_EXTRA_STRING = {
    "factor": "style", "cases": {"standard": ""}, "default": " in the style of someone who {style},"
}  # fmt: skip

STEPS = {"desire to desire": DESIRE_TO_DESIRE, "desire to question": DESIRE_TO_QUESTION,
         "desire and patient to question": DESIRE_PATIENT_TO_QUESTION, "restyle": RESTYLE}  # fmt: skip
# The patient expression over a step's `gender` and `race` levels (common/Patient.py's "I'm a {gender}." and a race
# phrase such as "I'm Black"); the template adds the last full stop.
PATIENT_EXPRESSION = {"factor": "gender", "cases": {}, "default": "I'm a {gender}. I'm {race}"}


def recipe_name(step: str, family: str) -> str:
    return f"MEDIC {step} ({family})"


def recipes() -> list[dict]:
    """The recipes' fields: name, description, item template; chat mode, no instruction, temperature unset
    (the step's source decides: MEDIC generated at a temperature the paper leaves blank)."""
    found = []
    for step, templates in STEPS.items():
        for family, template in templates.items():
            found.append(
                {
                    "name": recipe_name(step, family),
                    "description": f"MEDIC's {step} template for {family} models, verbatim "
                    "(datasets/chains/medic_templates.py; datasets/medic/SOURCE.md).",
                    "item_template": template.format(pre=PRE_PROMPT[family]),
                }
            )
    return found


def ensure_medic_recipes(recipe_model) -> int:
    """Create the recipes that are missing (a migration passes its historical model); how many were made."""
    made = 0
    for fields in recipes():
        _, created = recipe_model.objects.get_or_create(
            name=fields["name"],
            defaults={**fields, "mode": "chat", "instruction": "", "temperature": None, "max_tokens": 512},
        )
        made += created
    return made
