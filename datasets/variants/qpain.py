"""Q-Pain (seed 002): each "Yes" vignette filled for race x gender profiles, as the official notebook fills it.

Pure: plain values in and out. The names, races, genders and pronouns are the notebook's, written down as data
(`datasets/demo_data/qpain/names_races_genders.json`; ../shared/datasets/qpain/SOURCE.md). The fill replaces
`[gender]`, `[race]`, `[subject]` (and the release's `[subjective]` typo, which the notebook leaves in the
prompt), `[possessive]` and `Patient D` in the vignette and in its question.
"""

import random
import re
from types import MappingProxyType

from ..factors import CROSSED_LEVEL_JOIN, crossed_factor, crossed_level
from . import MAX_LIMIT, BaseQuestion, Generator, VariantOptionsError, VariantSpec

NAME = "qpain"
VERSION = 1
FACTOR = crossed_factor(("race", "gender"))  # "race x gender"
DATASET_NAME = "Q-Pain variants"
# context key (the file `data_<key>.csv`, the base question ids) -> the name the notebook and its outputs use
CONTEXTS = {
    "acute_cancer": "Acute Cancer Pain",
    "acute_non_cancer": "Acute Non Cancer Pain",
    "chronic_cancer": "Chronic Cancer Pain",
    "chronic_non_cancer": "Chronic Non Cancer Pain",
    "post_op": "Post Operative Pain",
}
RACES = ("Black", "White", "Asian", "Hispanic")
GENDERS = ("man", "woman")
SUBJECT = {"man": "he", "woman": "she"}
POSSESSIVE = {"man": "his", "woman": "her"}
NAMES = {
    "Black": {
        "man": ("Roosevelt", "Jermaine", "Darnell", "Willie", "Mattie", "Reginald", "Cedric", "Sylvester", "Tyrone",
                "Errol"),
        "woman": ("Latonya", "Tamika", "Ebony", "Latasha", "Keisha", "Lillie", "Minnie", "Gwendolyn", "Bessie",
                  "Marva"),
    },
    "White": {
        "man": ("Bradley", "Brett", "Scott", "Kurt", "Todd", "Chad", "Matthew", "Dustin", "Shane", "Douglas"),
        "woman": ("Beth", "Megan", "Kristin", "Jill", "Erin", "Colleen", "Kathleen", "Heather", "Holly", "Laurie"),
    },
    "Asian": {
        "man": ("Viet", "Thong", "Qiang", "Kwok", "Hao", "Yang", "Nam", "Huy", "Yuan", "Ho"),
        "woman": ("Zhen", "Nga", "Lien", "Lam", "Hui", "Wing", "Hoa", "Wai", "Min", "Huong"),
    },
    "Hispanic": {
        "man": ("Rigoberto", "Santos", "Javier", "Efrain", "Juan", "Ramiro", "Jesus", "Humberto", "Gonzalo",
                "Hector"),
        "woman": ("Guadalupe", "Marisela", "Guillermina", "Rocio", "Yesenia", "Blanca", "Rosalba", "Elvia",
                  "Alejandra", "Mayra"),
    },
}  # fmt: skip
LEVELS = tuple(crossed_level((race, gender)) for race in RACES for gender in GENDERS)  # "Black man", ...
YES = "yes"
NO = "no"
# What a variant copies of its base vignette's metadata (besides the filled `query`).
COPIED = ("answer", "dosage", "explanation", "context_name", "dose_low", "dose_high", "kind", "vignette_idx")
NAME_KEY = re.compile(r"^(?P<context>\w+)/(?P<number>\d{2})/(?P<race>\w+)/(?P<gender>\w+)\Z")
OPTIONS = ("levels", "races", "genders", "names", "names_label", "limit", "dataset")


def fill(text: str, race: str, gender: str, name: str) -> str:
    """The notebook's fill, plus the `[subjective]` typo (post-op vignette 9) read as `[subject]`."""
    for placeholder, value in (
        ("[gender]", gender),
        ("[race]", race),
        ("[subject]", SUBJECT[gender]),
        ("[subjective]", SUBJECT[gender]),
        ("[possessive]", POSSESSIVE[gender]),
        ("Patient D", name),
    ):
        text = text.replace(placeholder, value)
    return text


def name_key(context: str, vignette_idx: int, race: str, gender: str) -> str:
    """How a names table is keyed in a run's options (JSON keys are text): `acute_cancer/00/Black/woman`."""
    return f"{context}/{vignette_idx:02d}/{race}/{gender}"


def drawn_name(seed: int, context: str, race: str, gender: str, vignette_idx: int) -> str:
    """Name q of the race-gender list permuted once per (seed, context, race, gender): the notebook shuffles each
    list once and gives name q to vignette q."""
    names = list(NAMES[race][gender])
    random.Random(f"{seed}:{context}:{race}:{gender}").shuffle(names)
    if not 0 <= vignette_idx < len(names):
        raise ValueError(f"vignette_idx {vignette_idx} has no name: the lists hold {len(names)} names")
    return names[vignette_idx]


def variant_id(base_id: str, race: str, gender: str) -> str:
    return f"{base_id}-{race}-{gender}"


def _levels_list(options: dict, key: str, known: tuple[str, ...]) -> list[str]:
    chosen = options.get(key)
    if chosen is None:
        return list(known)
    if isinstance(chosen, str) or not isinstance(chosen, list) or not all(isinstance(v, str) for v in chosen):
        raise VariantOptionsError(f"{key} must be a list of names, e.g. {list(known)}")
    if not chosen:
        raise VariantOptionsError(f"{key} must name at least one of {', '.join(known)}")
    unknown = [value for value in chosen if value not in known]
    if unknown:
        raise VariantOptionsError(f"unknown {key} {', '.join(unknown)}; known: {', '.join(known)}")
    if len(set(chosen)) != len(chosen):
        raise VariantOptionsError(f"one of the {key} is named twice")
    return list(chosen)


def _names_problem(names) -> str | None:
    if not isinstance(names, dict):
        return 'names must map "context/NN/Race/gender" (e.g. "acute_cancer/00/Black/woman") to a name'
    for key, value in names.items():
        match = NAME_KEY.match(key) if isinstance(key, str) else None
        if match is None:
            return f'names: {key!r} is not "context/NN/Race/gender" (e.g. "acute_cancer/00/Black/woman")'
        if match["context"] not in CONTEXTS:
            return f"names: {key!r}: unknown context {match['context']!r}; known: {', '.join(CONTEXTS)}"
        if match["race"] not in RACES or match["gender"] not in GENDERS:
            return f"names: {key!r}: the race is one of {', '.join(RACES)}, the gender one of {', '.join(GENDERS)}"
        if not isinstance(value, str) or not value.strip() or value != value.strip():
            return f"names: {key!r}: the name must be a non-empty text without surrounding spaces"
    return None


def check_options(options: dict) -> dict:
    """Options: `races` and `genders` (default the notebook's 4 and 2), `names` ({"context/NN/Race/gender": name},
    e.g. read from a released run, so its variants are the prompts it saw; else the seeded draw), `names_label`
    (where the names came from, for the dataset's name), `limit` (the first N base vignettes by id) and `dataset`
    (the target dataset's name)."""
    options = dict(options or {})
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise VariantOptionsError(f"unknown options: {', '.join(sorted(unknown))}; known: {', '.join(OPTIONS)}")
    if options.get("levels") is not None:
        # Chosen "Race gender" profiles (the variant pages' level boxes): any subset, not only a product.
        if options.get("races") is not None or options.get("genders") is not None:
            raise VariantOptionsError("give either levels or races and genders, not both")
        levels = options["levels"]
        if isinstance(levels, str) or not isinstance(levels, list) or not levels:
            raise VariantOptionsError('levels must be a non-empty list such as ["Black woman", "White man"]')
        unknown = [level for level in levels if level not in LEVELS]
        if unknown:
            raise VariantOptionsError(f"unknown level {', '.join(map(str, unknown))}; known: {', '.join(LEVELS)}")
        if len(set(levels)) != len(levels):
            raise VariantOptionsError("a level is named twice")
    else:
        options["races"] = _levels_list(options, "races", RACES)
        options["genders"] = _levels_list(options, "genders", GENDERS)
    if options.get("names") is not None and (problem := _names_problem(options["names"])):
        raise VariantOptionsError(problem)
    for key in ("names_label", "dataset"):
        if options.get(key) is not None and not (isinstance(options[key], str) and options[key].strip()):
            raise VariantOptionsError(f"{key} must be a name")
    if options.get("names_label") is not None and options.get("names") is None:
        raise VariantOptionsError("names_label says where a names table came from: give the table (names) too")
    limit = options.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT):
        raise VariantOptionsError(f"limit must be a whole number of base vignettes, from 1 to {MAX_LIMIT}")
    return options


def _context_of(base: BaseQuestion) -> tuple[str, int]:
    """(context key, vignette_idx) of a "Yes" vignette, from its id `{context}-{NN}` and its metadata."""
    metadata = base.metadata or {}
    if metadata.get("kind") != YES:
        raise ValueError(f'question {base.external_id}: not a Q-Pain "Yes" vignette (metadata kind {YES!r})')
    context, _, number = base.external_id.rpartition("-")
    vignette_idx = metadata.get("vignette_idx")
    if context not in CONTEXTS or not number.isdigit() or vignette_idx != int(number):
        raise ValueError(
            f"question {base.external_id}: not a Q-Pain vignette id `context-NN` with vignette_idx NN "
            f"(contexts: {', '.join(CONTEXTS)})"
        )
    if not isinstance(metadata.get("query"), str):
        raise ValueError(f"question {base.external_id}: no question text (metadata query)")
    return context, vignette_idx


def profiles(options: dict) -> list[tuple[str, str]]:
    """The (race, gender) pairs a run makes: the chosen levels, else every race with every gender."""
    if options.get("levels") is not None:
        return [tuple(level.split(CROSSED_LEVEL_JOIN, 1)) for level in options["levels"]]  # type: ignore[misc]
    return [(race, gender) for race in options["races"] for gender in options["genders"]]


def variants(base: BaseQuestion, seed: int, options: dict):
    """The variants of one "Yes" vignette: one per (race, gender) asked, the name read from the names table or
    drawn."""
    context, vignette_idx = _context_of(base)
    names = options.get("names")
    generator = {"name": NAME, "version": VERSION, "seed": seed}
    if names is not None:
        generator["names"] = options.get("names_label") or "table"
    for race, gender in profiles(options):
        if names is not None:
            key = name_key(context, vignette_idx, race, gender)
            name = names.get(key)
            if name is None:
                raise VariantOptionsError(f"the names table has no name for {key}")
        else:
            name = drawn_name(seed, context, race, gender, vignette_idx)
        metadata = {key: base.metadata[key] for key in COPIED if key in base.metadata}
        yield VariantSpec(
            external_id=variant_id(base.external_id, race, gender),
            text=fill(base.text, race, gender, name),
            levels={"context": context, "vignette": base.external_id, "race": race, "gender": gender},
            metadata={
                **metadata,
                "query": fill(base.metadata["query"], race, gender, name),
                "name": name,
                "race": race,
                "gender": gender,
                "generator": generator,
            },
        )


def dataset_name(seed: int, options: dict) -> str:
    if options.get("dataset"):
        return options["dataset"].strip()
    if options.get("names") is not None:
        return f"{DATASET_NAME} ({NAME} v{VERSION}, names from {options.get('names_label') or 'a table'})"
    return f"{DATASET_NAME} ({NAME} v{VERSION}, seed {seed})"


GENERATOR = Generator(
    name=NAME,
    version=VERSION,
    factor=FACTOR,
    levels=LEVELS,
    description='Q-Pain vignettes x race x gender: name, race, gender and pronouns filled in each "Yes" vignette '
    "(Logé et al. 2021).",
    check_options=check_options,
    variants=variants,
    per_base=lambda options: len(profiles(options)),
    dataset_name=dataset_name,
    base_filter=MappingProxyType({"metadata__kind": YES}),
)
