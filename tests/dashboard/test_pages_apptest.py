"""Every page under Streamlit's AppTest with the bundled sample data: no exception, URL state in and out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from dashboard.views import VIEWS
from ragmetrics.store.database import Store
from tests.dashboard.apptest import (
    charts,
    drawn_in_order,
    figure_specs,
    no_problems,
    open_app,
    open_page,
    param,
    shown_cells,
    shown_table,
)
from tests.dashboard.test_workspace import refuse_runs_after

pytestmark = pytest.mark.apptest

DATA = Path(__file__).resolve().parents[1] / "e2e" / "data"


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.key)
def test_every_page_runs_on_the_samples(view, faq_ids) -> None:
    at = open_page(view.key)
    no_problems(at)
    assert at.title[0].value == view.title
    # the view is written back to the URL: the sample dataset, opened first, with its runs
    assert param(at, "ds") == faq_ids["dataset"]
    assert param(at, "runs") == ",".join(faq_ids[n] for n in ("bm25", "dense-e5", "hybrid-rrf"))


def test_a_first_start_on_a_read_only_store_nobody_loaded_opens_it_empty_with_one_notice(tmp_path, monkeypatch) -> None:
    """Was: the first start on a store the dashboard may only read, that its owner made but loaded nothing into,
    stopped every page with "cannot be opened" (storing the samples is a write); under the notice, Workspace still
    said "Upload one on the Upload page" and Upload offered uploaders whose uploads were refused; a read-only file
    without tables (its owner never opened it) could not be opened at all. Now each page opens on the empty store
    and says, once, whom to ask, and Upload offers nothing to upload."""
    path, never_opened = tmp_path / "read-only.sqlite", tmp_path / "never-opened.sqlite"
    Store(f"sqlite:///{path}").engine.dispose()  # its owner made the tables, and loaded nothing
    never_opened.touch()
    notice = [
        "This store is read-only and holds nothing yet: ask its owner to load data (the database user the dashboard "
        "connects as may not write to it, so it could not store its sample datasets either)."
    ]
    for store, pages in ((path, ("workspace", "upload")), (never_opened, ("overview",))):
        monkeypatch.setenv("RAGMETRICS_STORE_URL", f"sqlite:///file:{store}?mode=ro&uri=true")
        for key in pages:
            at = open_page(key)
            no_problems(at)
            assert not at.warning and [i.value for i in at.info] == notice, key
            assert at.title[0].value == next(v.title for v in VIEWS if v.key == key) and not at.get("file_uploader")
    assert Store(f"sqlite:///{path}").list_datasets().empty and never_opened.read_bytes() == b""


def test_a_first_start_refused_part_way_says_so(tmp_path, monkeypatch) -> None:
    """Was: a write refused part-way through the samples left a store holding some of them, and no page said so.
    Now the pages warn what was stored, what was refused and why."""
    path = tmp_path / "refuses-runs.sqlite"
    store = Store(f"sqlite:///{path}")
    with store.engine.begin() as conn:
        conn.execute(sa.text(refuse_runs_after(0)))
    store.engine.dispose()
    monkeypatch.setenv("RAGMETRICS_STORE_URL", f"sqlite:///{path}")
    at = open_page("workspace")
    no_problems(at)
    [warning] = [w.value.replace("\\", "") for w in at.warning]  # shown as Markdown, escaped
    said = r"The sample data was stored in part: stored sample dataset '(\w+)'; then run '[\w-]+' of '\1' was refused"
    assert re.match(said, warning) and "(attempt to write a readonly database)" in warning, warning


def test_no_page_holds_a_download_before_it_is_clicked() -> None:
    """Every download button defers its file (written on click): a session holds no bytes for the tables and
    reports it only looks at (Streamlit keeps a button's given data in memory while the session lives)."""
    buttons = []
    for view in VIEWS:
        at = open_page(view.key)
        no_problems(at)
        buttons += [(f"{view.key}: {b.proto.label}", b.proto) for b in at.get("download_button")]
    assert len(buttons) >= 10, [name for name, _ in buttons]
    held = [name for name, proto in buttons if proto.url or not proto.deferred_file_id]
    assert not held, held


def test_router_runs_every_page() -> None:
    at = open_app()
    no_problems(at)
    assert at.title[0].value == "Overview"
    for view in VIEWS:
        at.switch_page(view.file).run()
        no_problems(at)
        assert at.title[0].value == view.title


def test_overview_reads_the_url_and_draws_one_trace_per_run(faq_ids) -> None:
    runs = [faq_ids["bm25"], faq_ids["hybrid-rrf"]]
    at = open_page(
        "overview",
        {"ds": faq_ids["dataset"], "runs": ",".join(runs), "m": "ndcg", "k": "10", "prof": "tech", "cv": "1"},
    )
    no_problems(at)
    assert at.multiselect(key="sidebar.runs").value == runs
    assert at.number_input(key="sidebar.k").value == 10
    assert at.selectbox(key="sidebar.metric").value == "ndcg"
    assert at.selectbox(key="overview.profile").value == "tech"
    metrics = shown_table(at, "overview.metrics")
    assert list(metrics["run"]) == ["bm25", "hybrid-rrf"] and "Recall@10" in metrics.columns
    curves = charts(at)[0]["data"]
    legend = [t["name"] for t in curves if t.get("showlegend") is not False and not t["name"].endswith("95% CI")]
    assert legend == ["bm25", "hybrid-rrf"]
    assert param(at, "k") == "10" and param(at, "prof") == "tech" and param(at, "m") == "ndcg"
    # the intervals are named by the methods mean_interval used: hits@10 is 0 or 1 per query (Clopper-Pearson), nDCG
    # graded (Student's t); was "95% bootstrap" for all of them
    assert not [t for t in at.table if "interval" in t.value.columns]  # folded: not sent
    at.session_state["overview.ci.open"] = True  # what a click on its label does (a rerun)
    at.run()
    summary = shown_table(at, "overview.ci")
    methods = summary.groupby("metric")["interval"].unique()
    assert list(methods["hits@10"]) == ["Clopper-Pearson"] and list(methods["ndcg@10"]) == ["t"]
    # shown in the words of the table above it and of the section's title (was recall@10 beside Recall@10, and "t")
    cells = shown_cells(at, "overview.ci").map(lambda text: text.replace("\\", ""))  # as Markdown renders them
    assert set(cells["metric"]) >= {"Hits@10", "nDCG@10"}
    assert set(cells["interval"]) == {"Clopper-Pearson", "Student's t"}
    assert all(len(text.split(".")[-1]) == 3 for text in cells["95% CI low"]), list(cells["95% CI low"])
    both = "Clopper-Pearson (where every query scored 0 or 1) and Student's t"
    assert f"Means with 95% confidence intervals: {both}" in [e.label for e in at.expander]
    captions = [c.value for c in at.caption]
    assert any(f"shaded: the 95% interval of each mean, {both}." in c for c in captions), captions
    assert any("lower end of the mean's 95% interval (Clopper-Pearson where every query" in c for c in captions)
    assert not [text for text in [*captions, *(e.label for e in at.expander)] if "95% bootstrap" in text]


def test_a_run_keeps_its_colour_whichever_others_are_selected(faq_ids) -> None:
    """Was: hybrid-rrf green beside two runs, orange once the one before it was left out (colours by the place in
    the selection): screenshots of the same run could not be read side by side."""

    def colours(runs: list[str]) -> dict[str, str]:
        at = open_page("overview", {"ds": faq_ids["dataset"], "runs": ",".join(faq_ids[r] for r in runs), "cv": "1"})
        no_problems(at)
        drawn: dict[str, str] = {}
        for figure in charts(at):
            for trace in figure["data"]:
                colour = (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")
                if isinstance(colour, str) and not trace["name"].endswith("95% CI"):
                    drawn.setdefault(trace["name"], colour)
        return drawn

    every = colours(["bm25", "dense-e5", "hybrid-rrf"])
    assert len(set(every.values())) == 3
    assert colours(["hybrid-rrf"])["hybrid-rrf"] == every["hybrid-rrf"]
    assert colours(["dense-e5", "hybrid-rrf"]) == {r: every[r] for r in ("dense-e5", "hybrid-rrf")}


def test_changing_k_and_metric_does_not_re_align(monkeypatch, faq_ids) -> None:
    from dashboard.data import alignments
    from dashboard.ui import cache

    calls: list[str] = []
    real = alignments.align

    def counting(dataset, run, *args, **kwargs):
        calls.append(run.name)
        return real(dataset, run, *args, **kwargs)

    cache._alignments.clear()
    monkeypatch.setattr(alignments, "align", counting)
    at = open_page("overview", {"ds": faq_ids["dataset"]})
    assert sorted(calls) == ["bm25", "dense-e5", "hybrid-rrf"]
    at.number_input(key="sidebar.k").set_value(3).run()
    at.selectbox(key="sidebar.metric").set_value("map").run()
    no_problems(at)
    assert "Recall@3" in shown_table(at, "overview.metrics").columns
    assert param(at, "k") == "3" and param(at, "m") == "map"
    assert len(calls) == 3  # K and metric only read the held alignments
    for view in VIEWS:  # nor does any other page
        no_problems(open_page(view.key, {"ds": faq_ids["dataset"]}))
    assert len(calls) == 3


def calls_of(monkeypatch, module, name: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Count the calls of ``module.name`` (one 1 per call) for the rest of the test."""
    calls: list[int] = []
    real = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_changing_k_leaves_the_figures_as_they_were(monkeypatch, faq_ids) -> None:
    from dashboard.core import overview

    built = calls_of(monkeypatch, overview, "curves_figure")
    at = open_page("overview", {"ds": faq_ids["dataset"], "k": "4", "base": faq_ids["dense-e5"], "cv": "1"})
    first, drawn = len(built), figure_specs(at)
    assert len(drawn) == 2
    for k in (6, 9):
        at.number_input(key="sidebar.k").set_value(k).run()
        no_problems(at)
        assert f"Recall@{k}" in shown_table(at, "overview.metrics").columns
        assert figure_specs(at) == drawn  # the same figures: nothing to draw again
    assert first <= 1 and len(built) == first  # built once (or found in the cache), never again for a new K


def test_the_overview_draws_its_curves_on_its_first_screen(faq_ids) -> None:
    at = open_page("overview", {"ds": faq_ids["dataset"], "k": "4"})
    no_problems(at)
    assert not at.expander or all("precision" not in e.label.lower() for e in at.expander)  # nothing folds them
    drawn = charts(at)
    assert len(drawn) == 2 and all(figure["data"] for figure in drawn)  # the curves over K, precision-recall
    assert param(at, "cv") is None  # nothing to keep open in a link
    # the curves come first, right under the verdict, then the numbers at K, then precision-recall
    order = drawn_in_order(at)
    assert order[0] == "overview.curves"
    assert order.index("overview.curves") < order.index("overview.metrics") < order.index("overview.pr")


def test_missed_page_opens_the_query_in_the_url(faq_ids) -> None:
    at = open_page("missed", {"ds": faq_ids["dataset"], "runs": faq_ids["bm25"], "k": "5", "q": "q009"})
    no_problems(at)
    assert at.selectbox(key="missed.query").value == "q009"
    assert any("Ubuntu" in m.value for m in at.markdown)
    table = at.dataframe[0].value
    assert "q009" in set(table["query_id"])
    assert param(at, "q") == "q009"
    # filters: a category narrows the table and lands in the URL
    at.selectbox(key="missed.category").set_value("procedural").run()
    no_problems(at)
    assert set(at.dataframe[0].value["category"]) <= {"procedural"}
    assert param(at, "cat") == "procedural"


def test_bad_link_explains_instead_of_failing() -> None:
    at = open_page("breakdown", {"ds": "0123456789abcdef", "k": "abc", "m": "nope", "runs": "ffffffffffffffff"})
    no_problems(at)
    infos = " ".join(i.value for i in at.info)
    assert "not loaded on this server" in infos and "K must be a whole number" in infos and "unknown metric" in infos
    assert len(charts(at)) == 2


def test_upload_dataset_runs_and_a_broken_run() -> None:
    at = open_page("upload")
    no_problems(at)
    at.file_uploader(key="upload.dataset").set_value(
        ("mini_eval.json", (DATA / "mini_eval.json").read_bytes(), "application/json")
    )
    at.run()
    no_problems(at)
    assert at.selectbox(key="sidebar.dataset").format_func(at.selectbox(key="sidebar.dataset").value) == "mini_eval"
    at.file_uploader(key="upload.runs").set_value(
        [
            (name, (DATA / name).read_bytes(), "text/plain")
            for name in ("mini-bm25.trec", "mini-dense.trec", "broken-run.trec")
        ]
    )
    at.run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]  # the page escapes Markdown
    assert len(errors) == 1 and errors[0].startswith("broken-run.trec:4: expected 6 fields")
    successes = " ".join(s.value for s in at.success)
    assert "mini" in successes and "bm25" in successes and "dense" in successes
    assert len(at.multiselect(key="sidebar.runs").value) == 2
    report = at.dataframe[0].value
    assert {"scope", "check", "count", "examples"} <= set(report.columns)
    small = report[report["check"].str.startswith("categories with fewer")].iloc[0]
    assert small["count"] == 3


def test_edited_targets_travel_in_the_url(faq_ids) -> None:
    at = open_page("overview", {"ds": faq_ids["dataset"], "tgt": "recall@5>0.5;mrr>0.99"})
    no_problems(at)
    targets_table = shown_table(at, "overview.targets")
    assert list(targets_table.columns) == ["run", "met", "Recall@5 > 0.50", "MRR > 0.99"]
    assert set(targets_table["met"]) == {"1/2"}
    assert param(at, "tgt") == "recall@5>0.5;mrr>0.99"


def _targets_editor(at: AppTest) -> Any:
    return next(n for n in at.dataframe if n.proto.id and "overview.targets.faq" in n.proto.id)


def _send_edits(at: AppTest, widget_id: str, edits: dict) -> AppTest:
    """What the browser sends for the targets' editor it shows, ``edits`` by row."""
    states = at._tree.get_widget_states()
    state = WidgetState(
        id=widget_id, string_value=json.dumps({"edited_rows": edits, "added_rows": [], "deleted_rows": []})
    )
    states.widgets.append(state)
    return at._run(states)


def _editing_targets(at: AppTest, opened: bool) -> AppTest:
    at.session_state["overview.targets.edit"] = opened  # what a click on its label does (a rerun)
    return at.run()


def test_every_edit_of_the_targets_is_kept_and_a_reset_takes(faq_ids) -> None:
    """Was: the editor was drawn from the targets the last edit made, so each edit drew a new editor: the next edit,
    sent by the editor the browser showed, was lost, and a reset right after an edit did nothing."""
    editor, send = _targets_editor, _send_edits
    at = open_page("overview", {"ds": faq_ids["dataset"]})
    at.selectbox(key="overview.profile").set_value("faq").run()
    assert not list(at.dataframe)  # the editor's section is folded: no editor sent
    _editing_targets(at, True)
    shown = editor(at).proto.id
    send(at, shown, {"0": {"threshold": 0.5}})
    rest = "recall@10>0.95;mrr>0.7;hits@5>0.9;ndcg@10>0.65"
    assert param(at, "tgt") == f"recall@5>0.5;{rest}" and editor(at).proto.id == shown  # the same editor
    send(at, shown, {"0": {"threshold": 0.5}, "1": {"threshold": 0.6}})  # a second edit in the same editor
    no_problems(at)
    assert param(at, "tgt") == "recall@5>0.5;recall@10>0.6;mrr>0.7;hits@5>0.9;ndcg@10>0.65"
    at.button(key="overview.targets.reset").click()
    send(at, shown, {"0": {"threshold": 0.5}, "1": {"threshold": 0.6}})  # the click comes with the editor's edits
    no_problems(at)
    assert param(at, "tgt") is None and editor(at).value["threshold"].tolist() == [0.9, 0.95, 0.7, 0.9, 0.65]


def test_the_targets_editor_folded_and_opened_again_keeps_the_edits(faq_ids) -> None:
    """Was: folded, the editor was not drawn and Streamlit dropped its edits; opened again it was drawn from the
    targets it was first drawn with, and its first run put them back in force (the link lost ``tgt``)."""
    at = open_page("overview", {"ds": faq_ids["dataset"]})
    at.selectbox(key="overview.profile").set_value("faq").run()
    _editing_targets(at, True)
    _send_edits(at, _targets_editor(at).proto.id, {"0": {"threshold": 0.5}})
    edited = "recall@5>0.5;recall@10>0.95;mrr>0.7;hits@5>0.9;ndcg@10>0.65"
    assert param(at, "tgt") == edited
    _editing_targets(at, False)
    assert param(at, "tgt") == edited and not list(at.dataframe)
    _editing_targets(at, True)
    no_problems(at)
    assert param(at, "tgt") == edited and _targets_editor(at).value["threshold"].tolist() == [0.5, 0.95, 0.7, 0.9, 0.65]
    _send_edits(at, _targets_editor(at).proto.id, {"3": {"threshold": 0.5}})  # an edit in the editor drawn again
    assert param(at, "tgt") == "recall@5>0.5;recall@10>0.95;mrr>0.7;hits@5>0.5;ndcg@10>0.65"
    assert "Recall@5 > 0.50" in shown_table(at, "overview.targets").columns


def test_upload_a_dataset_made_of_qrels_queries_and_corpus() -> None:
    folder = Path(__file__).resolve().parents[2] / "sample_runs" / "scifact"
    at = open_page("upload")
    files = [
        (name, (folder / name).read_bytes(), "application/octet-stream")
        for name in ("qrels.tsv", "queries.jsonl", "corpus.jsonl.gz")
    ]
    at.file_uploader(key="upload.dataset").set_value(files)
    at.run()
    no_problems(at)
    assert "300 queries" in " ".join(s.value for s in at.success)


def test_two_judgment_files_at_once_are_refused_not_half_read() -> None:
    """Files uploaded together make one dataset: a second judgments file is not silently ignored."""
    at = open_page("upload")
    at.file_uploader(key="upload.dataset").set_value(
        [(name, (DATA / name).read_bytes(), "text/plain") for name in ("mini-qrels.tab", "mini.qrel")]
    )
    at.run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "make one dataset" in errors[0] and "got 2" in errors[0]
    at.file_uploader(key="upload.dataset").set_value([("mini.qrel", (DATA / "mini.qrel").read_bytes(), "text/plain")])
    at.run()
    no_problems(at)
    assert "Loaded mini.qrel" in " ".join(s.value for s in at.success).replace("\\", "")


def test_a_new_k_on_missed_queries_keeps_the_query_the_user_chose(faq_ids) -> None:
    """Was: the missed-queries table kept its selected row's index when K changed, so another query (the one now at
    that index) was picked without the user choosing it."""
    at = open_page("missed", {"k": "5"})
    shown = next(d for d in at.dataframe if d.key and d.key.startswith("missed.table."))
    queries = shown.value["query_id"].tolist()
    at.session_state[shown.key] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    at.run()
    assert param(at, "q") == queries[2]
    at.selectbox(key="missed.query").set_value(queries[0]).run()
    at.number_input(key="sidebar.k").set_value(10).run()
    no_problems(at)
    assert param(at, "q") == queries[0] and at.selectbox(key="missed.query").value == queries[0]


def test_every_new_click_on_a_table_row_opens_its_query(faq_ids) -> None:
    """Was: a click was followed only when its query differed from the last row followed, so after the picker chose
    another query, the same row of a filtered table, or a row deselected and selected again, did nothing."""

    def table(at: AppTest, prefix: str) -> Any:
        return next(d for d in at.dataframe if d.key and d.key.startswith(prefix))

    def select(at: AppTest, key: str, rows: list[int]) -> AppTest:
        at.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
        return at.run()

    at = open_page("missed")
    first = table(at, "missed.table.")
    picked = first.value["query_id"].iloc[1]
    select(at, first.key, [1])
    assert param(at, "q") == picked
    category = str(first.value["category"].iloc[1])
    at.selectbox(key="missed.category").set_value(category).run()
    other = next(q for q in table(at, "missed.table.").value["query_id"] if q != picked)
    at.selectbox(key="missed.query").set_value(other).run()
    filtered = table(at, "missed.table.")
    select(at, filtered.key, [filtered.value["query_id"].tolist().index(picked)])  # the same query, a new table
    no_problems(at)
    assert param(at, "q") == picked and at.selectbox(key="missed.query").value == picked
    at.selectbox(key="missed.query").set_value(other).run()
    row = filtered.value["query_id"].tolist().index(picked)
    select(at, filtered.key, [])  # deselected, then selected again
    select(at, filtered.key, [row])
    assert param(at, "q") == picked

    at = open_page("compare", {"cv": "1"})
    listed = table(at, "compare.queries.")
    queries = listed.value["query_id"].tolist()
    select(at, listed.key, [0])
    assert param(at, "q") == queries[0]
    at.selectbox(key="compare.query").set_value(queries[1]).run()
    select(at, listed.key, [])
    select(at, listed.key, [0])
    no_problems(at)
    assert param(at, "q") == queries[0] and at.selectbox(key="compare.query").value == queries[0]
