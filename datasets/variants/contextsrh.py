"""ContextSRH (seed 004): each question asked again with a sentence of user context per group of each attribute
its answer depends on.

Pure: plain values in and out. The groups and sentences are the paper's (Levy et al. 2024: the milestone ages,
three conservative and three liberal states, binary sex; appendix A.2's prompts `{original question} I am {AGE}
years old.` etc.); the repository has none (../shared/datasets/contextsrh/SOURCE.md). Deterministic: the seed
changes nothing, so the default target dataset is not named by it.
"""

from . import MAX_LIMIT, BaseQuestion, Generator, VariantOptionsError, VariantSpec

NAME = "contextsrh"
VERSION = 1
FACTOR = "attribute"  # each variant carries one of the factors age, location or sex
ATTRIBUTES = ("age", "location", "sex")
GROUPS = {
    "age": ("10", "15", "18", "21", "25", "30", "40", "50", "60", "70"),
    "location": ("Hawaii", "Idaho", "Massachusetts", "South Dakota", "Vermont", "Wyoming"),
    "sex": ("female", "male"),
}
SENTENCES = {"age": "I am {group} years old.", "location": "I live in {group}.", "sex": "I am a {group}."}
DATASET_NAME = f"ContextSRH (context variants, {NAME} v{VERSION})"
OPTIONS = ("attributes", "limit", "dataset")


def context_sentence(attribute: str, group: str) -> str:
    return SENTENCES[attribute].format(group=group)


def with_context(question: str, attribute: str, group: str) -> str:
    """The question, its trailing spaces stripped, then one space and the sentence."""
    return f"{question.rstrip()} {context_sentence(attribute, group)}"


def variant_id(base_id: str, attribute: str, group: str) -> str:
    """`srh-001-location-south-dakota`."""
    return f"{base_id}-{attribute}-{group.lower().replace(' ', '-')}"


def check_options(options: dict) -> dict:
    """Options: `attributes` (some of age, location, sex; default all three, kept in that order), `limit` (the first
    N base questions by id) and `dataset` (the target dataset's name)."""
    options = dict(options or {})
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise VariantOptionsError(f"unknown options: {', '.join(sorted(unknown))}; known: {', '.join(OPTIONS)}")
    chosen = options.get("attributes")
    if chosen is None:
        chosen = list(ATTRIBUTES)
    if isinstance(chosen, str) or not isinstance(chosen, list) or not all(isinstance(v, str) for v in chosen):
        raise VariantOptionsError(f"attributes must be a list of names, e.g. {list(ATTRIBUTES)}")
    if not chosen:
        raise VariantOptionsError(f"attributes must name at least one of {', '.join(ATTRIBUTES)}")
    strange = [value for value in chosen if value not in ATTRIBUTES]
    if strange:
        raise VariantOptionsError(f"unknown attributes {', '.join(strange)}; known: {', '.join(ATTRIBUTES)}")
    if len(set(chosen)) != len(chosen):
        raise VariantOptionsError("an attribute is named twice")
    options["attributes"] = [attribute for attribute in ATTRIBUTES if attribute in chosen]
    if options.get("dataset") is not None and not (isinstance(options["dataset"], str) and options["dataset"].strip()):
        raise VariantOptionsError("dataset must be a name")
    limit = options.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT):
        raise VariantOptionsError(f"limit must be a whole number of base questions, from 1 to {MAX_LIMIT}")
    return options


def _marked(base: BaseQuestion) -> list[str]:
    """The attributes the base question is marked for (its metadata `attributes`, from import_contextsrh)."""
    marked = (base.metadata or {}).get("attributes")
    if not isinstance(marked, list) or not marked or any(value not in ATTRIBUTES for value in marked):
        raise ValueError(
            f"question {base.external_id}: not a ContextSRH question (metadata attributes must list some of "
            f"{', '.join(ATTRIBUTES)}; import it with import_contextsrh)"
        )
    return marked


def variants(base: BaseQuestion, seed: int, options: dict):
    """One variant per group of each chosen attribute the question is marked for, attributes in the order age,
    location, sex and groups in the paper's order. The seed is not used."""
    marked = _marked(base)
    for attribute in options["attributes"]:
        if attribute not in marked:
            continue
        for group in GROUPS[attribute]:
            yield VariantSpec(
                external_id=variant_id(base.external_id, attribute, group),
                text=with_context(base.text, attribute, group),
                levels={attribute: group},
                metadata={
                    "attribute": attribute,
                    "group": group,
                    "context": context_sentence(attribute, group),
                    "source": base.metadata.get("source"),
                },
            )


def per_question(metadata: dict, options: dict) -> int:
    """How many variants a base question with this metadata yields (0 for one that is not ContextSRH's: its run
    fails on it with the reason)."""
    marked = metadata.get("attributes") if isinstance(metadata, dict) else None
    if not isinstance(marked, list):
        return 0
    return sum(len(GROUPS[attribute]) for attribute in options["attributes"] if attribute in marked)


def dataset_name(seed: int, options: dict) -> str:
    if options.get("dataset"):
        return options["dataset"].strip()
    return DATASET_NAME


GENERATOR = Generator(
    name=NAME,
    version=VERSION,
    factor=FACTOR,
    levels=ATTRIBUTES,
    description="ContextSRH questions x the groups of each attribute they depend on: 'I am {AGE} years old.' (10 "
    "ages), 'I live in {LOCATION}.' (6 states), 'I am a {SEX}.' (female, male) appended (Levy et al. 2024). "
    "Deterministic: the seed has no effect (a run still takes one).",
    check_options=check_options,
    variants=variants,
    per_base=None,
    per_question=per_question,
    dataset_name=dataset_name,
    levels_option="attributes",
)
