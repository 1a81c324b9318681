"""A link ``ragmetrics push`` prints is built by the library (:mod:`ragmetrics.store.links`), which knows only the
keys a link to stored data needs; the dashboard owns the rest of the view's state. The two must read the same: the
printed link decodes in the dashboard to the dataset, the runs and the page it names, and fits the store as it is."""

from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from dashboard.core.share import decode
from dashboard.core.view_state import Facts, reconcile
from dashboard.views import VIEWS
from ragmetrics.cli import main
from ragmetrics.store.database import Store

SCIFACT = Path(__file__).resolve().parents[1] / "data" / "scifact"


def test_a_link_printed_by_push_opens_its_dataset_runs_and_page_in_the_dashboard(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    out, err = io.StringIO(), io.StringIO()
    runs = [str(SCIFACT / "bm25-stem.trec.gz"), str(SCIFACT / "hybrid-rrf60.trec.gz")]
    argv = ["push", "--store", url, "--dataset", str(SCIFACT / "qrels.tsv"), "--base-url", "http://team:8501/"]
    code = main([*argv, *(x for run in runs for x in ("--run", run))], out, err)
    assert code == 0, err.getvalue()
    link = urlsplit(out.getvalue().strip())
    assert (link.scheme, link.netloc) == ("http", "team:8501")

    pages = [view.key for view in VIEWS]
    state, notes = decode(parse_qs(link.query), link.path.strip("/"), pages=pages)
    store = Store(url)
    dataset = store.list_datasets()["id"].item()
    stored_runs = tuple(store.list_runs(dataset)["id"])
    assert notes == []
    assert (state.page, state.dataset, state.runs) == ("overview", dataset, stored_runs)

    fitted, notes = reconcile(state, [dataset], lambda _ident: Facts(runs=stored_runs), pages=pages)
    assert notes == [] and fitted.runs == stored_runs and fitted.dataset == dataset
