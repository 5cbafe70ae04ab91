"""Published datasets the importers recognise: their names as published, licences and sources.

File stems (e.g. `equitymedqa_omaq`, the names of the EquityMedQA release files) map to
the published dataset names used in the ratings release (`ratings-export.md`).
"""

from dataclasses import dataclass

EQUITYMEDQA_CITATION = (
    "Pfohl, Cole-Lewis et al., 'A toolbox for surfacing health equity harms and biases in large language "
    "models', Nature Medicine 2024 (arXiv:2403.12025); Hugging Face katielink/EquityMedQA."
)


@dataclass(frozen=True)
class KnownDataset:
    name: str
    description: str
    licence: str
    source: str
    file_stems: tuple[str, ...] = ()


def _equitymedqa(name: str, stems: tuple[str, ...], description: str) -> KnownDataset:
    return KnownDataset(name, description, "CC BY 4.0", EQUITYMEDQA_CITATION, stems)


KNOWN_DATASETS = [
    _equitymedqa(
        "Open-ended Medical Adversarial Queries (OMAQ)",
        ("equitymedqa_omaq",),
        "Human-written adversarial consumer queries with explicit or implicit bias (EquityMedQA).",
    ),
    _equitymedqa(
        "Equity in Health AI (EHAI)",
        ("equitymedqa_ehai",),
        "Questions from a participatory workshop on equity-related harms (EquityMedQA).",
    ),
    _equitymedqa(
        "Failure-Based Red Teaming - Manual (FBRT-Manual)",
        ("equitymedqa_fbrt_manual",),
        "Questions written against observed Med-PaLM 2 failures (EquityMedQA).",
    ),
    _equitymedqa(
        "Failure-Based Red Teaming - LLM (FBRT-LLM)",
        ("equitymedqa_fbrt_llm_661_sampled", "equitymedqa_fbrt_llm"),
        "LLM-generated expansions of FBRT-Manual; the human evaluation used a 661-question sample (EquityMedQA).",
    ),
    _equitymedqa(
        "TRopical and INfectious DiseaseS (TRINDS)",
        ("equitymedqa_trinds",),
        "Tropical and infectious disease questions with patient context (EquityMedQA).",
    ),
    _equitymedqa(
        "Counterfactual Context - Manual (CC-Manual)",
        ("equitymedqa_cc_manual",),
        "Hand-built counterfactual pairs differing in identity or context (EquityMedQA).",
    ),
    _equitymedqa(
        "Counterfactual Context - LLM (CC-LLM)",
        ("equitymedqa_cc_llm",),
        "LLM-generated counterfactual pairs differing in identity or context (EquityMedQA).",
    ),
    _equitymedqa(
        "Mixed MMQA-OMAQ",
        ("other_datasets_mixed_mmqa_omaq",),
        "140 MultiMedQA questions and 100 OMAQ questions, multiply rated (EquityMedQA study).",
    ),
    _equitymedqa(
        "HealthSearchQA",
        ("other_datasets_multimedqa",),
        "1,061 consumer medical questions from HealthSearchQA (Singhal et al.).",
    ),
    _equitymedqa(
        "Omiye et al.",
        ("other_datasets_omiye_et_al",),
        "Nine questions on race-based medical misconceptions (Omiye et al. 2023).",
    ),
    KnownDataset(
        "ContextSRH",
        "Sexual and reproductive health questions whose answers depend on age, sex or location "
        "(Levy et al., Findings of EMNLP 2024).",
        "MIT",
        "github.com/sharonlevy/ContextualQuestions @ 3acfae55; questions from Planned Parenthood and Go Ask Alice!",
        ("labeled_contexual_questions_submit",),
    ),
    KnownDataset(
        "Q-Pain",
        "Pain-management vignettes with race and gender placeholders (Logé et al., NeurIPS 2021 D&B).",
        "CC BY-SA 4.0",
        "PhysioNet q-pain 1.0.0 (doi:10.13026/2tdv-hj07).",
    ),
    KnownDataset(
        "MedQA (USMLE test)",
        "MedQA USMLE 5-option test split, the base questions of BiasMedQA (Jin et al. 2020).",
        "MIT",
        "github.com/jind11/MedQA, via github.com/carlwharris/cog-bias-med-LLMs @ bee2807d.",
    ),
    KnownDataset(
        "BiasMedQA",
        "MedQA questions with one of seven cognitive biases injected (Schmidgall et al., arXiv:2402.08113).",
        "None stated by the authors: internal use only",
        "github.com/carlwharris/cog-bias-med-LLMs @ bee2807d.",
    ),
]

_BY_NAME = {known.name.casefold(): known for known in KNOWN_DATASETS}
_BY_STEM = {stem: known for known in KNOWN_DATASETS for stem in known.file_stems}


def known_dataset(name: str) -> KnownDataset | None:
    return _BY_NAME.get(name.casefold())


def dataset_name_for_stem(stem: str) -> str | None:
    """The published name for a release file stem or a column value such as `equitymedqa_cc_llm`."""
    known = _BY_STEM.get(stem.strip().lower())
    return known.name if known else None
