"""The Compare and Dataset power pages under Streamlit's AppTest with the bundled samples: URL state in and out,
the numbers of ragmetrics.analysis.compare, click-through to queries, fusion adding a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.core import compare as cmp
from dashboard.core.results import eval_result
from dashboard.core.share import FULL_VIEW, MAX_RUNS
from ragmetrics.foundation.model import Run
from ragmetrics.store.database import Store
from tests.dashboard.apptest import charts, figure_specs, no_problems, open_app, open_page, param, shown_table

pytestmark = pytest.mark.apptest


@pytest.fixture
def own_store(tmp_path, monkeypatch) -> Path:
    """A store of its own, for tests that add runs (the session's store stays as the samples left it)."""
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    return tmp_path


def _table(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_compare_page_defaults_to_the_first_run_as_baseline(faq_ids) -> None:
    at = open_page("compare")
    no_problems(at)
    assert at.title[0].value == "Compare runs"
    assert param(at, "base") == faq_ids["bm25"]
    assert param(at, "fr") == faq_ids["dense-e5"]  # the run shown query by query is never the baseline
    table = _table(at, "Δ vs baseline")
    assert len(table) == 5 * 3 and list(table["run"][:3]) == ["bm25", "dense-e5", "hybrid-rrf"]
    assert table["significance"][0] == cmp.BASELINE
    # query by query is off until asked: neither computed nor sent
    assert [s.value for s in at.subheader] == ["Query by query", "What if we went hybrid? Fuse runs"]
    assert len(charts(at)) == 2 and param(at, "cv") is None  # the forest, the cost
    assert not any(d.key and d.key.startswith("compare.queries.") for d in at.dataframe)
    at.toggle(key="compare.by_query").set_value(True).run()
    no_problems(at)
    headers = [s.value for s in at.subheader]
    assert headers == [
        "Query by query",
        "One query, both rankings",
        "By category and difficulty",
        "What if we went hybrid? Fuse runs",
    ]
    traces = [[t.get("name") for t in c["data"]] for c in charts(at)]
    assert any(names and names[0].startswith("wins") for names in traces)  # sorted per-query deltas
    assert any(names and names[0] == "no change" for names in traces)  # baseline-versus-run scatter
    assert param(at, "cv") == "1"  # a link reopens it on
    reopened = open_page("compare", {"cv": "1"})
    assert reopened.toggle(key="compare.by_query").value and len(reopened.subheader) == 4


def test_compare_reads_the_url_and_shows_the_librarys_numbers(faq, faq_ids) -> None:
    from ragmetrics.analysis.compare import compare

    params = {
        "ds": faq_ids["dataset"],
        "runs": ",".join(faq_ids[n] for n in ("bm25", "dense-e5", "hybrid-rrf")),
        "base": faq_ids["hybrid-rrf"],
        "fr": faq_ids["bm25"],
        "m": "ndcg",
        "k": "10",
        "q": "q009",
        "cv": "1",
    }
    at = open_page("compare", params)
    no_problems(at)
    assert at.selectbox(key="compare.baseline").value == faq_ids["hybrid-rrf"]
    assert at.selectbox(key="compare.run").value == faq_ids["bm25"]
    assert at.selectbox(key="compare.query").value == "q009"
    table = _table(at, "Δ vs baseline")
    assert list(table["metric"].unique()) == ["Recall@10", "Precision@10", "Hits@10", "nDCG@10", "MRR@10"]
    # the same table as the library's, Holm-corrected across its 5 metrics x 3 runs
    library = compare(
        faq.dataset, [r for r, _ in faq.runs], cmp.compare_specs("ndcg", 10), baseline="hybrid-rrf", warn=False
    ).table
    library = library[library["metric"] == "ndcg@10"].set_index("run")
    shown = table[table["metric"] == "nDCG@10"].set_index("run")
    for run in ("bm25", "dense-e5"):
        assert shown.loc[run, "Δ vs baseline"] == f"{library.loc[run, 'delta']:+.3f}"
        assert shown.loc[run, "p"] == cmp.format_p(library.loc[run, "p_value"])
        assert shown.loc[run, "p (Holm)"] == cmp.format_p(library.loc[run, "p_value_corrected"])
        assert (
            shown.loc[run, "W / T / L"]
            == f"{library.loc[run, 'wins']} / {library.loc[run, 'ties']} / {library.loc[run, 'losses']}"
        )
    # one query's two rankings, side by side, relevant documents marked
    assert any("Ubuntu" in m.value for m in at.markdown)
    rankings = [d.value for d in at.dataframe if "other_rank" in d.value.columns]
    # BM25 finds q009's document at rank 11, so both rankings go that deep to show it
    assert len(rankings) == 2 and all(r["relevant"].any() for r in rankings) and len(rankings[0]) == 11
    assert param(at, "q") == "q009" and param(at, "base") == faq_ids["hybrid-rrf"] and param(at, "m") == "ndcg"


def _alignments(faq):
    import ragmetrics

    return [ragmetrics.align(faq.dataset, run) for run, _ in faq.runs]


def test_selecting_a_row_focuses_its_run_and_metric(faq_ids) -> None:
    at = open_page("compare")
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.table."))
    table = _table(at, "Δ vs baseline")
    row = int(table.index[(table["metric"] == "nDCG@5") & (table["run"] == "hybrid-rrf")][0])
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    no_problems(at)
    assert param(at, "m") == "ndcg" and param(at, "fr") == faq_ids["hybrid-rrf"] and param(at, "cv") == "1"
    assert at.selectbox(key="sidebar.metric").value == "ndcg"
    assert at.selectbox(key="compare.run").value == faq_ids["hybrid-rrf"]
    assert any("hybrid-rrf" in m.value.replace("\\", "") and "nDCG@5" in m.value for m in at.markdown)


def test_a_row_picked_again_after_the_focus_moved_back_is_followed(faq_ids) -> None:
    """Was: the pick was remembered as followed, so after the run picker moved the focus back, picking the same row
    again did nothing."""

    def pick(at: AppTest, run: str) -> None:
        key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.table."))
        table = _table(at, "Δ vs baseline")
        row = int(table.index[(table["metric"] == "Recall@5") & (table["run"] == run)][0])
        at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
        at.run()
        no_problems(at)

    at = open_page("compare")
    first = at.selectbox(key="compare.run").value
    pick(at, "hybrid-rrf")
    assert at.selectbox(key="compare.run").value == faq_ids["hybrid-rrf"]
    at.selectbox(key="compare.run").set_value(first).run()
    assert at.selectbox(key="compare.run").value == first
    pick(at, "hybrid-rrf")
    assert at.selectbox(key="compare.run").value == faq_ids["hybrid-rrf"] and param(at, "fr") == faq_ids["hybrid-rrf"]


def test_a_click_that_moves_no_focus_still_shows_the_focused_run_s_queries(faq_ids) -> None:
    """Was: the focus row clicked again (which deselects it) or a baseline's row left query by query off, though the
    page says to select a row to see the queries."""
    at = open_page("compare")
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.table."))
    focus = at.selectbox(key="compare.run").value
    assert not at.toggle(key="compare.by_query").value
    at.session_state[key] = {"selection": {"rows": [], "columns": [], "cells": []}}  # the focus row clicked again
    at.run()
    no_problems(at)
    assert at.toggle(key="compare.by_query").value and param(at, "cv") == "1"
    assert at.selectbox(key="compare.run").value == focus  # nothing moved
    at.toggle(key="compare.by_query").set_value(False).run()
    assert not at.toggle(key="compare.by_query").value and param(at, "cv") is None  # it can be turned off again
    table = _table(at, "Δ vs baseline")
    baseline = int(table.index[table["Δ vs baseline"].astype(str).str.strip().isin(["", "—", "baseline"])][0])
    at.session_state[key] = {"selection": {"rows": [baseline], "columns": [], "cells": []}}  # a baseline's row
    at.run()
    no_problems(at)
    assert at.toggle(key="compare.by_query").value and at.selectbox(key="compare.run").value == focus


def test_selecting_a_row_keeps_the_compared_set_and_its_family(faq_ids) -> None:
    """Was: with the default set, picking nDCG@5 changed the sidebar's metric and with it the set (18 rows to 15,
    Holm over 12 comparisons to 10)."""
    at = open_page("compare", {"m": "map", "k": "5"})
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.table."))
    before = _table(at, "Δ vs baseline")
    row = int(before.index[(before["metric"] == "nDCG@5") & (before["run"] == "hybrid-rrf")][0])
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    no_problems(at)
    after = _table(at, "Δ vs baseline")
    assert param(at, "m") == "ndcg" and list(after["metric"]) == list(before["metric"])


@pytest.mark.parametrize("other", ["mrr", "bpref", "recall@500"])
def test_a_row_the_sidebar_cannot_name_focuses_its_run_and_reruns_once(faq_ids, other) -> None:
    """Was: a row of mrr (no cut-off), bpref or Recall@500 reran the page to a view that selected it again, forever."""
    at = open_page("compare", {"ms": f"recall@5,{other}"}, timeout=60)
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.table."))
    table = _table(at, "Δ vs baseline")
    row = int(table.index[(table["metric"] != "Recall@5") & (table["run"] == "dense-e5")][0])
    at.session_state[key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()  # a page that reran forever would time out here
    no_problems(at)
    assert param(at, "fr") == faq_ids["dense-e5"] and param(at, "m") == "recall" and param(at, "k") == "5"
    assert at.selectbox(key="compare.run").value == faq_ids["dense-e5"]


def test_wins_and_losses_click_through_to_their_queries(faq_ids) -> None:
    at = open_page("compare", {"m": "ndcg", "cv": "1"})
    no_problems(at)
    radio = at.radio(key="compare.outcome")
    assert radio.value == "loss"
    losses = _table(at, "outcome")
    assert set(losses["outcome"]) == {"loss"} and losses["delta"].is_monotonic_increasing
    radio.set_value("win").run()
    no_problems(at)
    wins = _table(at, "outcome")
    assert set(wins["outcome"]) == {"win"}
    picked = str(wins["query_id"].iloc[2])
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("compare.queries."))
    at.session_state[key] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    at.run()
    no_problems(at)
    assert at.selectbox(key="compare.query").value == picked
    assert param(at, "q") == picked


def test_picking_an_outcome_or_a_query_builds_no_figure_again(monkeypatch, faq_ids) -> None:
    from dashboard.core import compare_queries, cost
    from tests.dashboard.test_pages_apptest import calls_of

    built = [calls_of(monkeypatch, module, name) for module, name in
             ((cmp, "forest_figure"), (compare_queries, "delta_figure"), (compare_queries, "scatter_figure"),
              (cost, "cost_figure"))]  # fmt: skip
    at = open_page("compare", {"m": "ndcg", "k": "7", "cv": "1"})
    no_problems(at)
    drawn = figure_specs(at)
    assert [len(b) for b in built] == [2, 1, 1, 1] and len(drawn) == 5  # two forests, deltas, scatter, cost
    at.radio(key="compare.outcome").set_value("win").run()
    at.selectbox(key="compare.query").set_value(at.selectbox(key="compare.query").options[3]).run()
    no_problems(at)
    assert [len(b) for b in built] == [2, 1, 1, 1]  # found in the cache, not built again
    assert figure_specs(at) == drawn
    at.selectbox(key="sidebar.metric").set_value("recall").run()  # another metric: the query by query figures
    no_problems(at)
    assert [len(b) for b in built] == [3, 2, 2, 2]  # the forest of every metric compared is the same one
    now = figure_specs(at)
    assert now[0] == drawn[0] and all(a != b for a, b in zip(now[1:], drawn[1:]))


def test_a_figure_is_kept_per_content_of_its_frame_and_options() -> None:
    import pandas as pd

    from dashboard.ui import cache

    calls: list[tuple] = []

    def build(frame, **options):  # type: ignore[no-untyped-def]
        calls.append((len(frame), options))
        return {"rows": len(frame), **options}

    frame = pd.DataFrame({"query_id": ["q1", "q2"], "delta": [0.25, -0.5]})
    first = cache.figure(build, frame, title="a")
    assert cache.figure(build, frame.copy(), title="a") is first and len(calls) == 1  # the same content
    cache.figure(build, frame.assign(delta=[0.25, -0.25]), title="a")  # other values
    cache.figure(build, frame, title="b")  # other options
    cache.figure(build, frame.rename(columns={"delta": "d"}), title="a")  # other columns
    assert len(calls) == 4
    listed = pd.DataFrame({"docs": [["d1"], ["d2"]]})  # cells pandas cannot hash: built each time
    cache.figure(build, listed)
    cache.figure(build, listed)
    assert len(calls) == 6


def test_a_memo_keyed_on_a_nan_finds_what_it_kept() -> None:
    """Was: a float NaN among a memo's arguments was keyed as it is; a NaN equals nothing (a new one each call), so
    the Power page's curve, keyed on its runs' SDs, was built again on every opening where one SD was unknown."""
    from dashboard.ui import cache

    calls: list[tuple[float, ...]] = []

    @cache.memo
    def built(sds: tuple[float, ...]) -> int:
        calls.append(sds)
        return len(calls)

    assert built((0.1, float("nan"))) == built((0.1, float("nan"))) == 1
    assert built((0.1, 0.2)) == 2 and len(calls) == 2
    assert cache.cache_key(float("nan")) == cache.cache_key(float("nan")) != cache.cache_key(0.0)


def test_the_test_and_alpha_can_be_picked(faq_ids) -> None:
    at = open_page("compare")
    first = _table(at, "Δ vs baseline")
    for test in ("randomization", "bootstrap"):  # (Wilcoxon: the builder tests; scipy is slow on small tied groups)
        at.selectbox(key="compare.test").set_value(test).run()
        no_problems(at)
        shown = _table(at, "Δ vs baseline")
        assert shown["p"].tolist() != first["p"].tolist()
        assert shown["Δ vs baseline"].tolist() == first["Δ vs baseline"].tolist()  # the test changes p, not Δ
    at.selectbox(key="compare.alpha").set_value(0.01).run()
    no_problems(at)
    assert any("corrected p < 0.01" in c.value for c in at.caption)
    # both travel in the share link ...
    assert (param(at, "t"), param(at, "a")) == ("bootstrap", "0.01")
    # ... and a link with them opens the same comparison
    opened = open_page("compare", {"t": "bootstrap", "a": "0.01"})
    no_problems(opened)
    assert (opened.selectbox(key="compare.test").value, opened.selectbox(key="compare.alpha").value) == (
        "bootstrap",
        0.01,
    )
    assert _table(opened, "Δ vs baseline")["p"].tolist() == _table(at, "Δ vs baseline")["p"].tolist()


def test_open_in_missed_queries_through_the_router(faq_ids) -> None:
    at = open_app()
    at.switch_page("views/compare.py").run()
    no_problems(at)
    at.toggle(key="compare.by_query").set_value(True).run()
    query = at.selectbox(key="compare.query").value
    at.button(key="compare.open_missed").click().run()
    no_problems(at)
    assert at.title[0].value == "Missed queries"
    assert at.selectbox(key="missed.query").value == query
    assert at.selectbox(key="missed.run").value == faq_ids["dense-e5"]


def test_a_pages_folded_section_opens_as_that_page_was_left(faq_ids) -> None:
    """Compare's query by query and the Overview's curve data are each their page's: one turned on is not the
    other's, and each is as it was left when its page is opened again (a page switch keeps the rest of the view)."""

    def curve_data_sent(at: AppTest) -> bool:
        return bool(list(at.expander(key="overview.curve_data").dataframe))

    at = open_app()
    at.switch_page("views/compare.py").run()
    at.toggle(key="compare.by_query").set_value(True).run()
    no_problems(at)
    assert param(at, "cv") == "1"
    at.switch_page("views/overview.py").run()
    no_problems(at)
    assert not at.expander(key="overview.curve_data").proto.expanded and param(at, "cv") is None
    assert not curve_data_sent(at)  # folded: not sent
    at.session_state["overview.curve_data"] = True  # what a click on its label does (a rerun)
    at.run()
    assert curve_data_sent(at) and param(at, "cv") == "1"
    at.switch_page("views/compare.py").run()
    no_problems(at)
    assert at.toggle(key="compare.by_query").value and param(at, "cv") == "1"  # as it was left
    assert param(at, "base") == faq_ids["bm25"]  # the rest of the view travels
    at.toggle(key="compare.by_query").set_value(False).run()
    at.switch_page("views/overview.py").run()
    no_problems(at)
    assert curve_data_sent(at)  # the Overview's, as it was left: open


def _open_fusion(at: AppTest) -> AppTest:
    """Fusion is folded as Compare opens: nothing fused, no control sent; a click on its label opens it."""
    assert not at.expander(key="compare.fuse.open").proto.expanded
    assert not [w for w in at.multiselect if w.key == "compare.fuse.runs"] and not _fusion_preview_sent(at)
    at.session_state["compare.fuse.open"] = True  # what a click on its label does (a rerun)
    return at.run()


def _fusion_preview_sent(at: AppTest) -> bool:
    return any("role" in d.value.columns for d in at.dataframe)


def test_fusion_adds_a_run_every_page_sees(own_store, faq_ids) -> None:
    at = _open_fusion(open_page("compare"))
    no_problems(at)
    assert at.multiselect(key="compare.fuse.runs").value == [faq_ids["bm25"], faq_ids["dense-e5"]]
    preview = _table(at, "role")
    assert list(preview["role"]) == ["input", "input", "fused"] and preview["run"].iloc[2] == "rrf60(bm25+dense-e5)"
    assert any(b.proto.label == "Download TREC run" for b in at.get("download_button"))
    at.button(key="compare.fuse.add").click().run()
    no_problems(at)
    runs = (param(at, "runs") or "").split(",")
    assert len(runs) == 4 and len(at.multiselect(key="sidebar.runs").value) == 4
    fused_id = runs[-1]
    assert param(at, "fr") == fused_id
    assert "rrf60(bm25+dense-e5)" in set(_table(at, "Δ vs baseline")["run"])
    assert any("in the workspace as" in s.value for s in at.success)
    # the fused run is a run like any other: the overview and breakdown show it
    other = open_page("overview", {"ds": faq_ids["dataset"], "runs": ",".join(runs)})
    no_problems(other)
    assert "rrf60(bm25+dense-e5)" in set(shown_table(other, "overview.metrics")["run"])
    # and it is known as fused by its tags, as Diagnosis reads a run's kind (was: from its name only)
    store = Store(f"sqlite:///{own_store / 'ragmetrics.sqlite'}")
    assert store.tags(fused_id) == {"fusion": "rrf", "fusion.of": "bm25 + dense-e5", "fusion.k": "60"}
    store.engine.dispose()


def test_fusion_settings(own_store, faq_ids) -> None:
    at = open_app()
    at.switch_page("views/compare.py").run()
    _open_fusion(at)
    at.selectbox(key="compare.fuse.method").set_value("combmnz").run()
    at.selectbox(key="compare.fuse.norm").set_value("zscore").run()
    at.number_input(key=f"compare.fuse.w.{faq_ids['bm25']}").set_value(0.5).run()
    no_problems(at)
    assert _table(at, "role")["run"].iloc[2] == "combmnz-zscore(0.5·bm25+1·dense-e5)"
    at.text_input(key="compare.fuse.name").input("my-hybrid").run()
    no_problems(at)
    assert _table(at, "role")["run"].iloc[2] == "my-hybrid"
    for rid in (faq_ids["bm25"], faq_ids["dense-e5"]):  # every weight 0: said, nothing fused (the library refuses)
        at.number_input(key=f"compare.fuse.w.{rid}").set_value(0.0).run()
    no_problems(at)
    assert not _fusion_preview_sent(at) and any("weight above 0" in c.value for c in at.caption)
    at.number_input(key=f"compare.fuse.w.{faq_ids['bm25']}").set_value(0.5).run()
    at.number_input(key=f"compare.fuse.w.{faq_ids['dense-e5']}").set_value(1.0).run()
    # folded and opened again, or left for another page and back, the settings are as the user left them
    at.session_state["compare.fuse.open"] = False
    at.run()
    assert not [w for w in at.selectbox if w.key == "compare.fuse.method"] and not _fusion_preview_sent(at)
    at.switch_page("views/overview.py").run()
    at.switch_page("views/compare.py").run()
    no_problems(at)
    _open_fusion(at)
    no_problems(at)
    assert at.selectbox(key="compare.fuse.method").value == "combmnz"
    assert at.selectbox(key="compare.fuse.norm").value == "zscore"
    assert at.number_input(key=f"compare.fuse.w.{faq_ids['bm25']}").value == 0.5
    assert _table(at, "role")["run"].iloc[2] == "my-hybrid"
    at.switch_page("views/overview.py").run()
    at.switch_page("views/compare.py").run()
    assert at.expander(key="compare.fuse.open").proto.expanded and _fusion_preview_sent(at)  # open, as it was left


def test_a_fused_run_added_to_a_full_view_is_stored_and_said_not_selected(own_store, faq, faq_ids) -> None:
    """Was: a run added to a view of 20 (fused, retrieved, the Timeline's baseline) was cut from the sidebar's
    picker without a word, and Retrieve said it was selected."""
    no_problems(open_page("compare"))  # the first start stores the samples
    store = Store(f"sqlite:///{own_store / 'ragmetrics.sqlite'}")
    run = faq.runs[0][0]
    scores = run.table.column("score").to_numpy()
    others = [
        store.put_run(
            Run.from_table(
                run.table.set_column(2, "score", pa.array(scores + i * (scores == scores.max()))), name=f"v{i}"
            ),
            faq_ids["dataset"],
        )
        for i in range(1, MAX_RUNS)
    ]
    full = [faq_ids["bm25"], *others]
    at = _open_fusion(open_page("compare", {"ds": faq_ids["dataset"], "runs": ",".join(full)}))
    no_problems(at)
    assert at.multiselect(key="sidebar.runs").value == full
    at.button(key="compare.fuse.add").click().run()
    no_problems(at)
    assert (param(at, "runs") or "").split(",") == full and at.multiselect(key="sidebar.runs").value == full
    assert any(f"stored, not selected: {FULL_VIEW}" in s.value for s in at.success)
    assert len(store.list_runs(faq_ids["dataset"])) == len(faq.runs) + len(others) + 1  # stored all the same


def test_the_pickers_take_no_more_than_a_link_holds(faq_ids) -> None:
    """Was: Compare's picker took 13 metrics and its page corrected over 39 comparisons, while its link held 12 and
    reopened over 36 (every corrected p-value moved)."""
    from dashboard.core.share import MAX_METRICS, MAX_RUNS

    at = open_page("compare")
    assert at.multiselect(key="compare.metrics").proto.max_selections == MAX_METRICS
    assert at.multiselect(key="sidebar.runs").proto.max_selections == MAX_RUNS
    many = ["ndcg@" + str(k) for k in range(1, MAX_METRICS + 4)]
    opened = open_page("compare", {"ms": ",".join(many)})  # a link written by hand: the first 12, said
    no_problems(opened)
    assert opened.multiselect(key="compare.metrics").value == many[:MAX_METRICS]


def test_power_page_shows_discriminative_power_and_queries_needed(faq, faq_ids) -> None:
    from ragmetrics.analysis import stats
    from ragmetrics.analysis.compare import compare_result

    at = open_page("power", {"m": "ndcg", "k": "10"})
    no_problems(at)
    assert at.title[0].value == "Dataset power"
    metrics = {m.label: m.value for m in at.metric}
    specs = cmp.compare_specs("ndcg", 10)
    comparison = compare_result(eval_result(_alignments(faq), specs), metrics=specs, segments=())
    pairs = comparison.pairs[comparison.pairs["metric"] == "ndcg@10"]
    significant = int(pairs["significant"].sum())
    assert metrics["Run pairs significant (nDCG@10)"] == f"{significant} of 3 ({significant / 3:.0%})"
    # the chip names the correction and its size; the caption and the tooltip the family of the Overview and Compare
    assert at.metric[1].delta == stats.family_text(comparison.correction, comparison.family_size)
    assert comparison.family_text in at.metric[1].help
    assert any(comparison.family_text in c.value for c in at.caption)
    sd = float(pairs["sd_difference"].median())
    # planned at the level Holm tests its strictest comparison at (alpha / m): detectable by the family's own rule
    planned = 0.05 / comparison.family_size
    assert comparison.correction == "holm" and comparison.family_size > 1
    assert metrics["Smallest detectable Δ"] == f"{stats.min_detectable_delta(sd, 91, alpha=planned):.3f}"
    assert metrics["Queries to detect Δ = 0.05"] == f"{stats.queries_needed(0.05, sd, alpha=planned):,}"
    said = f"α / {comparison.family_size} = {planned:.2g}, the level of Holm's first and strictest step"
    assert any(said in c.value for c in at.caption)
    table = _table(at, "share")
    assert list(table["metric"]) == list(map(str, cmp.compare_specs("ndcg", 10)))
    chart = charts(at)[0]
    assert [t["name"] for t in chart["data"]] == ["range over run pairs", "median run pair", "this dataset"]
    at.number_input(key="power.target").set_value(0.1).run()
    at.selectbox(key="power.level").set_value(0.9).run()
    no_problems(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Queries to detect Δ = 0.1"] == f"{stats.queries_needed(0.1, sd, alpha=planned, power=0.9):,}"
    rules = _table(at, "mdd_low_end")
    assert list(rules["stage"][:3]) == ["prototype", "development", "release"]
    np.testing.assert_allclose(rules["mdd_low_end"][0], stats.min_detectable_delta(sd, 20, alpha=planned, power=0.9))
    # uncorrected, the plan is at alpha itself, and the caption says so
    at.selectbox(key="power.correction").set_value("none").run()
    no_problems(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Smallest detectable Δ"] == f"{stats.min_detectable_delta(sd, 91, power=0.9):.3f}"
    assert any("α = 0.05, uncorrected" in c.value for c in at.caption)


def test_one_run_explains_instead_of_failing(faq_ids) -> None:
    for page in ("compare", "power"):
        at = open_page(page, {"ds": faq_ids["dataset"], "runs": faq_ids["bm25"]})
        no_problems(at)
        assert any("at least two runs" in i.value for i in at.info)


def test_bounds_from_the_unjudged_show_the_librarys_ends_and_mark_a_verdict_that_could_flip(faq, faq_ids) -> None:
    from ragmetrics.analysis.compare import compare

    at = open_page("compare", {"m": "ndcg", "k": "10"})
    no_problems(at)
    assert not at.toggle(key="compare.bounds").value and "Δ if judged" not in _table(at, "Δ vs baseline").columns
    at = at.toggle(key="compare.bounds").set_value(True).run()
    no_problems(at)
    assert param(at, "jb") == "1"
    table = _table(at, "Δ if judged")
    runs, specs = [r for r, _ in faq.runs], cmp.compare_specs("ndcg", 10)
    library = compare(faq.dataset, runs, specs, baseline="bm25", warn=False, bounds=True, bounds_depth=10).table
    library = library[library["metric"] == "ndcg@10"].set_index("run")
    shown = table[table["metric"] == "nDCG@10"].set_index("run")
    for run in ("dense-e5", "hybrid-rrf"):
        row = library.loc[run]
        assert shown.loc[run, "Δ if judged"] == cmp.format_ci(row["delta_worst"], row["delta_best"])
        assert shown.loc[run, "mean if judged"] == cmp.format_ci(row["mean_worst"], row["mean_best"])
        assert shown.loc[run, "judgments"] == (cmp.COULD_FLIP if row["could_flip"] else cmp.SETTLED)
    assert shown.loc["bm25", "Δ if judged"] == ""
    verdict = next(m.value for m in at.markdown if "**Verdict.**" in m.value)
    best = library.drop(index="bm25")["mean"].idxmax()
    expected = "could **flip** it" if library.loc[best, "could_flip"] else "No way of judging the unjudged documents"
    assert expected in verdict
    assert at.number_input(key="compare.bounds_depth").value == 10  # the Judge page's pool depth
    at = at.number_input(key="compare.bounds_depth").set_value(3).run()
    assert param(at, "dp") == "3"
    deeper = compare(faq.dataset, runs, specs, baseline="bm25", warn=False, bounds=True, bounds_depth=3).table
    row = deeper[(deeper["metric"] == "ndcg@10") & (deeper["run"] == "hybrid-rrf")].iloc[0]
    shown = _table(at, "Δ if judged").set_index(["metric", "run"]).loc[("nDCG@10", "hybrid-rrf")]
    assert shown["Δ if judged"] == cmp.format_ci(row["delta_worst"], row["delta_best"])
    reopened = open_page("compare", {"m": "ndcg", "k": "10", "jb": "1", "dp": "3"})
    assert reopened.toggle(key="compare.bounds").value and reopened.number_input(key="compare.bounds_depth").value == 3
    assert "Δ if judged" in _table(reopened, "Δ vs baseline").columns


def test_the_overviews_verdict_says_what_the_judgments_leave_open_when_the_link_asks(faq_ids, faq_alignments) -> None:
    plain = next(m.value for m in open_page("overview").markdown if "**Verdict.**" in m.value)
    assert "judging" not in plain and "unjudged" not in plain
    at = open_page("overview", {"jb": "1", "dp": "5"})
    with_bounds = next(m.value for m in at.markdown if "**Verdict.**" in m.value)
    assert with_bounds.startswith(plain.rstrip()) and "unjudged documents" in with_bounds
    means = shown_table(at, "overview.ci")  # open with the link's bounds: every mean with its two ends
    first = means.iloc[0]
    alignment = next(a for a in faq_alignments if a.name == first["run"])
    worst, best = alignment.bounds(first["metric"], 5)
    assert (first["if judged: worst"], first["if judged: best"]) == (worst.mean(), best.mean())
    assert (means["if judged: worst"] <= means["mean"] + 1e-12).all()
    assert (means["mean"] <= means["if judged: best"] + 1e-12).all()
    without = open_page("overview")
    without.session_state["overview.ci.open"] = True
    without.run()
    assert "mean" in shown_table(without, "overview.ci") and "if judged: worst" not in shown_table(
        without, "overview.ci"
    )


def test_the_overview_compare_and_dataset_power_are_one_family(faq_ids) -> None:
    """Was: the Overview put the sidebar's metric in front of a linked set, so its family was larger than Compare's
    (6 comparisons against 4) although its caption said it was Compare's; and Dataset power corrected over the run
    pairs of each metric with its own metric set, so the same pair showed another corrected p-value there. Now one
    family (every pair of the selected runs x the compared metrics) on the three pages."""
    link = {"m": "recall", "k": "5", "ms": "ndcg@10,mrr"}
    family = "Holm-corrected over 6 comparison(s) (all pairs of 3 runs x 2 metrics)"
    verdicts = [
        next(m.value for m in open_page(page, link).markdown if "**Verdict.**" in m.value)
        for page in ("overview", "compare")
    ]
    assert verdicts[0] == verdicts[1] and family in verdicts[0], verdicts
    power = open_page("power", link)
    no_problems(power)
    assert power.metric[1].delta == family.split(" (")[0] and family in power.metric[1].help
    assert power.metric[1].label == "Run pairs significant (nDCG@10)"
    pairs = _table(power, "queries_needed")
    compare = _table(open_page("compare", link), "Δ vs baseline")
    shown = compare[(compare["metric"] == "nDCG@10") & (compare["run"] != "bm25")]
    assert len(shown) == 2 and len(pairs) == 3
    for run, corrected in zip(shown["run"], shown["p (Holm)"]):  # the baseline's pairs: the same p on both pages
        pair = pairs[pairs[["run_a", "run_b"]].apply(set, axis=1) == {run, "bm25"}]
        assert cmp.format_p(float(pair["p_value_corrected"].iloc[0])) == corrected


@pytest.mark.parametrize("metrics", ["keyword_recall@5", "answer_in@3,ndcg@5", "keyword_recall@5,recall@5"])
def test_a_link_naming_metrics_the_runs_cannot_give_leaves_them_out_with_a_note(faq_ids, metrics) -> None:
    """Was: an exception box (a keyword or answer metric on runs without text, a cut-off the sidebar cannot
    name); now the set keeps what can be computed and says what it left out."""
    for page in ("overview", "compare"):
        at = open_page(page, {"ms": metrics}, timeout=60)
        assert not at.exception, (page, [e.value for e in at.exception])
        assert any("**Verdict.**" in m.value for m in at.markdown), page


def test_a_fused_run_with_spaces_in_its_ids_offers_no_trec_file_and_says_why(own_store) -> None:
    """Was: "Download TREC run" of such a run answered 500 (the file, written on the click, was refused)."""
    import pandas as pd

    from dashboard.data.workspace import Workspace
    from ragmetrics.foundation.model import Dataset, Run
    from ragmetrics.store.database import Store

    qrels = pd.DataFrame(
        [(f"q{i}", f"doc {i}", 1) for i in range(6)] + [(f"q{i}", f"doc {i + 1}", 0) for i in range(6)],
        columns=["query_id", "doc_id", "relevance"],
    )
    dataset = Dataset.from_frames(qrels, pd.DataFrame({"query_id": [f"q{i}" for i in range(6)]}), name="spaced")
    workspace = Workspace(Store(f"sqlite:///{own_store / 'ragmetrics.sqlite'}"), cache_bytes=1 << 26)
    entry = workspace.add_dataset(dataset)
    for name, shift in (("first", 0), ("second", 1)):
        rows = [(f"q{i}", f"doc {i + j + shift}", 10.0 - j) for i in range(6) for j in range(3)]
        workspace.add_run(
            entry.id, Run.from_frame(pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]), name=name)
        )
    at = _open_fusion(open_page("compare", {"ds": entry.id}, timeout=120))
    no_problems(at)
    [button] = [b for b in at.get("download_button") if b.proto.label == "Download TREC run"]
    assert button.proto.disabled
    captions = [c.value for c in at.caption]
    assert any("No TREC file of this run" in c and "contains whitespace" in c for c in captions), captions


def test_the_text_of_the_top_documents_is_sent_only_when_its_section_is_open(faq_ids) -> None:
    at = open_page("compare", {"m": "ndcg", "q": "q009", "cv": "1"})
    no_problems(at)
    folded = [e for e in at.expander if e.label.startswith("Text of the top")]
    assert len(folded) == 2 and all(not list(e.markdown) for e in folded)  # one per ranking, empty while folded
    at.session_state["compare.text.run"] = True  # what a click on its label does (a rerun)
    at.run()
    no_problems(at)
    shown = {e.proto.id.rsplit("-", 1)[-1]: list(e.markdown) for e in at.expander if e.label.startswith("Text of")}
    assert not shown["compare.text.baseline"]
    assert len(shown["compare.text.run"]) >= 3  # the legend, then a head and a text per document
    at.switch_page("overview.py").run()  # paths are the page script's siblings
    at.switch_page("compare.py").run()
    no_problems(at)
    opened = {e.proto.id.rsplit("-", 1)[-1]: e.proto.expanded for e in at.expander if e.label.startswith("Text of")}
    assert opened == {"compare.text.baseline": False, "compare.text.run": True}  # as left, for the session


def _constant_difference_dataset(store: Path) -> str:
    """A dataset of 4 queries and two runs: ``found`` ranks each query's relevant document first, ``missed`` never
    retrieves it, so every compared metric differs by the same amount on each query (the exact sign-flip p, 2^-3,
    bounds no shift at the page's levels)."""
    import pandas as pd

    from dashboard.data.workspace import Workspace
    from ragmetrics.foundation.model import Dataset, Run
    from ragmetrics.store.database import Store

    queries = [f"q{i}" for i in range(4)]
    judged = [(q, f"rel-{q}", 1) for q in queries] + [(q, f"other-{q}", 0) for q in queries]
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    dataset = Dataset.from_frames(qrels, pd.DataFrame({"query_id": queries}), name="constant")
    workspace = Workspace(Store(f"sqlite:///{store / 'ragmetrics.sqlite'}"), cache_bytes=1 << 26)
    entry = workspace.add_dataset(dataset)
    for name, first in (("missed", "other"), ("found", "rel")):
        rows = [(q, f"{first}-{q}" if j == 0 else f"x{j}-{q}", 10.0 - j) for q in queries for j in range(3)]
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
        workspace.add_run(entry.id, Run.from_frame(frame, name=name))
    return entry.id


@pytest.mark.parametrize("page", ["overview", "compare"])
def test_a_constant_difference_s_interval_reads_no_bound_not_nan(own_store, page) -> None:
    """Was: the verdict printed ``[+nan, +nan]`` (and Compare's adjusted column ``— at 95%``) where the CLI prints
    ``[no bound]`` with a note."""
    dataset = _constant_difference_dataset(own_store)
    at = open_page(page, {"ds": dataset, "m": "hits", "k": "10"})
    no_problems(at)
    [verdict] = [m.value for m in at.markdown if "**Verdict.**" in m.value]
    assert "nan" not in verdict.lower()
    assert "[no bound]" in verdict and "the difference is the same on each of the 4 queries" in verdict
    if page == "compare":
        table = _table(at, "Δ vs baseline")
        adjusted = table.loc[table["run"] == "found", "Δ CI (Holm-adjusted)"]
        assert all(cell.startswith("[no bound] at ") for cell in adjusted)


def test_the_timeline_s_step_of_a_constant_difference_reads_no_bound(own_store) -> None:
    """Was: the step's interval read ``[+nan, +nan]``."""
    dataset = _constant_difference_dataset(own_store)
    at = open_page("timeline", {"ds": dataset, "m": "hits@10"})
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "Δ previous" in d.value.columns)
    [interval] = [c for c in table.columns if c.startswith("Δ ") and "CI" in c]
    assert table[interval].tolist()[1:] == ["[no bound]"]
