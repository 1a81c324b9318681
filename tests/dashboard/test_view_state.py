"""The URL codec (dashboard.core.share): round trips, a fixed point, never raising, notes for what it drops; the one
link builder that ``ragmetrics push`` and the dashboard share; and reconcile against loaded data."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.core import share
from dashboard.core.share import PARAM_KEYS, ViewState, decode, encode, share_link, share_query, share_url
from dashboard.core.view_state import Facts, reconcile
from dashboard.views import VIEWS
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.foundation.ids import is_content_id

PAGES = [v.key for v in VIEWS]

FULL = ViewState(
    page="missed",
    dataset="6d5d0047d3d731a2",
    runs=("6475a854ed3be87f", "41248b0b0ca4e752"),
    baseline="6475a854ed3be87f",
    metric="ndcg",
    k=10,
    profile="legal",
    targets="recall@5>0.95;mrr>0.8",
    category="退款",
    difficulty="hard",
    focus_run="41248b0b0ca4e752",
    query="q012",
    search="发票 & refund",
    test="randomization",
    alpha=0.01,
)


def test_round_trip_full_state() -> None:
    params = encode(FULL)
    assert set(params) <= set(PARAM_KEYS)
    state, notes = decode(params, "missed")
    assert notes == []
    assert state == FULL


def test_defaults_are_short() -> None:
    assert encode(ViewState()) == {"v": "1", "m": "recall", "k": "5"}  # no targets profile until one is picked
    assert decode({})[0] == ViewState()


def test_lists_and_repeated_keys_as_apptest_and_query_params_give_them() -> None:
    state, notes = decode({"runs": ["a1", "b2,c3"], "k": ["3", "7"], "ds": ["d1"]})
    assert state.runs == ("a1", "b2", "c3") and state.k == 7 and state.dataset == "d1" and notes == []


def test_metric_with_cutoff_sets_k() -> None:
    state, _ = decode({"m": "nDCG@10"})
    assert (state.metric, state.k) == ("ndcg", 10)
    state, _ = decode({"m": "nDCG@10", "k": "3"})
    assert (state.metric, state.k) == ("ndcg", 3)


def test_bad_values_fall_back_with_notes() -> None:
    state, notes = decode(
        {
            "k": "abc",
            "m": "ndgc",
            "prof": "nope",
            "ds": "../../etc/passwd",
            "runs": "ok1,bad id",
            "tgt": "recall@5>0.9;junk",
            "unknown": "x",
            "v": "9",
            "fr": "<script>",
        },
        "nowhere",
        pages=PAGES,
    )
    assert state.k == 5 and state.metric == "recall" and state.profile == ""
    assert state.dataset is None and state.runs == ("ok1",) and state.targets == "recall@5>0.9"
    assert state.page == "overview" and state.focus_run is None
    text = " ".join(notes)
    for fragment in ("K must be a whole number", "ndgc", "nope", "not an id", "junk", "version", "unknown page"):
        assert fragment in text, fragment
    clamped, notes = decode({"k": "1000"})
    assert clamped.k == 100 and "between 1 and 100" in notes[0]


def test_compare_test_and_alpha_travel_only_when_not_the_default() -> None:
    assert encode(ViewState(test="wilcoxon", alpha=0.1)) == {
        "v": "1",
        "m": "recall",
        "k": "5",
        "t": "wilcoxon",
        "a": "0.1",
    }
    assert decode({"t": "bootstrap", "a": "0.10"}) == (ViewState(test="bootstrap", alpha=0.1), [])
    state, notes = decode({"t": "anova", "a": "0.5"})
    assert (state.test, state.alpha) == ("t", 0.05)
    assert "unknown test 'anova'" in notes[0] and "alpha must be one of 0.01, 0.05, 0.1, got '0.5'" in notes[1]


def test_metric_offered_only() -> None:
    state, notes = decode({"m": "bpref"})
    assert state.metric == "recall" and "not offered" in notes[0]


values = st.one_of(st.text(max_size=30), st.lists(st.text(max_size=10), max_size=3))


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from([*PARAM_KEYS, "x", ""]), values, max_size=8),
    st.one_of(st.none(), st.text(max_size=8)),
)
def test_decode_never_raises_and_encode_decode_is_a_fixed_point(params, page) -> None:
    state, notes = decode(params, page)
    assert isinstance(state, ViewState) and isinstance(notes, list)
    once = encode(state)
    again, more = decode(once, state.page)
    assert encode(again) == once and more == []


def test_decode_survives_non_mappings() -> None:
    state, notes = decode(None)  # type: ignore[arg-type]
    assert state == ViewState() and notes


def test_share_query_matches_the_library_link() -> None:
    query = share_query(FULL)
    path, _, qs = query.partition("?")
    assert path == "missed"
    assert decode(parse_qs(qs), path)[0] == FULL
    url = share_url("http://host:8501/", FULL.with_(page="overview"))
    assert urlsplit(url).path == "/overview"
    # ragmetrics push prints links the dashboard reads
    link = share_link("http://host:8501", dataset="6d5d0047d3d731a2", runs=["6475a854ed3be87f"])
    parts = urlsplit(link)
    state, notes = decode(parse_qs(parts.query), parts.path.strip("/"))
    assert notes == [] and state.page == "overview"
    assert state.dataset == "6d5d0047d3d731a2" and state.runs == ("6475a854ed3be87f",)
    assert set(PAGES) >= {"overview", "upload", "breakdown", "missed", "diagnosis", "metrics"}
    # the link is the short form, exactly as push prints it
    assert link == "http://host:8501/overview?ds=6d5d0047d3d731a2&runs=6475a854ed3be87f"
    assert share_link("http://h", dataset="6d5d0047d3d731a2", page="missed", k=10).endswith(
        "/missed?ds=6d5d0047d3d731a2&k=10"
    )


def test_share_link_refuses_malformed_ids() -> None:
    import pytest

    from ragmetrics.foundation.errors import RagMetricsError

    with pytest.raises(RagMetricsError, match="not a valid id"):
        share_link("http://h", dataset="../etc")
    with pytest.raises(RagMetricsError, match="run"):
        share_link("http://h", dataset="6d5d0047d3d731a2", runs=["x y"])
    assert is_content_id("0123456789abcdef") and not is_content_id("0123456789ABCDEF") and not is_content_id(None)


def test_the_page_list_is_the_views_and_the_codec_checks_only_a_pages_shape() -> None:
    default = next(v for v in VIEWS if v.default)
    assert default.key == share.DEFAULT_PAGE == ViewState().page
    assert decode({}, "missed")[0].page == "missed" and decode({}, "missed", pages=PAGES) == (
        ViewState(page="missed"),
        [],
    )
    state, notes = decode({}, "../../x")  # not a page key at all
    assert state.page == share.DEFAULT_PAGE and "unknown page" in notes[0]
    state, notes = decode({}, "nowhere")  # well-formed: reconcile checks it against the pages
    assert state.page == "nowhere" and notes == []
    fitted, notes = reconcile(state, ["d1"], _facts, pages=PAGES)
    assert fitted.page == "overview" and "unknown page 'nowhere'" in notes[0]
    assert reconcile(ViewState(page="compare"), ["d1"], _facts, pages=PAGES)[0].page == "compare"


def test_choices_come_from_the_library_registries() -> None:
    from ragmetrics.analysis.stats import TESTS
    from ragmetrics.analysis.targets import PROFILES
    from ragmetrics.engine.metrics import CURVE_METRICS

    assert set(share.METRIC_CHOICES) == {*CURVE_METRICS, "rprec"}
    for test in TESTS:
        assert decode({"t": test})[0].test == test
    for profile in PROFILES:
        assert decode({"prof": profile})[0].profile == profile
    assert all(decode({"a": f"{a:g}"})[0].alpha == a for a in share.ALPHAS)


def test_the_codec_imports_neither_plotly_nor_sqlalchemy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, dashboard.core.share, dashboard.core.view_state; "
        "bad = [m for m in ('plotly', 'sqlalchemy', 'streamlit') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _facts(_dataset: str) -> Facts:
    return Facts(
        runs=["r1", "r2", "r3"], categories=["a", "b"], difficulties=["easy"], has_query=lambda q: q == "q1", k_max=100
    )


def test_reconcile_unknown_ids_fall_back_with_a_clear_note() -> None:
    state, notes = reconcile(ViewState(dataset="dead", runs=("r1",)), ["d1", "d2"], _facts)
    assert state.dataset == "d1" and state.runs == ("r1", "r2", "r3")
    assert "dataset dead" in notes[0] and "upload the same files" in notes[0]
    state, notes = reconcile(
        ViewState(
            dataset="d2", runs=("r2", "zz"), baseline="zz", category="c", difficulty="easy", query="q9", focus_run="zz"
        ),
        ["d1", "d2"],
        _facts,
    )
    assert state.dataset == "d2" and state.runs == ("r2",) and state.baseline is None and state.focus_run == "r2"
    assert state.category is None and state.difficulty == "easy" and state.query is None
    assert len(notes) == 3
    empty, notes = reconcile(FULL, [], _facts)
    assert empty.dataset is None and empty.runs == () and notes == []


def test_runs_cleared_by_the_user_stay_cleared_and_a_link_without_runs_selects_the_first() -> None:
    """Was: clearing every run read as "all" on the next page and in the link (an empty selection was no key)."""
    cleared = ViewState(dataset="d1", no_runs=True)
    assert encode(cleared)["runs"] == share.NO_RUNS
    decoded, notes = decode(encode(cleared), page="overview")
    assert decoded.no_runs and decoded.runs == () and notes == []
    state, _ = reconcile(decoded, ["d1"], _facts)
    assert state.runs == () and state.no_runs
    state, _ = reconcile(ViewState(dataset="d1"), ["d1"], _facts)  # no key: the first runs, as before
    assert state.runs == ("r1", "r2", "r3") and not state.no_runs
    state, _ = reconcile(ViewState(dataset="dead", no_runs=True), ["d1"], _facts)  # another dataset: its first runs
    assert state.runs == ("r1", "r2", "r3")
    added = cleared.with_run("r2")
    assert added is not None and added.runs == ("r2",) and not added.no_runs and encode(added)["runs"] == "r2"


def test_every_control_of_the_pages_travels_and_bad_values_fall_back() -> None:
    state = ViewState(
        profile="tech",
        correction="bonferroni",
        metrics=(parse_metric("ndcg@10"), parse_metric("recall@100")),
        outcome="win",
        power=0.9,
        delta=0.02,
        depth=20,
        queue="plan",
        plan="category",
        shown_judge="judge:endpoint@1#0123abcd",
        bounds=True,
    )
    assert decode(encode(state)) == (state, [])
    assert decode(encode(state, defaults=False)) == (state, [])
    assert "ms" not in encode(ViewState()) and "c" not in encode(ViewState())
    bad, notes = decode(
        {"c": "fdr", "ms": "ndcg10,recall@5", "o": "draw", "pw": "0.7", "d": "2", "dp": "x", "jb": "yes"}
    )
    assert (bad.correction, bad.metrics, bad.outcome, bad.power, bad.delta, bad.depth, bad.bounds) == (
        "holm", (parse_metric("recall@5"),), "loss", 0.8, 0.05, 10, False
    )  # fmt: skip
    assert "ignored the link's 'jb' value 'yes'" in notes[-1]
    assert len(notes) == 7 and "unknown correction 'fdr'" in notes[0] and "'ndcg10'" in notes[1]
    judged, notes = decode({"jq": "loudest", "jp": "by-length", "js": "alice"})
    assert (judged.queue, judged.plan, judged.shown_judge) == ("impact", "random", None) and len(notes) == 3
