"""MEDIC's writing styles as factor levels (../shared/datasets/medic/SOURCE.md, "Style lists").

A restyled MEDIC prompt names its style as "person with a {G}th grade level of education who {descriptor}"
(G in 6, 8, 10, 12, 14 and 19 descriptors in the fixtures), or "standard" for no restyling. Pure: the import
and the generation steps read a style the same way.
"""

import re

STANDARD = "standard"
PERSON_STYLE = re.compile(r"person with an? (\d+)(?:st|nd|rd|th) grade level of education who (\S.*)")


def style_levels(style: str | None) -> dict[str, str]:
    """{"style": ...} and, for a "person with a {G}th grade ... who {descriptor}" style, "grade" (G as text,
    e.g. "8") and "descriptor". An absent or blank style is "standard"; other styles are kept whole."""
    style = (style or "").strip() or STANDARD
    levels = {"style": style}
    found = PERSON_STYLE.fullmatch(style)
    if found:
        levels["grade"] = str(int(found.group(1)))
        levels["descriptor"] = found.group(2).strip()
    return levels
