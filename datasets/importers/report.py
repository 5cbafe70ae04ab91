from dataclasses import asdict, dataclass, field


@dataclass
class ImportReport:
    """What an import did; a re-import of the same file shows only `*_existing` counts."""

    rows: int = 0
    datasets_created: list[str] = field(default_factory=list)
    datasets_used: list[str] = field(default_factory=list)
    questions_created: int = 0
    questions_existing: int = 0
    pairs_created: int = 0
    pairs_existing: int = 0
    sources_created: list[str] = field(default_factory=list)
    answers_created: int = 0
    answers_existing: int = 0
    empty_answers: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def summary_lines(self) -> list[str]:
        lines = [f"Rows read: {self.rows}"]
        if self.datasets_created:
            lines.append("Datasets created: " + ", ".join(self.datasets_created))
        if self.datasets_used:
            lines.append("Datasets: " + ", ".join(self.datasets_used))
        if self.questions_created or self.questions_existing:
            lines.append(f"Questions: {self.questions_created} new, {self.questions_existing} already present")
        if self.pairs_created or self.pairs_existing:
            lines.append(f"Counterfactual pairs: {self.pairs_created} new, {self.pairs_existing} already present")
        if self.sources_created:
            lines.append("Answer sources created: " + ", ".join(self.sources_created))
        if self.answers_created or self.answers_existing:
            lines.append(f"Answers: {self.answers_created} new, {self.answers_existing} already present")
        if self.empty_answers:
            lines.append(f"Empty answers (kept): {self.empty_answers}")
        lines.extend(self.notes)
        return lines
