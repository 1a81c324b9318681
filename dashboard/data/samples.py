"""The bundled sample data (``sample_runs/``), loaded through ``ragmetrics.io`` as listed in its manifest.

The dashboard stores them once in a new store (see
:meth:`dashboard.data.workspace.Workspace.seed`); ``RAGMETRICS_SAMPLES=off``
starts with an empty store instead.

``sample_runs/manifest.json`` lists datasets in the order the dashboard shows
them (``product_faq_zh`` first). Each entry is an evaluation set
(``kind: evalset``: ``eval_set`` + ``corpus``) or TREC files (``kind: trec``:
``qrels`` + ``queries`` + ``corpus``), with its ``runs`` and, for trimmed
corpora, the full ``corpus_size``. ``RAGMETRICS_SAMPLES`` overrides the folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ragmetrics.foundation.model import Dataset, Run
from ragmetrics.io import load_dataset, load_run
from ragmetrics.io.limits import Limits

OFF = ("off", "none", "no", "0", "false")


def samples_dir() -> Path:
    env = os.environ.get("RAGMETRICS_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "sample_runs"


@dataclass(frozen=True, eq=False)
class Sample:
    name: str
    description: str
    license: str
    dataset: Dataset
    runs: tuple[tuple[Run, str], ...]  # (run, source path relative to the samples folder)
    source: str
    targets: str = ""  # the targets the sample declares: a profile name or metric>value items


def manifest(folder: Path | None = None) -> list[dict[str, object]]:
    """The manifest's dataset entries; [] when there is none."""
    if folder is None and os.environ.get("RAGMETRICS_SAMPLES", "").strip().lower() in OFF:
        return []
    path = (folder or samples_dir()) / "manifest.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data.get("datasets", []))


# the bundled samples are ours, not uploads: the deployer's RAGMETRICS_MAX_* limits must not refuse them
SAMPLE_LIMITS = Limits()


def load_sample(entry: dict[str, object], folder: Path | None = None) -> Sample:
    root = (folder or samples_dir()) / str(entry["folder"])
    name = str(entry.get("name", entry["folder"]))
    corpus_size = entry.get("corpus_size")
    corpus = root / str(entry["corpus"]) if entry.get("corpus") else None
    if entry.get("kind") == "evalset":
        dataset = load_dataset(root / str(entry["eval_set"]), name=name, corpus=corpus, limits=SAMPLE_LIMITS)
    else:
        queries = root / str(entry["queries"]) if entry.get("queries") else None
        dataset = load_dataset(
            root / str(entry["qrels"]),
            name=name,
            queries=queries,
            corpus=corpus,
            corpus_size=int(corpus_size) if isinstance(corpus_size, int) else None,
            limits=SAMPLE_LIMITS,
        )
    listed = entry.get("runs", [])
    runs = tuple(
        (load_run(root / str(r), limits=SAMPLE_LIMITS), f"{entry['folder']}/{r}")
        for r in (listed if isinstance(listed, (list, tuple)) else [])
    )
    return Sample(
        name=name,
        description=str(entry.get("description", "")),
        license=str(entry.get("license", "")),
        dataset=dataset,
        runs=runs,
        source=f"sample_runs/{entry['folder']}",
        targets=str(entry.get("targets", "")),
    )


def iter_samples(folder: Path | None = None, names: list[str] | None = None) -> Iterator[Sample]:
    """Load the manifest's samples in order (only ``names`` when given)."""
    for entry in manifest(folder):
        if names is None or entry.get("name") in names:
            yield load_sample(entry, folder)
