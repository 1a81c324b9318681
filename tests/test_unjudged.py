"""Unjudged documents as a stated convention: condensed lists equal trec_eval on the condensed ranking,
judged@k equals a direct count, and the bounds the judgments leave open are the worst and the best value over
every way of judging the unjudged documents (brute force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragmetrics as rm
from ragmetrics.engine.bounds import JUDGMENT_COVERAGE
from ragmetrics.engine.metrics import METRICS
from tests import oracle
from tests.test_parity_pytrec_eval import PAIRS, TREC, generate_case


def _condensed(qrels, rows, rel_level=1):
    """The rows trec_eval -J keeps: a negative label (below a non-negative rel_level) is not a judgment there."""
    judged = {(q, d) for q, d, label in qrels if label >= min(0, rel_level)}
    return [r for r in rows if (r[0], r[1]) in judged]


@pytest.mark.parametrize(("qrels_file", "run_file", "rel_level"), PAIRS)
def test_skip_equals_trec_eval_on_the_ranking_without_its_unjudged_documents(qrels_file, run_file, rel_level):
    qrels = oracle.read_qrels(TREC / qrels_file)
    rows = oracle.read_run(TREC / run_file)
    reference = oracle.pytrec_values(qrels, _condensed(qrels, rows, rel_level), rel_level=rel_level)
    values = oracle.our_values(qrels, rows, missing="skip", rel_level=rel_level, unjudged="skip")
    compared = oracle.assert_same(values.loc[list(reference)], reference)
    assert compared == len(reference) * len(oracle.our_metric_names())


@pytest.mark.parametrize("seed", range(0, 200, 5))
def test_skip_equals_trec_eval_on_generated_cases(seed):
    qrels, rows, rel_level = generate_case(seed)
    condensed = _condensed(qrels, rows, rel_level)
    reference = oracle.pytrec_values(qrels, condensed, rel_level=rel_level)
    values = oracle.our_values(qrels, rows, rel_level=rel_level, unjudged="skip")
    oracle.assert_same(values.loc[[q for q in reference if q in values.index]], reference)


@pytest.mark.parametrize("seed", range(0, 200, 5))
def test_judged_at_k_is_the_share_of_the_top_k_the_qrels_label(seed):
    qrels, rows, _ = generate_case(seed)
    judged = {(q, d) for q, d, _ in qrels}
    ranked = oracle.trec_order(rows)
    result = rm.evaluate(
        oracle.dataset_of(qrels), oracle.run_of(rows), ["judged@1", "judged@5", "judged@20"], warn=False
    )
    values = result.per_query("run")
    for qid in values.index:
        docs = ranked.get(qid, [])
        for k in (1, 5, 20):
            read = min(k, len(docs))  # a shorter ranking is read over what it ranks (ir_measures' Judged@k)
            expected = sum((qid, d) in judged for d in docs[:k]) / read if read else 0.0
            assert values.at[qid, f"judged@{k}"] == expected


CUT = [m for m, info in METRICS.items() if info.cut is not None and not (info.needs_corpus or info.needs_text)]
FULL = [m for m, info in METRICS.items() if info.full is not None]


def _labelings_case(seed: int):
    """A small case: one to three queries, each with a judgment, rankings of up to eight documents (ties included),
    judged labels 0-2 (some judged documents not retrieved), at most six unjudged retrieved documents per query."""
    rng = np.random.default_rng(seed)
    qrels, rows = [], []
    for qi in range(int(rng.integers(1, 4))):
        qid = f"q{qi}"
        docs = [f"d{i}" for i in range(int(rng.integers(1, 9)))]
        unjudged = set(rng.choice(docs, size=min(len(docs), int(rng.integers(0, 7))), replace=False))
        qrels += [(qid, d, int(rng.integers(0, 3))) for d in docs if d not in unjudged]
        qrels += [(qid, f"x{i}", int(rng.integers(0, 3))) for i in range(int(rng.integers(0, 3)))]
        if not any(q == qid for q, _, _ in qrels):
            qrels.append((qid, "x9", 1))  # every query is judged somewhere, so every query is evaluated
        rows += [(qid, d, float(rng.integers(0, 4))) for d in docs]
    return qrels, rows, int(rng.choice([1, 2]))


@pytest.mark.parametrize("seed", range(60))
def test_the_bounds_are_the_worst_and_best_value_over_every_labeling(seed):
    """Every way of judging a query's unjudged retrieved documents (0 or the relevance threshold; with a depth, only
    those in its top depth), enumerated: its worst and best values are the bounds, for every metric and cut-off."""
    qrels, rows, rel_level = _labelings_case(seed)
    depth = (None, 2, 4)[seed % 3]
    ranked = oracle.trec_order(rows)
    alignment = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level)
    metrics = [f"{m}@{k}" for m in CUT if m not in JUDGMENT_COVERAGE for k in (1, 2, 3, 5)]
    metrics += [m for m in FULL if m not in JUDGMENT_COVERAGE]
    judged = {(q, d) for q, d, _ in qrels}
    queries = list(alignment.query_ids)
    worst = {m: np.full(len(queries), np.inf) for m in metrics}
    best = {m: np.full(len(queries), -np.inf) for m in metrics}
    for i, qid in enumerate(queries):
        unjudged = [d for d in ranked[qid][:depth] if (qid, d) not in judged]
        for labels in itertools.product([0, max(rel_level, 1)], repeat=len(unjudged)):
            completed = qrels + [(qid, d, g) for d, g in zip(unjudged, labels)]
            values = rm.align(oracle.dataset_of(completed), oracle.run_of(rows), rel_level=rel_level)
            for m in metrics:
                worst[m][i] = min(worst[m][i], values.value(m)[i])
                best[m][i] = max(best[m][i], values.value(m)[i])
    for m in metrics:
        low, high = alignment.bounds(m, depth)
        np.testing.assert_allclose(low, worst[m], rtol=0, atol=1e-12, err_msg=m)
        np.testing.assert_allclose(high, best[m], rtol=0, atol=1e-12, err_msg=m)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 5, 10, 30]))
def test_the_bounds_bracket_trec_eval_and_the_best_case_convention(seed, k):
    """trec_eval's value (unjudged as non-relevant) and the ``relevant`` convention's are judgings of the unjudged
    documents, so they lie within the bounds; bpref aside, which skips what stays unjudged. A ranking whose documents
    are all judged has nothing to bound."""
    qrels, rows, rel_level = generate_case(seed)
    alignment = rm.align(oracle.dataset_of(qrels), oracle.run_of(rows), rel_level=rel_level)
    optimistic = alignment.under(unjudged="relevant")
    for metric in [f"{m}@{k}" for m in CUT] + FULL:
        low, high = alignment.bounds(metric)
        assert np.all((low >= 0) & (low <= high) & (high <= 1 + 1e-12)), metric
        if rm.parse_metric(metric).name != "bpref":
            for value in (alignment.value(metric), optimistic.value(metric)):
                assert np.all((low - 1e-12 <= value) & (value <= high + 1e-12)), metric
        if not rm.parse_metric(metric).info.reads_relevant_count:
            assert np.array_equal(low, alignment.value(metric)), metric  # rising: trec_eval's is the worst case
    full = rm.align(oracle.dataset_of(qrels), oracle.run_of(_condensed(qrels, rows)), rel_level=rel_level)
    for metric in [f"{m}@{k}" for m in CUT] + FULL:
        low, high = full.bounds(metric)
        assert np.array_equal(low, high) and np.array_equal(low, full.value(metric)), metric


def test_ap_can_fall_when_an_unjudged_document_is_judged_relevant():
    """Why AP's bounds are searched: a new relevant document far down adds to R more than to the sum."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, **{f"n{i}": 0 for i in range(48)}}})
    run = rm.Run.from_dict({"q1": {"d1": 10.0, **{f"n{i}": 9.0 - i / 100 for i in range(48)}, "u": 0.0}})
    alignment = rm.align(dataset, run)
    assert alignment.value("map")[0] == 1.0
    assert alignment.under(unjudged="relevant").value("map")[0] == pytest.approx((1 + 2 / 50) / 2)
    assert [b[0] for b in alignment.bounds("map")] == [pytest.approx(0.52), 1.0]


def test_bpref_can_fall_when_an_unjudged_document_is_judged_relevant():
    """bpref skips unjudged documents under the other conventions; judged relevant below five non-relevant ones,
    one sits where it adds 0 and doubles R."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, **{f"n{i}": 0 for i in range(5)}}})
    run = rm.Run.from_dict({"q1": {"d1": 10.0, **{f"n{i}": 9.0 - i for i in range(5)}, "u": 0.0}})
    alignment = rm.align(dataset, run)
    assert alignment.value("bpref")[0] == alignment.under(unjudged="skip").value("bpref")[0] == 1.0
    assert alignment.under(unjudged="relevant").value("bpref")[0] == 0.5
    assert [b[0] for b in alignment.bounds("bpref")] == [0.5, 1.0]


def test_the_optimistic_bound_judges_unjudged_documents_relevant_within_the_cut_off():
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0, "d5": 1}})
    run = rm.Run.from_dict({"q1": {"u9": 4.0, "d2": 3.0, "d1": 2.0, "u8": 1.0}})
    optimistic = rm.align(dataset, run, unjudged="relevant")
    # top 2 = u9 (now relevant), d2: TP 1 of R = 2 + 1
    assert optimistic.value("recall@2")[0] == pytest.approx(1 / 3)
    assert optimistic.value("precision@2")[0] == 0.5
    # the whole ranking: u9 and u8 relevant, R = 4; AP = (1/1 + 2/3 + 3/4) / 4
    assert optimistic.value("map")[0] == pytest.approx((1 + 2 / 3 + 3 / 4) / 4)
    assert rm.align(dataset, run, unjudged="nonrelevant").value("map")[0] == pytest.approx((1 / 3) / 2)


def test_llamaindex_mode_refuses_other_unjudged_conventions():
    with pytest.raises(rm.RagMetricsError, match="LlamaIndex mode"):
        rm.Conventions.llamaindex(unjudged="skip")


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_every_judgings_delta_lies_within_the_comparisons_bounds(seed):
    """Two runs on the same small case, every way of judging the documents either leaves unjudged enumerated: each
    judging's mean delta lies within ``delta_worst`` .. ``delta_best``, each mean within its own ends (a case of one
    query too: ``compare_result`` keeps the rows ``compare`` refuses as a paired test)."""
    from ragmetrics.analysis.compare import compare_result

    qrels, rows, rel_level = _labelings_case(seed)
    rng = np.random.default_rng(seed)
    other = [(q, d, float(rng.integers(0, 4))) for q, d, _ in rows]
    runs = [oracle.run_of(rows, "a"), oracle.run_of(other, "b")]
    metrics = ["ndcg@3", "map", "recall@2", "precision@2"]
    result = rm.evaluate(oracle.dataset_of(qrels), runs, metrics, rel_level=rel_level, warn=False)
    table = compare_result(result, bounds=True).table
    judged = {(q, d) for q, d, _ in qrels}
    queries = {q for q, _, _ in qrels}  # a query without judgments is not evaluated, nor judged here
    unjudged = sorted({(q, d) for q, d, _ in rows if (q, d) not in judged and q in queries})[:8]
    grade = max(rel_level, 1)
    seen = 0
    for labels in itertools.product([0, grade], repeat=len(unjudged)):
        completed = oracle.dataset_of(qrels + [(q, d, g) for (q, d), g in zip(unjudged, labels)])
        a, b = (rm.align(completed, run, rel_level=rel_level) for run in runs)
        for metric in metrics:
            row = table[(table["metric"] == metric) & (table["run"] == "b")].iloc[0]
            delta = float((b.value(metric) - a.value(metric)).mean())
            assert row["delta_worst"] - 1e-12 <= delta <= row["delta_best"] + 1e-12, metric
            assert row["mean_worst"] - 1e-12 <= b.mean(metric) <= row["mean_best"] + 1e-12, metric
            seen += 1
    assert seen == len(metrics) * 2 ** len(unjudged)


def test_could_flip_marks_a_delta_whose_sign_the_judgments_do_not_settle():
    from ragmetrics.analysis.compare import compare

    dataset = rm.Dataset.from_dict({"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 1, "d2": 0}})
    settled = [rm.Run.from_dict({q: {"d2": 2.0, "d1": 1.0} for q in ("q1", "q2")}, name="base")]
    settled.append(rm.Run.from_dict({q: {"d1": 2.0, "d2": 1.0} for q in ("q1", "q2")}, name="better"))
    table = compare(dataset, settled, ["mrr"], bounds=True, warn=False).table.set_index("run")
    assert table.at["better", "delta"] == 0.5 and not table.at["better", "could_flip"]
    assert table.at["better", "delta_worst"] == table.at["better", "delta_best"] == 0.5  # everything is judged
    open_ = [settled[0], rm.Run.from_dict({q: {"d1": 2.0, "u": 3.0} for q in ("q1", "q2")}, name="open")]
    table = compare(dataset, open_, ["mrr"], bounds=True, warn=False).table.set_index("run")
    # "open" ranks an unjudged document first: 1/2 (= the baseline) if it is not relevant, 1 if it is
    assert table.at["open", "delta"] == 0.0 and not table.at["open", "could_flip"]
    assert (table.at["open", "delta_worst"], table.at["open", "delta_best"]) == (0.0, 0.5)
    worse = [settled[1], open_[1]]
    table = compare(dataset, worse, ["mrr"], bounds=True, warn=False).table.set_index("run")
    assert table.at["open", "delta"] == -0.5 and table.at["open", "could_flip"]


def _cli(*argv):
    import io

    from ragmetrics.cli import main

    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_cli_bounds_print_each_means_two_ends():
    import json

    from ragmetrics.io import load_dataset, load_run

    scifact = "tests/data/scifact"
    args = ["--dataset", f"{scifact}/qrels.tsv", "--run", f"{scifact}/bm25-stem.trec.gz", "-m", "ndcg@10", "-m", "map"]
    alignment = rm.align(load_dataset(f"{scifact}/qrels.tsv"), load_run(f"{scifact}/bm25-stem.trec.gz"))
    code, table, _ = _cli("eval", *args, "--bounds")
    assert code == 0
    for metric in ("ndcg@10", "map"):
        worst, best = (end.mean() for end in alignment.bounds(metric))
        assert f"{metric + ':worst':<22}\tall\t{worst:.4f}\n" in table
        assert f"{metric + ':best':<22}\tall\t{best:.4f}\n" in table
        assert worst < alignment.mean(metric) < best
    code, printed, _ = _cli("eval", *args, "--bounds", "--format", "json")
    ends = json.loads(printed)["runs"]["bm25-stem"]["bounds"]["map"]
    assert (ends["worst"], ends["best"]) == tuple(float(end.mean()) for end in alignment.bounds("map"))
    code, printed, _ = _cli("eval", *args, "--bounds", "--format", "csv")
    assert [line.split(",")[1] for line in printed.splitlines()[1:]] == ['"all"', '"worst"', '"best"']
    code, printed, _ = _cli("eval", *args)
    assert ":worst" not in printed
    code, _, err = _cli("eval", *args, "--bounds", "--engine", "duckdb")
    assert code == 2 and "--bounds: read only with --engine inprocess, not --engine duckdb" in err
    code, table, _ = _cli("eval", *args, "--bounds", "10")
    worst, best = (end.mean() for end in alignment.bounds("map", 10))
    assert f"{'map:worst':<22}\tall\t{worst:.4f}\n" in table and f"{'map:best':<22}\tall\t{best:.4f}\n" in table
    assert alignment.bounds("map")[0].mean() < worst  # the top 10 leave less open than the whole ranking
    code, _, err = _cli("eval", *args, "--bounds", "0")
    assert code == 2 and "--bounds: expected a depth of at least 1" in err


def test_cli_compare_bounds_mark_a_verdict_the_judgments_could_flip():
    scifact = "tests/data/scifact"
    code, printed, _ = _cli(
        "compare", "--dataset", f"{scifact}/qrels.tsv", "--baseline", f"{scifact}/bm25-stem.trec.gz",
        "--run", f"{scifact}/hybrid-rrf60.trec.gz", "-m", "ndcg@10", "--bounds",
    )  # fmt: skip
    assert code == 0
    line = next(x for x in printed.splitlines() if x.startswith("ndcg@10"))
    assert "if judged delta [-0.8324, +0.8424]!" in line  # SciFact judges ~9% of the top 10: the verdict is open
    assert "! = the judgments could flip its sign" in printed


def test_cli_check_bounds_say_whether_the_judgments_could_flip_each_check():
    from ragmetrics.io import load_dataset, load_run

    scifact = "tests/data/scifact"
    code, printed, _ = _cli(
        "check", "--dataset", f"{scifact}/qrels.tsv", "--run", f"{scifact}/hybrid-rrf60.trec.gz",
        "--targets", "ndcg@10>0.65,mrr>0.1", "--bounds", "10",
    )  # fmt: skip
    assert code == 0
    alignment = rm.align(load_dataset(f"{scifact}/qrels.tsv"), load_run(f"{scifact}/hybrid-rrf60.trec.gz"))
    worst, best = (end.mean() for end in alignment.bounds("ndcg@10", 10))
    lines = printed.splitlines()
    assert (
        lines[1] == f"  if judged: ndcg@10 from {worst:.4f} to {best:.4f}; the unjudged documents could flip this check"
    )
    assert worst < 0.65  # so it could
    assert lines[3].startswith("  if judged: mrr from ") and lines[3].endswith("; no judging flips this check")
    code, plain, _ = _cli(
        "check", "--dataset", f"{scifact}/qrels.tsv", "--run", f"{scifact}/hybrid-rrf60.trec.gz",
        "--targets", "ndcg@10>0.65,mrr>0.1",
    )  # fmt: skip
    assert "if judged" not in plain and plain.splitlines()[0] == lines[0]
