"""The pages, in menu order: ``VIEWS`` is used by the router, the AppTest suite, the e2e tests and the screenshot script.

Every widget of a page is part of its view and travels in the share link (``dashboard.core.share``), except the
widgets a page declares in ``unlinked``: key prefixes of the inputs of an action (an upload, a fusion to add, a
rename) and of folded sections a link opens folded, each with the reason. ``tests/dashboard/test_share_roundtrip.py`` walks every widget of every page and
fails on one that neither round-trips through the URL nor is declared here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
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
    unlinked: Mapping[str, str] = field(default_factory=dict)  # widget key prefix -> why it is not in the link

    @property
    def path(self) -> Path:
        return VIEWS_DIR.parent / self.file

    @property
    def url_path(self) -> str:
        return "" if self.default else self.key


VIEWS: tuple[View, ...] = (
    View(
        "overview",
        "views/overview.py",
        "Overview",
        ":material/dashboard:",
        "Results",
        default=True,
        unlinked={
            "overview.ci.open": "the means' intervals, folded: a link opens them folded, or open when it shows the "
            "bounds from the unjudged documents",
            "overview.targets.edit": "the targets' editor, folded: the targets it edits are in the link",
        },
    ),
    View("breakdown", "views/breakdown.py", "Breakdown", ":material/bar_chart:", "Results"),
    View("missed", "views/missed.py", "Missed queries", ":material/search_off:", "Results"),
    View("diagnosis", "views/diagnosis.py", "Diagnosis", ":material/medical_services:", "Results"),
    View(
        "compare",
        "views/compare.py",
        "Compare runs",
        ":material/compare_arrows:",
        "Results",
        unlinked={
            "compare.fuse.": "the fusion section and the settings of a fused run to add, kept for the session (a link "
            "opens the section folded, as the page does); once added, the fused run is in the link",
            "compare.text.": "the text of a ranking's top documents: a link opens it folded, as the page does",
        },
    ),
    View("power", "views/power.py", "Dataset power", ":material/query_stats:", "Results"),
    View(
        "upload",
        "views/upload.py",
        "Upload",
        ":material/upload_file:",
        "Data",
        unlinked={"upload.": "inputs of an upload; what it stores is in the link (its dataset and runs)"},
    ),
    View(
        "retrieve",
        "views/retrieve.py",
        "Run a retriever",
        ":material/travel_explore:",
        "Data",
        unlinked={"retrieve.": "inputs of a retrieval; the run it stores is in the link"},
    ),
    View(
        "build",
        "views/build.py",
        "Build dataset",
        ":material/construction:",
        "Data",
        unlinked={
            "build.": "inputs of a generation and the review's actions; the batch and the candidate shown (bb, bc) "
            "and the dataset it makes are in the link"
        },
    ),
    View("timeline", "views/timeline.py", "Timeline", ":material/timeline:", "History"),
    View("leaderboard", "views/leaderboard.py", "Leaderboard", ":material/leaderboard:", "History"),
    View(
        "judge",
        "views/judge.py",
        "Judge",
        ":material/gavel:",
        "Data",
        unlinked={
            "judge.run_": "inputs of a judge run to start; what it labels is stored with the judge's provenance",
        },
    ),
    View(
        "workspace",
        "views/workspace.py",
        "Workspace",
        ":material/database:",
        "Data",
        unlinked={
            "workspace.rename.": "inputs of a rename; the new name is stored",
            "workspace.run": "the run a rename or delete acts on",
            "workspace.diff.": "the two qrels versions diffed: a link names one version (its dataset id)",
            "workspace.results.": "the per-query results a delete acts on",
        },
    ),
    View("metrics", "views/metrics.py", "Metric definitions", ":material/functions:", "Reference"),
)
