"""The pages, in menu order: ``VIEWS`` is used by the router, the AppTest suite, the e2e tests and the screenshot script."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

VIEWS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class View:
    key: str  # ViewState.page, also the URL path (the default page is served at "/")
    file: str  # relative to dashboard/
    title: str
    icon: str
    section: str
    default: bool = False

    @property
    def path(self) -> Path:
        return VIEWS_DIR.parent / self.file

    @property
    def url_path(self) -> str:
        return "" if self.default else self.key


VIEWS: tuple[View, ...] = (
    View("overview", "views/overview.py", "Overview", ":material/dashboard:", "Results", default=True),
    View("breakdown", "views/breakdown.py", "Breakdown", ":material/bar_chart:", "Results"),
    View("missed", "views/missed.py", "Missed queries", ":material/search_off:", "Results"),
    View("diagnosis", "views/diagnosis.py", "Diagnosis", ":material/medical_services:", "Results"),
    View("compare", "views/compare.py", "Compare runs", ":material/compare_arrows:", "Results"),
    View("power", "views/power.py", "Dataset power", ":material/query_stats:", "Results"),
    View("timeline", "views/timeline.py", "Timeline", ":material/timeline:", "History"),
    View("leaderboard", "views/leaderboard.py", "Leaderboard", ":material/leaderboard:", "History"),
    View("upload", "views/upload.py", "Upload", ":material/upload_file:", "Data"),
    View("judge", "views/judge.py", "Judge", ":material/gavel:", "Data"),
    View("workspace", "views/workspace.py", "Workspace", ":material/database:", "Data"),
    View("metrics", "views/metrics.py", "Metric definitions", ":material/functions:", "Reference"),
)
