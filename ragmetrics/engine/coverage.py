"""What aligning a run with a dataset found: the coverage report."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Coverage:
    """Counts, each with the ids behind it (all of them; shown a few at a time)."""

    queries_evaluated: int = 0
    missing_in_run: list[str] = field(default_factory=list)
    not_in_dataset: list[str] = field(default_factory=list)
    rows_not_in_dataset: int = 0
    no_judgments: list[str] = field(default_factory=list)
    no_relevant: list[str] = field(default_factory=list)
    matched_by_text: int = 0
    duplicates_dropped: int = 0
    duplicate_queries: list[str] = field(default_factory=list)
    chunks_merged: int = 0
    tied_pairs: int = 0
    tied_queries: list[str] = field(default_factory=list)
    empty_run: bool = False

    def notes(self, missing: str = "zero", *, relevance: bool = True, mode: str = "trec") -> list[str]:
        """What a user should know about this alignment, one short phrase per issue found; ``missing`` is the
        convention the judged queries absent from the run were evaluated under (``zero`` or ``skip``);
        ``relevance`` False: the metrics read no relevance label (the evidence metrics read spans), so a query
        without a relevant document is not noted; ``mode`` ``llamaindex``: a query with nothing retrieved or nothing
        relevant has no value there (LlamaIndex refuses it), whatever ``missing`` says."""
        found = []
        skipped = "left out: LlamaIndex scores no empty list" if mode == "llamaindex" else None
        if self.missing_in_run:
            treated = skipped or ("scored 0" if missing == "zero" else "left out")
            found.append(f"{len(self.missing_in_run)} judged queries missing from the run ({treated})")
        if self.not_in_dataset:
            found.append(f"{len(self.not_in_dataset)} run queries not in the dataset (dropped)")
        if self.duplicates_dropped:
            found.append(f"{self.duplicates_dropped} duplicate rows dropped")
        if self.no_relevant and relevance:
            treated = "left out: LlamaIndex scores none" if skipped else "scored 0"
            found.append(f"{len(self.no_relevant)} queries without a relevant document ({treated})")
        if self.no_judgments:
            found.append(
                f"{len(self.no_judgments)} dataset queries without judgments (not evaluated: left out of every mean, "
                "answer_in@k and keyword_recall@k too)"
            )
        return found

    def summary(self) -> dict[str, int]:
        """Counts only, for tables and warnings."""
        return {
            "queries_evaluated": self.queries_evaluated,
            "missing_in_run": len(self.missing_in_run),
            "not_in_dataset": len(self.not_in_dataset),
            "no_judgments": len(self.no_judgments),
            "no_relevant": len(self.no_relevant),
            "matched_by_text": self.matched_by_text,
            "duplicates_dropped": self.duplicates_dropped,
            "chunks_merged": self.chunks_merged,
            "tied_pairs": self.tied_pairs,
            "tied_queries": len(self.tied_queries),
        }
