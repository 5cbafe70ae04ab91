"""Reference data every installation starts with: the built-in rater pools and survey categories.

Migrations 0002 and 0005 call these with historical models; tests that flush the database call them again.
"""

BUILTIN_POOLS = [
    ("physician", "Physician", "Physicians rating answers for bias (EquityMedQA rater pool)."),
    ("equity_expert", "Health equity expert", "Raters with expertise in health equity (EquityMedQA rater pool)."),
    ("consumer", "Consumer", "Lay raters, e.g. from a crowd panel (EquityMedQA consumer study)."),
]

DEFAULT_DEMOGRAPHIC_OPTIONS = {
    "age_group": ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or older"],
    "gender": ["Woman", "Man", "Non-binary", "Another gender"],
    "race_ethnicity": [
        "American Indian or Alaska Native",
        "Asian",
        "Black or African American",
        "Hispanic or Latino",
        "Middle Eastern or North African",
        "Native Hawaiian or Other Pacific Islander",
        "White",
        "Another race or ethnicity",
    ],
}


def ensure_builtin_pools(pool_model) -> None:
    for slug, name, description in BUILTIN_POOLS:
        pool_model.objects.get_or_create(slug=slug, defaults={"name": name, "description": description})


def ensure_demographic_options(option_model) -> None:
    for field, labels in DEFAULT_DEMOGRAPHIC_OPTIONS.items():
        for position, label in enumerate(labels):
            option_model.objects.get_or_create(field=field, label=label, defaults={"position": position})
