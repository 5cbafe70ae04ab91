"""Chains of generated questions (DESIGN.md, "MEDIC"): each `QuestionStep` asks a model to turn every input
question into new ones (an expanded desire, a patient question, a restyled question), one engine call of kind
`question` per (input, expansion, sample); each reply is kept once as a question made from its input.

- `steps.py`: pure: the expansions, the phrases, the output's external id and levels, the generated text.
- `usable.py`: pure: whether a generated text is a usable question (versioned).
- `question_kind.py`: the engine kind, `submit_step` and the flow from one step to the next.

Never depends on studies, scoring or analysis.
"""
