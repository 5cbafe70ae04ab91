"""ContextSRH's statistics (Levy et al., "Evaluating Biases in Context-Dependent Sexual and Reproductive Health
Questions"; issue 21): how close each group's context answer stays to the answer to the original question, and
for which groups people find the original answer correct.

Input: the results table (`analysis.results`; or `pandas.read_csv` of its `results.csv`).
- Similarities: rows of kind `scorer` of one scorer (`minilm_cosine`: the cosine of a context answer's and its
  source's original answer's sentence embeddings), one per context answer, whose question's `levels` have ONE key
  (the attribute, e.g. `age`) and value (the group, e.g. `10`); `base_question` is the original question. A
  non-numeric value (`missing`) is a similarity of NaN: its question is an incomplete block. Several versions of
  the scorer: each answer's highest.
- People's labels: rows of kind `human` about answers to original questions, fields `relevant` (the gate) and
  `correct_for` (one row per group chosen, or the exclusive `not_applicable`), with the rating's
  `attention_check_passed`.

Statistics (analysis/DESIGN.md, "ContextSRH statistics"):
- `similarity_table` -> `similarity.csv`: per (source, attribute, group), over the attribute's questions,
  the mean similarity (the paper's eq. 1), % Win (eq. 2: the share of the attribute's questions where this
  group's similarity equals the question's maximum; ties count for every tied group, so a row's % Win can sum
  past 100), % Human (Table 1: the share of the questions with a people's verdict whose original answer people
  marked correct for this group) and % Win marked correct (among the questions this group wins, the share
  people marked correct for it).
- `group_tests` -> `group_tests.csv`: per (source, attribute), questions as blocks, Friedman's test across the
  groups (Friedman 1937; `scipy.stats.friedmanchisquare`) or, for an attribute of two groups, Wilcoxon's
  signed-rank test (Wilcoxon 1945; `scipy.stats.wilcoxon`, two-sided). A question missing a group is dropped.
- `agreement_table` -> `human_agreement.csv`: per (source, attribute), the paper's binary split (appendix B:
  "For n questions with m groups, we calculate Cohen's Kappa for n * m questions"): Cohen's kappa (Cohen 1960)
  when two raters, Krippendorff's alpha (nominal; Krippendorff 2011, the `krippendorff` package) for any number.

Pure: numpy, pandas, scipy, krippendorff; no Django.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats

from analysis.reliability import cohen_kappa

SCORER_KIND, HUMAN_KIND = "scorer", "human"  # the results table's `kind`s read here (analysis/results_frames.py)
DEFAULT_SCORER = "minilm_cosine"
RELEVANT_FIELD, CORRECT_FIELD = "relevant", "correct_for"
NOT_APPLICABLE = "not_applicable"
FAILED_GATE = "failed_gate"
FRIEDMAN, WILCOXON, NO_TEST = "friedman", "wilcoxon", "none"
MIN_BLOCKS = 2  # fewer complete blocks: no test (NaN statistic, the row still written)

FRAME_COLUMNS = ["source", "attribute", "group", "question", "similarity"]
MARK_COLUMNS = ["source", "question", "who", "attribute", "group", "marked"]
DROP_COLUMNS = ["source", "question", "who", "attribute", "reason"]
VERDICT_COLUMNS = ["source", "question", "attribute", "group", "votes", "raters", "correct"]
SIMILARITY_COLUMNS = [
    *["study", "source", "attribute", "group", "n_questions", "avg_similarity", "pct_win", "pct_human"],
    "pct_win_marked_correct",
]
GROUP_TEST_COLUMNS = ["study", "source", "attribute", "test", "statistic", "p_value", "n_blocks", "n_dropped"]
AGREEMENT_COLUMNS = [
    *["study", "source", "attribute", "n_questions", "n_units", "n_raters", "cohen_kappa", "krippendorff_alpha"],
    *["n_not_applicable", "n_failed_gate"],
]
TABLE_FILES = {"similarity": "similarity.csv", "group_tests": "group_tests.csv", "agreement": "human_agreement.csv"}


# --- reading the results table ------------------------------------------------------------------------------------


def _texts(series: pd.Series) -> pd.Series:
    """Text cells as str ("" where empty); a whole number read back from a CSV as a float (10.0) as its digits."""

    def text(value: object) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    values = series.astype(object)
    uniques = pd.unique(values)
    texts = values.map({value: text(value) for value in uniques if not _is_missing(value)}).fillna("")
    return texts.astype(str)  # also when empty: merging on an empty float column fails


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _single_level(text: str) -> tuple[str, str] | None:
    """(attribute, group) of levels with exactly one key, else None."""
    parsed = json.loads(text) if text else {}
    if not isinstance(parsed, dict) or len(parsed) != 1:
        return None
    ((attribute, group),) = parsed.items()
    return str(attribute), "" if group is None else str(group)


def _version(who: str) -> int:
    """The version of a score row's `who` (`minilm_cosine v2` -> 2)."""
    _, _, number = who.rpartition(" v")
    return int(number) if number.isdigit() else 0


def similarity_frame(results: pd.DataFrame, *, scorer: str = DEFAULT_SCORER) -> pd.DataFrame:
    """One row per (source, attribute, group, question): the scorer's similarity of the context answer (NaN where
    it measured none), `question` being the original (base) question. Rows whose levels do not have exactly one
    key (the original answers: `{}`) are not context answers and are left out. Each answer counts with its
    scorer's highest version; several answers of one source to one context question are averaged."""
    rows = results[(_texts(results["kind"]) == SCORER_KIND) & (_texts(results["field"]) == scorer)]
    if rows.empty:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in FRAME_COLUMNS}).astype(
            {"similarity": np.float64}
        )
    levels = _texts(rows["levels"])
    parsed = {text: _single_level(text) for text in levels.unique()}
    frame = pd.DataFrame(
        {
            "source": _texts(rows["source"]).to_numpy(),
            "attribute": levels.map({text: level[0] for text, level in parsed.items() if level}).to_numpy(),
            "group": levels.map({text: level[1] for text, level in parsed.items() if level}).to_numpy(),
            "question": _texts(rows["base_question"]).to_numpy(),
            "context_question": _texts(rows["question"]).to_numpy(),
            "answer": _texts(rows["answer"]).to_numpy() if "answer" in rows else "",
            "version": _texts(rows["who"]).map(_version).to_numpy(),
            "similarity": pd.to_numeric(rows["value"], errors="coerce").to_numpy(dtype=np.float64),
        }
    )
    frame = frame[frame["attribute"].notna() & (frame["question"] != "")]
    newest = frame.groupby(["source", "context_question", "answer"], sort=False)["version"].transform("max")
    frame = frame[frame["version"] == newest]
    keys = ["source", "attribute", "group", "question"]
    return frame.groupby(keys, sort=True, dropna=False)["similarity"].mean().reset_index()[FRAME_COLUMNS]


def group_order(groups: Iterable[str]) -> list[str]:
    """The paper's order of an attribute's groups: numeric ascending when every group is a number (age), else
    alphabetical (location, sex)."""
    unique = sorted(set(groups))
    try:
        return sorted(unique, key=float)
    except ValueError:
        return unique


def _ordered(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows sorted by source, attribute, then each attribute's groups in `group_order`."""
    if table.empty:
        return table.reset_index(drop=True)
    rank = {
        (attribute, group): position
        for attribute, groups in table.groupby("attribute", sort=False)["group"]
        for position, group in enumerate(group_order(groups.astype(str)))
    }
    ranked = table.assign(_rank=[rank[key] for key in zip(table["attribute"], table["group"], strict=True)])
    return ranked.sort_values([*keys, "_rank"], kind="stable").drop(columns="_rank").reset_index(drop=True)


# --- % Win --------------------------------------------------------------------------------------------------------


def wins(frame: pd.DataFrame) -> pd.DataFrame:
    """The similarity frame's measured rows with `win`: the similarity equals the maximum of its (source,
    attribute, question) over the groups (exact equality of the stored floats: a tie wins for every tied group)."""
    measured = frame[frame["similarity"].notna()]
    top = measured.groupby(["source", "attribute", "question"], sort=False)["similarity"].transform("max")
    return measured.assign(win=(measured["similarity"] == top).to_numpy())


# --- people's labels ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeopleLabels:
    """People's counted labels and what was dropped.

    `marks` (`MARK_COLUMNS`): one row per counted rating (source, question, rater) and group of each attribute of
    the question, `marked` 1 when the rater chose the group. `dropped` (`DROP_COLUMNS`): one row per dropped
    rating and attribute of its question, `reason` `failed_gate` (its attention check failed) or `not_applicable`.
    """

    marks: pd.DataFrame
    dropped: pd.DataFrame


def _failed(values: pd.Series) -> pd.Series:
    """A rating's stored `attention_check_passed` is False (a bool, or its text read back from a CSV)."""
    return values.astype(object).map(lambda value: value is False or str(value).strip().lower() == "false")


def question_groups(frame: pd.DataFrame) -> pd.DataFrame:
    """(question, attribute, group): the groups of each original question's attributes, from every source's
    context answers (a question depending on two attributes has both sets)."""
    return frame[["question", "attribute", "group"]].drop_duplicates().reset_index(drop=True)


def people_labels(results: pd.DataFrame, groups: pd.DataFrame) -> PeopleLabels:
    """People's labels of the original answers (`groups`: `question_groups`). A rating is a rater's (source,
    question): its `correct_for` rows (several items of one answer count as one rating, their marks united).
    Dropped, in this order: a failed attention check (any of its rows' `attention_check_passed` False), then
    `not_applicable` chosen. A question none of whose groups is known (no context answer) is left out."""
    human = results[_texts(results["kind"]) == HUMAN_KIND]
    human = human[_texts(human["field"]).isin([RELEVANT_FIELD, CORRECT_FIELD])]
    if "attention_check_passed" in human:
        passed = human["attention_check_passed"]
    else:
        passed = pd.Series(None, index=human.index, dtype=object)
    rows = pd.DataFrame(
        {
            "source": _texts(human["source"]).to_numpy(),
            "question": _texts(human["question"]).to_numpy(),
            "who": _texts(human["who"]).to_numpy(),
            "field": _texts(human["field"]).to_numpy(),
            "value": _texts(human["value"]).to_numpy(),
            "failed": _failed(passed).to_numpy(dtype=bool),
        }
    )
    rows = rows[rows["question"].isin(set(groups["question"]))]
    key = ["source", "question", "who"]
    chosen = rows[rows["field"] == CORRECT_FIELD]
    ratings = rows.groupby(key, sort=True)["failed"].any().rename("failed").reset_index()
    not_applicable = chosen.loc[chosen["value"] == NOT_APPLICABLE, key].drop_duplicates()
    ratings = ratings.merge(not_applicable.assign(na=True), on=key, how="left")
    ratings["na"] = ratings["na"].astype(object).where(ratings["na"].notna(), False).astype(bool)
    ratings["reason"] = np.where(ratings["failed"], FAILED_GATE, np.where(ratings["na"], NOT_APPLICABLE, ""))
    attributes = groups[["question", "attribute"]].drop_duplicates()
    dropped = ratings[ratings["reason"] != ""].merge(attributes, on="question")[DROP_COLUMNS]
    counted = ratings.loc[ratings["reason"] == "", key].merge(groups, on="question")
    picked = chosen.loc[chosen["value"] != "", [*key, "value"]].drop_duplicates().rename(columns={"value": "group"})
    marks = counted.merge(picked.assign(marked=1), on=[*key, "group"], how="left")
    marks["marked"] = marks["marked"].fillna(0).astype(np.int64)
    return PeopleLabels(
        marks=marks[MARK_COLUMNS].sort_values(MARK_COLUMNS[:5]).reset_index(drop=True),
        dropped=dropped.sort_values(DROP_COLUMNS).reset_index(drop=True),
    )


def verdicts(marks: pd.DataFrame, *, k: int | None = None) -> pd.DataFrame:
    """Per (source, question, attribute, group) with a counted rating: `votes` (raters who chose the group),
    `raters` (counted ratings of the question) and `correct`: votes >= k, or with k None a majority (votes > raters
    / 2; with two raters, both: the paper's "groups selected by both annotators")."""
    keys = ["source", "question", "attribute", "group"]
    grouped = marks.groupby(keys, sort=True)["marked"]
    table = pd.DataFrame({"votes": grouped.sum(), "raters": grouped.size()}).reset_index()
    correct = table["votes"] >= k if k is not None else table["votes"] * 2 > table["raters"]
    return table.assign(correct=correct.astype(bool))[VERDICT_COLUMNS]


# --- the tables ---------------------------------------------------------------------------------------------------


def _percent(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return (100.0 * numerator / denominator.where(denominator > 0)).astype(np.float64)


def similarity_table(frame: pd.DataFrame, judged: pd.DataFrame, *, study: str) -> pd.DataFrame:
    """The `similarity.csv` rows (`SIMILARITY_COLUMNS`) from the similarity frame and people's `verdicts`.

    n_questions: the attribute's questions with a similarity for the group; avg_similarity their mean. pct_win:
    100 x (questions the group wins) / (the attribute's questions with at least one group's similarity): a
    question counts in the denominator of every group of its attribute, as the paper's n_a. pct_human: 100 x
    (questions people marked correct for the group) / (the attribute's questions with a people's verdict).
    pct_win_marked_correct: 100 x (questions the group wins and people marked correct for it) / (questions it
    wins that have a verdict). NaN where a denominator is 0 (no people's labels: both human columns)."""
    keys = ["source", "attribute", "group"]
    won = wins(frame)
    per_group = won.groupby(keys, sort=False).agg(
        n_questions=("similarity", "size"), avg_similarity=("similarity", "mean"), n_wins=("win", "sum")
    )
    questions = won.groupby(["source", "attribute"], sort=False)["question"].nunique().rename("n_attribute")
    table = per_group.reset_index().merge(questions.reset_index(), on=["source", "attribute"], how="left")
    table["pct_win"] = _percent(table["n_wins"], table["n_attribute"])
    judged = judged.astype({column: str for column in [*keys, "question"]})  # empty: no float keys to merge on
    rated = judged.merge(won[[*keys, "question", "win"]], on=[*keys, "question"], how="left")
    rated["win"] = rated["win"].astype(object).where(rated["win"].notna(), False).astype(bool)
    rated["won_correct"] = rated["win"] & rated["correct"]
    judged_questions = rated.groupby(["source", "attribute"], sort=False)["question"].nunique().rename("n_judged")
    human = rated.groupby(keys, sort=False).agg(
        n_correct=("correct", "sum"),
        n_won_judged=("win", "sum"),
        n_won_correct=("won_correct", "sum"),
    )
    table = table.merge(human.reset_index(), on=keys, how="left").merge(
        judged_questions.reset_index(), on=["source", "attribute"], how="left"
    )
    table["pct_human"] = _percent(table["n_correct"], table["n_judged"].fillna(0))
    table["pct_win_marked_correct"] = _percent(table["n_won_correct"], table["n_won_judged"].fillna(0))
    table.insert(0, "study", study)
    table = table.astype({"n_questions": np.int64, "avg_similarity": np.float64})
    return _ordered(table[SIMILARITY_COLUMNS], ["source", "attribute"])


def _test(blocks: np.ndarray) -> tuple[str, float, float]:
    """(test, statistic, p) over complete blocks (rows) x groups (columns); NaN when there are too few blocks or
    scipy cannot compute it (e.g. every difference zero)."""
    n_groups = blocks.shape[1]
    name = WILCOXON if n_groups == 2 else FRIEDMAN if n_groups > 2 else NO_TEST
    if name == NO_TEST or blocks.shape[0] < MIN_BLOCKS:
        return name, math.nan, math.nan
    try:
        paired = name == WILCOXON
        result = stats.wilcoxon(blocks[:, 0], blocks[:, 1]) if paired else stats.friedmanchisquare(*blocks.T)
    except ValueError:
        return name, math.nan, math.nan
    return name, float(result.statistic), float(result.pvalue)


def group_tests(frame: pd.DataFrame, *, study: str) -> pd.DataFrame:
    """The `group_tests.csv` rows (`GROUP_TEST_COLUMNS`): per (source, attribute), Friedman across the groups
    (Wilcoxon's signed-rank test of the first group against the second when the attribute has two), the
    attribute's questions as blocks. The groups are the attribute's over every source; a question of the source
    lacking any group's similarity is dropped and counted in n_dropped."""
    groups = {str(name): group_order(rows.astype(str)) for name, rows in frame.groupby("attribute")["group"]}
    rows: list[dict[str, object]] = []
    for (source, attribute), part in frame.groupby(["source", "attribute"], sort=True):
        wide = part.pivot_table(index="question", columns="group", values="similarity", aggfunc="first", dropna=False)
        wide = wide.reindex(columns=groups[str(attribute)])
        complete = wide.dropna()
        name, statistic, p_value = _test(complete.to_numpy(dtype=np.float64))
        rows.append(dict(study=study, source=source, attribute=attribute, test=name, statistic=statistic,
                         p_value=p_value, n_blocks=len(complete), n_dropped=len(wide) - len(complete)))  # fmt: skip
    return pd.DataFrame(rows, columns=GROUP_TEST_COLUMNS)


def _alpha(matrix: np.ndarray) -> float:
    """Krippendorff's nominal alpha of a units x raters matrix (NaN: not rated); NaN where undefined."""
    pairable = (~np.isnan(matrix)).sum(axis=1) >= 2
    values = matrix[pairable]
    if not pairable.any() or np.unique(values[~np.isnan(values)]).size < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="nominal"))


def agreement_table(labels: PeopleLabels, *, study: str) -> pd.DataFrame:
    """The `human_agreement.csv` rows (`AGREEMENT_COLUMNS`): per (source, attribute), the counted ratings' binary
    labels of every (question, group) unit (appendix B's n x m split). cohen_kappa: when exactly two raters rated
    the attribute's questions, over the units both labelled; krippendorff_alpha: any number of raters, the units
    with two or more labels. n_questions, n_units, n_raters: what the counted ratings cover; n_not_applicable,
    n_failed_gate: the ratings dropped (a rating of a question with two attributes counts in both)."""
    marks, dropped = labels.marks, labels.dropped
    keys = ["source", "attribute"]
    cells = sorted(set(map(tuple, marks[keys].to_numpy())) | set(map(tuple, dropped[keys].to_numpy())))
    rows: list[dict[str, object]] = []
    for source, attribute in cells:
        part = marks[(marks["source"] == source) & (marks["attribute"] == attribute)]
        off = dropped[(dropped["source"] == source) & (dropped["attribute"] == attribute)]
        matrix = part.pivot_table(index=["question", "group"], columns="who", values="marked", aggfunc="first")
        values = matrix.to_numpy(dtype=np.float64)
        kappa = cohen_kappa(values[:, 0], values[:, 1]) if values.shape[1] == 2 else None
        rows.append(dict(study=study, source=source, attribute=attribute, n_questions=part["question"].nunique(),
                         n_units=len(matrix), n_raters=values.shape[1],
                         cohen_kappa=math.nan if kappa is None else kappa,
                         krippendorff_alpha=_alpha(values) if len(values) else math.nan,
                         n_not_applicable=int((off["reason"] == NOT_APPLICABLE).sum()),
                         n_failed_gate=int((off["reason"] == FAILED_GATE).sum())))  # fmt: skip
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


# --- every table at once ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextSRHReport:
    """A study's ContextSRH tables and what they are made from (`frame`: the similarity frame; `labels`,
    `verdicts`: people's counted labels and the k-vote verdicts)."""

    frame: pd.DataFrame
    labels: PeopleLabels
    verdicts: pd.DataFrame
    similarity: pd.DataFrame
    group_tests: pd.DataFrame
    agreement: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables `analyze --study` writes, by file name (`TABLE_FILES`)."""
        return {name: getattr(self, attribute) for attribute, name in TABLE_FILES.items()}


def contextsrh_report(
    results: pd.DataFrame, *, study: str, scorer: str = DEFAULT_SCORER, k: int | None = None
) -> ContextSRHReport:
    """Every ContextSRH table from a study's results table (`k`: votes for a group to count as correct; None: a
    majority of the question's counted raters)."""
    if k is not None and k < 1:
        raise ValueError(f"k must be a positive number of votes, not {k}")
    frame = similarity_frame(results, scorer=scorer)
    labels = people_labels(results, question_groups(frame))
    judged = verdicts(labels.marks, k=k)
    return ContextSRHReport(
        frame=frame,
        labels=labels,
        verdicts=judged,
        similarity=similarity_table(frame, judged, study=study),
        group_tests=group_tests(frame, study=study),
        agreement=agreement_table(labels, study=study),
    )


def contextsrh_tables(
    results: pd.DataFrame, *, study: str, scorer: str = DEFAULT_SCORER, k: int | None = None
) -> dict[str, pd.DataFrame]:
    """The three tables by file name: `similarity.csv`, `group_tests.csv`, `human_agreement.csv`."""
    return contextsrh_report(results, study=study, scorer=scorer, k=k).tables()


def has_similarities(results: pd.DataFrame, *, scorer: str = DEFAULT_SCORER) -> bool:
    """Whether the results hold a context answer's score of this scorer (measured or not)."""
    return not similarity_frame(results, scorer=scorer).empty
