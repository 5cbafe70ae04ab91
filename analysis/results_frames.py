"""What today's statistics read, made from the results table alone (analysis/DESIGN.md, "The results table").

- `release_frames(results)`: the human rows as the three release-format frames `tables.build_report` reads (the
  columns it reads, in the ratings export's row order and values), so EquityMedQA's four tables come out of the
  results table with the same numbers.
- `plan_outcomes(results, plan)`: the scorer rows as the frame `plan_loading.load_outcomes` gives an analysis plan.

Both take the table `results.results_table` builds (one study's, or several concatenated) or `pandas.read_csv` of
`results.csv`. Never the database.
"""

import json

import numpy as np
import pandas as pd

from studies import release

from .choice_accuracy import OUTCOMES
from .outcomes import flags
from .plans import AnalysisPlan

HUMAN, JUDGE, SCORER = "human", "judge", "scorer"  # the `kind` of a row: who made the observation
KEY = ["study", "item", "who"]  # one current rating of an item per rater
NUMERIC = ("measured", "missing")  # a numeric scorer's outcomes when it read no number


def _texts(series: pd.Series) -> np.ndarray:
    return series.astype(object).where(series.notna(), "").astype(str).to_numpy(dtype=object)


def _export_names(series: pd.Series) -> np.ndarray:
    return np.array([name.replace(" ", "-") for name in _texts(series)], dtype=object)  # AnswerSource.export_name


class _Ratings:
    """The human rows of one item shape, one entry per rating in the export's order (study, item, rater)."""

    def __init__(self, rows: pd.DataFrame):
        self.rows = rows
        number = rows.groupby(KEY, sort=False, observed=True).ngroup().to_numpy()
        self.number = number
        self.first = rows.iloc[np.unique(number, return_index=True)[1]].reset_index(drop=True)
        self.count = len(self.first)

    def column(self, name: str) -> np.ndarray:
        return _texts(self.first[name])

    def field(self, field: str) -> np.ndarray:
        """Each rating's stored value of a single-valued field (None where it has none)."""
        found = np.full(self.count, None, dtype=object)
        mask = (self.rows["field"].astype(str) == field).to_numpy()
        values = self.rows["value"].to_numpy(dtype=object)[mask]
        found[self.number[mask]] = [None if pd.isna(value) else value for value in values]
        return found

    def chosen(self, field: str, option: str) -> np.ndarray:
        """Whether each rating's list `field` holds `option`."""
        mask = ((self.rows["field"].astype(str) == field) & (self.rows["value"].astype(str) == option)).to_numpy()
        marked = np.zeros(self.count, dtype=bool)
        marked[self.number[mask]] = True
        return marked

    def base(self) -> dict[str, np.ndarray]:
        return {
            "dataset": self.column("dataset"),
            "rater_type": self.column("pool"),
            "rater_id": self.column("who"),
        }


def _labels(values: np.ndarray, mapping: dict) -> np.ndarray:
    return np.array([mapping.get(value) for value in values], dtype=object)


def _rater(ratings: _Ratings) -> dict[str, np.ndarray]:
    return {column: ratings.column(column) for column in ("rater_age_group", "rater_gender", "rater_race_ethnicity")}


def _independent(ratings: _Ratings) -> pd.DataFrame:
    kind = release.INDEPENDENT
    frame = {
        "question_id": ratings.column("question"),
        **ratings.base(),
        "bias_presence": _labels(ratings.field("bias_presence"), release.BIAS_PRESENCE),
        **{column: ratings.chosen("dimensions", key) for key, column in release.DIMENSION_COLUMNS[kind].items()},
        "answer_source": _export_names(ratings.first["source"]),
        **_rater(ratings),
    }
    return pd.DataFrame(frame)


def _pairwise(ratings: _Ratings) -> pd.DataFrame:
    """As `studies.exports.pairwise_rows`: the stored preference names a position shown; `swapped` says which
    answer was shown first. A tie marks neither source and no kind of bias."""
    first, second = _export_names(ratings.first["source"]), _export_names(ratings.first["source_2"])
    swapped = flags(ratings.first["swapped"]) == 1.0
    shown_1, shown_2 = np.where(swapped, second, first), np.where(swapped, first, second)
    preference = ratings.field("preference")
    chosen = (preference == "answer_1") | (preference == "answer_2")
    more = np.where(preference == "answer_1", shown_1, shown_2)
    tie = preference == "tie"
    frame: dict[str, np.ndarray] = {"question_id": ratings.column("question"), **ratings.base()}
    for name in sorted(set(first) | set(second)):
        in_item = (first == name) | (second == name)
        value = np.where(chosen, more == name, np.where(tie, False, None))
        frame[release.source_column(name)] = np.where(in_item, value, None).astype(object)
    for key, column in release.DIMENSION_COLUMNS[release.PAIRWISE].items():
        frame[column] = chosen & ratings.chosen("dimensions", key)
    frame.update({"answer_1_source": shown_1, "answer_2_source": shown_2})
    return pd.DataFrame(frame)


def _counterfactual(ratings: _Ratings) -> pd.DataFrame:
    kind = release.COUNTERFACTUAL
    frame = {
        "question_1_id": ratings.column("question"),
        "question_2_id": ratings.column("question_2"),
        **ratings.base(),
        "bias_presence": _labels(ratings.field("bias_presence"), release.COUNTERFACTUAL_BIAS),
        **{column: ratings.chosen("dimensions", key) for key, column in release.DIMENSION_COLUMNS[kind].items()},
        "ideal_answers_differ": _labels(ratings.field("ideal_answers_differ"), release.IDEAL_ANSWERS_DIFFER),
        "answers_differ_how": _labels(ratings.field("answers_differ_how"), release.ANSWERS_DIFFER_HOW),
        "answer_1_source": _export_names(ratings.first["source"]),
        "answer_2_source": _export_names(ratings.first["source_2"]),
    }
    return pd.DataFrame(frame)


class SourceNameClash(ValueError):
    """Two answer sources would share a release column."""


def _check_export_names(human: pd.DataFrame) -> None:
    """Two sources whose export names are one (`Src X`, `Src-X`) would share a release column: refused, as the
    ratings export refuses them (`studies.exports.pairwise_sources`)."""
    names: dict[str, str] = {}
    for name in {*_texts(human["source"]), *_texts(human["source_2"])} - {""}:
        other = names.setdefault(name.replace(" ", "-"), name)
        if other != name:
            raise SourceNameClash(f"The answer sources {min(other, name)!r} and {max(other, name)!r} share the release "
                             f"column name {name.replace(' ', '-')!r}: rename one of them.")  # fmt: skip


def _study_rank(studies: pd.Series, study_order: list[str] | None) -> np.ndarray:
    """Each row's study's place: in `study_order` if given (the database's order of names), else in code-point
    order of the names."""
    names = _texts(studies)
    order = list(study_order) if study_order is not None else []
    known = set(order)
    order += sorted(set(names) - known)
    rank = {name: place for place, name in enumerate(order)}
    return np.array([rank[name] for name in names], dtype=np.int64)


def release_frames(results: pd.DataFrame, *, study_order: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The human rows as the frames keyed `independent`, `pairwise`, `counterfactual` (see the module docstring).

    The kind of a rating is the shape of its item: two questions (`question_2`) a counterfactual pair, two answers
    of one question (`answer_2`) a pairwise comparison, one answer an independent rating. Rows are in the ratings
    export's order: by study (`study_order`, else by name), item, and the raters of an item in the table's order
    (`results_table` puts them in the database's order, as the export does: analysis/DESIGN.md, "Row order and
    collation"), so that the same bootstrap draws follow whatever the database's collation.
    """
    human = results[results["kind"].astype(str) == HUMAN]
    _check_export_names(human)
    keys = pd.DataFrame({"study": _study_rank(human["study"], study_order),
                         "item": human["item"].astype(float).to_numpy()})  # fmt: skip
    human = human.iloc[keys.sort_values(["study", "item"], kind="stable").index].reset_index(drop=True)
    two_questions = _texts(human["question_2"]) != ""
    two_answers = human["answer_2"].notna().to_numpy() & ~two_questions
    shapes = {
        release.INDEPENDENT: (~two_questions & ~two_answers, _independent),
        release.PAIRWISE: (two_answers, _pairwise),
        release.COUNTERFACTUAL: (two_questions, _counterfactual),
    }
    return {kind: build(_Ratings(human[mask].reset_index(drop=True))) for kind, (mask, build) in shapes.items()}


# --- analysis plans -------------------------------------------------------------------------------------------


def _scorer_rows(results: pd.DataFrame, plan: AnalysisPlan, names: tuple[str, ...]) -> pd.DataFrame:
    """The scorer rows of the plan's scorers on the answers it may read, with `rank` (preference) and `version`."""
    rows = results[(results["kind"].astype(str) == SCORER) & results["field"].astype(str).isin(names)]
    if plan.multiple_choice:
        rows = rows[flags(rows["multiple_choice"]) == 1.0]
    if plan.requires_levels:
        keys = {text: set(json.loads(text)) for text in pd.unique(_texts(rows["levels"])) if text}
        rows = rows[[set(plan.requires_levels) <= keys.get(text, set()) for text in _texts(rows["levels"])]]
    preference = {name: rank for rank, name in enumerate(names)}
    return pd.DataFrame(
        {
            "answer_id": rows["answer"].astype("int64").to_numpy(),
            "rank": np.array([preference[name] for name in _texts(rows["field"])], dtype=np.int16),
            "version": np.array([int(who.rsplit(" v", 1)[1]) for who in _texts(rows["who"])], dtype=np.int32),
            "value": rows["value"].to_numpy(dtype=object),
        }
    )


def _first_preferred(frame: pd.DataFrame) -> pd.DataFrame:
    """Per answer, the row of the most preferred scorer (lowest `rank`) at its highest `version`."""
    frame = frame.sort_values(["answer_id", "rank", "version"], ascending=[True, True, False], kind="stable")
    return frame.drop_duplicates("answer_id", keep="first")


def _levels(results: pd.DataFrame, plan: AnalysisPlan, factors: list[str]) -> pd.DataFrame:
    """Per scored answer, `answer_id`, `source` and each factor's level: the question's, else the answer's
    condition's, else the factor's reference level (as `plan_loading` reads them)."""
    rows = results[results["kind"].astype(str) == SCORER].drop_duplicates("answer")
    parsed: dict[str, dict] = {}

    def parse(text: str) -> dict:
        if text not in parsed:
            value = json.loads(text) if text else {}
            parsed[text] = value if isinstance(value, dict) else {}
        return parsed[text]

    levels = [parse(text) for text in _texts(rows["levels"])]
    conditions = [parse(text) for text in _texts(rows["condition"])]
    frame = pd.DataFrame({"answer_id": rows["answer"].astype("int64").to_numpy(), "source": _texts(rows["source"])})
    for factor in factors:
        default = plan.reference_levels.get(factor, "none")
        found = []
        for level, condition in zip(levels, conditions, strict=True):
            value = level.get(factor)
            value = condition.get(factor) if value is None else value
            found.append(default if value is None else str(value))
        frame[factor] = found
    return frame


def plan_outcomes(results: pd.DataFrame, plan: AnalysisPlan) -> pd.DataFrame:
    """The frame `plan_loading.load_outcomes(plan)` gives, from the scorer rows: one row per scored answer (a
    numeric plan: per answer and outcome) with the plan's factors and `outcome` (and `value`), ordered by answer."""
    factors = [factor for factor in plan.factors if factor != "source"]
    answers = _levels(results, plan, factors)
    if plan.outcomes is not None:
        parts = []
        for outcome, names in plan.outcomes.items():
            rows = _scorer_rows(results, plan, names)
            number = pd.to_numeric(pd.Series(rows["value"], dtype=object), errors="coerce").to_numpy(dtype=float)
            readable = ~np.isnan(number) | np.isin(_texts(rows["value"]), NUMERIC)
            rows = rows[readable].assign(value=number[readable])
            rows["rank"] = rows["rank"] + np.where(np.isnan(rows["value"]), len(names), 0).astype(np.int16)
            parts.append(_first_preferred(rows)[["answer_id", "value"]].assign(outcome=outcome))
        found = pd.concat(parts, ignore_index=True)
        found["outcome"] = pd.Categorical(found["outcome"], categories=list(plan.outcomes))
        numbers = answers.merge(found, on="answer_id", how="inner", sort=True)
        return numbers[[*plan.factors, "outcome", "value"]].reset_index(drop=True)
    rows = _scorer_rows(results, plan, plan.scorers)
    rows = rows[np.isin(_texts(rows["value"]), OUTCOMES)]
    scores = _first_preferred(rows)[["answer_id", "value"]].rename(columns={"value": "outcome"})
    outcomes = answers.merge(scores, on="answer_id", how="inner", sort=True)
    return outcomes[[*plan.factors, "outcome"]].reset_index(drop=True)
