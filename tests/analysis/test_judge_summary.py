"""What the judge page says (analysis/judge_summary.py), on small hand-made tables: no database."""

import pandas as pd

from analysis.judge_agreement import AGREEMENT_COLUMNS
from analysis.judge_summary import (
    agreement_sections,
    assisted_rows,
    consistency_rows,
    disagreements,
    estimate_text,
    flagged_findings,
    p_text,
    place_rows,
)
from analysis.ppi import JUDGE_ASSISTED_COLUMNS


def agreement_row(a, b, kind_a, kind_b, level, metric, estimate, flag="", p="", n=20):
    values = ["S", "bias", a, b, kind_a, kind_b, level, metric, n, estimate, estimate - 0.1, estimate + 0.05, p, flag]
    return dict(zip(AGREEMENT_COLUMNS, values, strict=True))


def test_estimates_read_as_shares_or_statistics_and_blank_when_not_estimable():
    assert estimate_text(0.724, 0.57, 0.853, percent=True) == "72% (57–85%)"
    assert estimate_text(0.2, -0.07, 0.48) == "0.20 (-0.07–0.48)"
    assert estimate_text(0.5, float("nan"), None) == "0.50"
    assert estimate_text(float("nan"), 0.1, 0.2) == "—" and estimate_text("", "", "") == "—"
    assert (p_text(0.00009), p_text(0.0042), p_text(0.031)) == ("p < 0.0001", "p = 0.0042", "p = 0.03")


def test_a_flagged_factor_names_its_least_agreeing_level_against_the_others():
    rows = [
        agreement_row("J", "Physician", "judge", "human", "", "percent_agreement", 0.8),
        agreement_row("J", "Physician", "judge", "human", "race=Asian", "percent_agreement", 0.9, True, 0.002),
        agreement_row("J", "Physician", "judge", "human", "race=Black", "percent_agreement", 0.55, True, 0.002),
        agreement_row("J", "Physician", "judge", "human", "race=White", "percent_agreement", 1.0, True, 0.002),
        agreement_row("J", "Physician", "judge", "human", "race=Black", "cohen_kappa", 0.1, True, 0.002),
        agreement_row("J", "Physician", "judge", "human", "gender=Woman", "percent_agreement", 0.7, False, 0.4),
    ]
    [finding] = flagged_findings(pd.DataFrame(rows))
    assert finding.sentence == (
        "J disagrees with Physician raters more for race=Black: 55% agreement vs 90% for race=Asian, 100% for "
        "race=White (bias; Holm-adjusted p = 0.002)."
    )
    flagged = [(row.level, row.cells[0]) for row in agreement_sections(pd.DataFrame(rows))[0].rows if row.flagged]
    assert flagged == [("race=Black", "55% (45–60%)")]


def test_sections_put_all_items_first_and_people_before_judges():
    rows = [
        agreement_row("J", "Physician", "judge", "human", "race=Black", "percent_agreement", 0.5),
        agreement_row("J", "Physician", "judge", "human", "", "percent_agreement", 0.7),
        agreement_row("Physician", "Physician", "human", "human", "", "percent_agreement", 0.9),
        agreement_row("J", "K", "judge", "judge", "", "cohen_kappa", 0.4),
    ]
    [section] = agreement_sections(pd.DataFrame(rows))
    assert [(row.level, row.comparison, row.kind) for row in section.rows] == [
        ("", "Physician vs Physician (people)", "people"),
        ("", "J vs Physician", "judge"),
        ("", "J vs K (judges)", "judges"),
        ("race=Black", "J vs Physician", "judge"),
    ]
    assert section.rows[2].cells == ("—", "0.40 (0.30–0.45)", "—")


def test_assisted_rows_put_the_three_methods_side_by_side_with_the_items_saved():
    def row(method, estimate, n_human=100, n_judge=1000, equivalent=None):
        values = ["S", "bias", "", method, n_human, n_judge, estimate, estimate - 0.1, estimate + 0.1, "J", "P",
                  equivalent, ""]  # fmt: skip
        return dict(zip(JUDGE_ASSISTED_COLUMNS, values, strict=True))

    table = pd.DataFrame([row("human_only", 0.3), row("judge_only", 0.4), row("ppi", 0.32, equivalent=180.4)])
    [found] = assisted_rows(table)
    assert found.cells == ("30% (20–40%)", "40% (30–50%)", "32% (22–42%)")
    assert (found.n_human, found.n_judge, found.saved) == (100, 1000, 80)


def test_disagreements_rank_items_by_the_share_of_people_differing_from_the_judge():
    labels = pd.DataFrame(
        [
            # item 1: both people differ from the judge; item 2: one of two; item 3: they agree.
            *[(1, "J", "judge", "", "bias", v, "Black") for v in ("yes", "yes", "no")],  # repeats: mode "yes"
            (1, "p1", "human", "Physician", "bias", "no", "Black"),
            (1, "p2", "human", "Physician", "bias", "no", "Black"),
            (2, "J", "judge", "", "bias", "no", "White"),
            (2, "p1", "human", "Physician", "bias", "no", "White"),
            (2, "p2", "human", "Physician", "bias", "yes", "White"),
            (3, "J", "judge", "", "bias", "no", "White"),
            (3, "p1", "human", "Physician", "bias", "no", "White"),
        ],
        columns=["item", "rater", "rater_kind", "pool", "field", "value", "race"],
    )
    found = disagreements(labels, factors=["race"])
    assert [(d.item, d.judge_value, d.people_majority, d.disagreeing, d.levels) for d in found] == [
        (1, "yes", "no", 1.0, "race=Black"),
        (2, "no", "no or yes", 0.5, "race=White"),
    ]
    assert found[0].people_values == "no ×2"
    assert len(disagreements(labels, limit=1)) == 1


def test_place_rows_state_the_judges_rank_among_people_and_consistency_rows_name_the_check():
    place = pd.DataFrame(
        [
            {"study": "S", "field": "bias", "judge": "J", "pool": "Physician", "metric": "percent_agreement",
             "n_people": 4, "n_items": 24, "judge_score": 0.9, "people_mean": 0.8, "people_min": 0.6,
             "people_max": 0.95, "rank": 2, "percentile": 62.5, "share_matched": 0.75},
            {"study": "S", "field": "bias", "judge": "J", "pool": "Physician", "metric": "cohen_kappa",
             "n_people": 4, "n_items": 24, "judge_score": 0.5, "people_mean": 0.4, "people_min": 0.1,
             "people_max": 0.9, "rank": 2, "percentile": 62.5, "share_matched": 0.75},
            {"study": "S", "field": "bias", "judge": "J", "pool": "Consumer", "metric": "percent_agreement",
             "n_people": 0, "n_items": 0, "judge_score": None, "people_mean": None, "people_min": None,
             "people_max": None, "rank": None, "percentile": None, "share_matched": None},
        ]
    )  # fmt: skip
    shown, missing = place_rows(place)
    assert (shown.judge_score, shown.people_mean, shown.people_range) == ("0.90", "0.80", "0.60–0.95")
    assert (shown.rank, shown.share_matched) == ("2 of 5", "75%")
    assert shown.sentence == (
        "J agrees with the majority of Physician raters 90% of the time; "
        "1 of 4 people agree more often with the majority of the others."
    )
    assert missing.rank == "—" and missing.sentence.startswith("Not estimable")

    consistency = pd.DataFrame(
        [
            {"study": "S", "field": "bias", "judge": "J", "check": "repeats", "n_items": 10, "share": 0.9,
             "mean_pairwise_agreement": 0.95, "first_shown_share": None},
            {"study": "S", "field": "pref", "judge": "J", "check": "display_order", "n_items": 8, "share": 0.5,
             "mean_pairwise_agreement": None, "first_shown_share": 0.7},
        ]
    )  # fmt: skip
    repeats, orders = consistency_rows(consistency)
    assert (repeats.check, repeats.share, repeats.detail) == ("Repeats agree", "90%", "mean pairwise agreement 0.95")
    assert (orders.check, orders.n_items, orders.share) == ("Verdict survives swapping the answers", 8, "50%")
    assert orders.detail == "70% of position verdicts name the answer shown first"
