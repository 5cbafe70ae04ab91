"""How far a study's answers are: how many belong to it (generated, imported, rated in items) and how many are
scored, per scorer its definition names (or by any scorer when it names none). For every study at once in two
aggregate queries, whatever the number of studies and answers (the studies list), or for one (its dashboard)."""

from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q

from scoring.models import Score

from .models import Study, StudyAnswer

VIA = StudyAnswer.Via


@dataclass(frozen=True)
class ScorerProgress:
    name: str
    version: int
    scored: int

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"


@dataclass
class AnswerProgress:
    linked: int = 0
    generated: int = 0
    imported: int = 0
    in_items: int = 0
    scored_any: int = 0  # answers with at least one score, by any scorer
    scorers: list[ScorerProgress] = field(default_factory=list)  # the definition's scorers, in its order

    @property
    def scored(self) -> int:
        """Answers scored as the study asks: by every scorer its definition names (the fewest of them), else by any."""
        return min((scorer.scored for scorer in self.scorers), default=self.scored_any)

    @property
    def percent(self) -> int:
        """Whole percent of the answers scored, rounded down: 100 only when none is missing."""
        return 100 * self.scored // self.linked if self.linked else 0


def definition_scorers(study: Study) -> list[tuple[str, int]]:
    """(name, version) of each scorer the study's definition names (`scorers: [{name, version}]`), in its order;
    entries of another shape are left out (the study file's checks report them)."""
    definition = study.definition if isinstance(study.definition, dict) else {}
    entries = definition.get("scorers")
    if not isinstance(entries, list):
        return []
    found = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and type(entry.get("version")) is int:
            found.append((entry["name"], entry["version"]))
    return list(dict.fromkeys(found))


def answer_progress(studies: list[Study]) -> dict[int, AnswerProgress]:
    """Per study id, its answers' progress: one query for the links (by way, scored or not), one for the scores by
    scorer and version."""
    ids = [study.pk for study in studies]
    scored = Exists(Score.objects.filter(answer=OuterRef("answer_id")))
    rows = (
        StudyAnswer.objects.filter(study_id__in=ids)
        .values("study_id")
        .annotate(
            linked=Count("id"),
            generated=Count("id", filter=Q(via=VIA.GENERATED)),
            imported=Count("id", filter=Q(via=VIA.IMPORTED)),
            in_items=Count("id", filter=Q(via=VIA.ITEM)),
            scored_any=Count("id", filter=Q(scored)),
        )
        .order_by()
    )
    progress = {study_id: AnswerProgress() for study_id in ids}
    for row in rows:
        study_id = row.pop("study_id")
        progress[study_id] = AnswerProgress(**row)
    wanted = {study.pk: definition_scorers(study) for study in studies}
    names = {name for pairs in wanted.values() for name, _ in pairs}
    counts: dict[tuple[int, str, int], int] = {}
    if names:
        scores = (
            Score.objects.filter(
                answer__study_links__study_id__in=[i for i, pairs in wanted.items() if pairs], scorer__in=names
            )  # fmt: skip
            .values_list("answer__study_links__study_id", "scorer", "version")
            .annotate(n=Count("id"))
            .order_by()
        )
        counts = {(study_id, scorer, version): n for study_id, scorer, version, n in scores}
    for study_id, pairs in wanted.items():
        progress[study_id].scorers = [ScorerProgress(name, version, counts.get((study_id, name, version), 0))
                                      for name, version in pairs]  # fmt: skip
    return progress
