"""The engine's conventions, each on a case small enough to check by hand."""

from __future__ import annotations

import random
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import ragmetrics as rm


def dataset(qrels, queries=None, corpus_size=None):
    frame = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    return rm.Dataset.from_frames(frame, None if queries is None else pd.DataFrame(queries), corpus_size=corpus_size)


def run(rows, name="run", **extra):
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", *extra])
    return rm.Run.from_frame(frame, name=name)


# --- metric names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("nDCG@10", "ndcg@10"),
        ("NDCG@10", "ndcg@10"),
        ("P@5", "precision@5"),
        ("R@5", "recall@5"),
        ("RR", "mrr"),
        ("MRR@10", "mrr@10"),
        ("AP", "map"),
        ("MAP@100", "map@100"),
        ("hit_rate@5", "hits@5"),
        ("success@5", "hits@5"),
        ("P_5", "precision@5"),
        ("ndcg_cut_10", "ndcg@10"),
        ("recip_rank", "mrr"),
        ("Rprec", "rprec"),
        ("bpref", "bpref"),
        ("F1@3", "f1@3"),
        ("accuracy@5", "accuracy@5"),
    ],
)
def test_aliases_parse_to_canonical_names(text, canonical):
    assert str(rm.parse_metric(text)) == canonical


def test_unknown_metric_suggests_the_closest_and_lists_all():
    with pytest.raises(
        rm.MetricNameError, match=r"unknown metric 'ndgc@10'; did you mean 'ndcg@10'\? Known: precision@k, recall@k"
    ):
        rm.parse_metric("ndgc@10")


@pytest.mark.parametrize(
    ("text", "message"),
    [("precision", "needs a cut-off"), ("rprec@5", "takes no cut-off"), ("ndcg@0", "is a whole number >= 1, found 0")],
)
def test_bad_cut_offs_are_explained(text, message):
    with pytest.raises(rm.MetricNameError, match=message):
        rm.parse_metric(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("recal@512tok", r"did you mean 'recall@512tok'\?"),  # the budget kept: not 512 documents
        ("set_precison@5", r"did you mean 'set_precision'\?"),  # it takes no cut-off: none offered
        ("precison", r"did you mean 'precision@k'\?"),  # it needs one
        ("context_precision@5", r"is an evidence metric: it reads gold spans, and `ragmetrics evidence` computes it"),
        ("evidence_recall@512tok", r"is an evidence metric"),
    ],
)
def test_a_suggestion_is_a_name_that_parses(text, message):
    with pytest.raises(rm.MetricNameError, match=message):
        rm.parse_metric(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("P_5.0", r"'P_5.0': the cut-off k is a whole number >= 1, found 5.0; did you mean 'precision@5'\?"),
        ("ndcg@10.0", r"found 10.0; did you mean 'ndcg@10'\?"),
        ("ndcg_cut_10.0", r"did you mean 'ndcg@10'\?"),
        ("recall@2.5", r"found 2.5$"),
    ],
)
def test_a_cut_off_with_decimals_is_named_as_such(text, message):
    """Not read as another name at k 0 (``P_5`` at ``.0`` was answered with 'precision@0')."""
    with pytest.raises(rm.MetricNameError, match=message):
        rm.parse_metric(text)


def test_every_registered_metric_has_formula_and_conventions():
    for info in rm.METRICS.values():
        assert info.formula and info.conventions and info.pretty
        assert (info.cut is not None) == (info.k in ("required", "optional"))
        assert (info.full is not None) == (info.k in ("optional", "none"))


# --- alignment and coverage ---------------------------------------------------------------


def test_coverage_reports_every_mismatch():
    ds = dataset(
        [("q1", "a", 1), ("q2", "b", 1), ("q3", "c", 0)],
        queries=[
            {"query_id": q, "query": t} for q, t in [("q1", "one"), ("q2", "two"), ("q3", "three"), ("q4", "four")]
        ],
    )
    r = run(
        [("q1", "a", 1.0), ("q1", "a", 0.5), ("q1", "x", 1.0), ("q1", "y", 1.0), ("three", "c", 2.0), ("zz", "a", 1.0)]
    )
    with pytest.warns(
        rm.RagMetricsWarning,
        match=r"1 judged queries missing from the run \(scored 0\); 1 run queries not in the dataset \(dropped\)",
    ):
        result = rm.evaluate(ds, r, ["precision@2", "mrr"])
    cov = result.coverage["run"]
    assert cov.missing_in_run == ["q2"]
    assert cov.not_in_dataset == ["zz"] and cov.rows_not_in_dataset == 1
    assert cov.no_judgments == ["q4"]
    assert cov.no_relevant == ["q3"]
    assert cov.matched_by_text == 1
    assert cov.duplicates_dropped == 1 and cov.duplicate_queries == ["q1"]
    assert cov.tied_pairs == 2 and cov.tied_queries == ["q1"]
    values = result.per_query("run")
    assert list(values.index) == ["q1", "q2", "q3"]
    # q1: a (1.0), y (1.0), x (1.0) tie on score -> doc_id descending: y, x, a
    assert values.at["q1", "mrr"] == pytest.approx(1 / 3)
    assert values.at["q2", "mrr"] == 0.0  # missing from the run: an empty ranking
    skip = rm.evaluate(ds, r, ["mrr"], missing="skip", warn=False).per_query("run")
    assert list(skip.index) == ["q1", "q3"]


def test_duplicates_keep_the_best_ranked_occurrence_or_error():
    ds = dataset([("q", "a", 1), ("q", "b", 1)])
    r = run([("q", "b", 0.1), ("q", "c", 0.5), ("q", "b", 0.9)])
    assert rm.evaluate(ds, r, ["mrr"], warn=False).per_query("run").at["q", "mrr"] == 1.0
    with pytest.raises(rm.RagMetricsError, match=r"query 'q' lists document 'b' more than once"):
        rm.evaluate(ds, r, ["mrr"], duplicates="error")


def test_file_order_option_ignores_scores():
    ds = dataset([("q", "a", 1)])
    r = run([("q", "b", 0.1), ("q", "a", 0.9)])
    assert rm.evaluate(ds, r, ["mrr"]).per_query("run").at["q", "mrr"] == 1.0
    assert rm.evaluate(ds, r, ["mrr"], order="file").per_query("run").at["q", "mrr"] == 0.5


def test_runs_without_scores_keep_their_order():
    ds = dataset([("q", "a", 1)])
    r = rm.Run.from_lists({"q": ["z", "a", "b"]})
    assert not r.has_scores
    assert rm.evaluate(ds, r, ["mrr"]).per_query("run").at["q", "mrr"] == 0.5


def test_chunks_count_at_the_rank_of_their_documents_first_chunk():
    ds = dataset([("q", "doc1", 1), ("q", "doc2", 1)])
    r = run(
        [
            ("q", "doc3#0", 0.9, "doc3"),
            ("q", "doc3#1", 0.8, "doc3"),
            ("q", "doc1#4", 0.7, "doc1"),
            ("q", "doc1#0", 0.6, "doc1"),
            ("q", "doc2#2", 0.5, "doc2"),
        ],
        source_doc=None,
    )
    result = rm.evaluate(ds, r, ["mrr", "precision@2", "recall@3", "ndcg@3"], warn=False)
    values = result.per_query("run").loc["q"]
    assert values["mrr"] == 0.5  # doc3, doc1, doc2
    assert values["precision@2"] == 0.5 and values["recall@3"] == 1.0
    assert result.coverage["run"].chunks_merged == 2 and result.coverage["run"].duplicates_dropped == 0
    chunk_level = rm.evaluate(ds, r, ["mrr"], level="chunk", warn=False).per_query("run")
    assert chunk_level.at["q", "mrr"] == 0.0  # chunk ids are not judged


def test_level_document_without_a_mapping_is_an_error():
    with pytest.raises(rm.RagMetricsError, match="needs a source_doc column or a chunk mapping"):
        rm.evaluate(dataset([("q", "a", 1)]), run([("q", "a", 1.0)]), ["mrr"], level="document")


def test_accuracy_uses_the_corpus_size():
    ds = dataset([("q1", "a", 1), ("q1", "b", 1), ("q2", "c", 1)], corpus_size=10)
    r = run([("q1", "a", 3.0), ("q1", "x", 2.0), ("q1", "b", 1.0)])
    values = rm.evaluate(ds, r, ["accuracy@2", "accuracy@5"], warn=False).per_query("run")
    # q1 @2: TP=1 FP=1 FN=1 TN=7 -> 8/10; @5 (3 retrieved): TP=2 FP=1 FN=0 TN=7 -> 9/10
    assert values.loc["q1"].tolist() == [0.8, 0.9]
    assert values.loc["q2"].tolist() == [0.9, 0.9]  # empty ranking: (N - R) / N
    with pytest.raises(rm.RagMetricsError, match="needs the corpus size"):
        rm.evaluate(dataset([("q", "a", 1)]), r, ["accuracy@5"], warn=False)


def test_means_count_zero_scored_queries_and_curves_follow_k_max():
    ds = dataset([("q1", "a", 1), ("q2", "b", 1)])
    r = run([("q1", "a", 1.0)])
    result = rm.evaluate(ds, r, ["hits@1"], k_max=4, warn=False)
    assert result.mean().at["run", "hits@1"] == 0.5
    curves = result.curves(["hits", "precision"])
    assert list(curves.columns) == ["run", "metric", "k", "value"]
    assert curves[curves.metric == "precision"].value.tolist() == [0.5, 0.25, 1 / 6, 0.125]


def test_several_runs_and_json_shape():
    ds = dataset([("q", "a", 1)])
    result = rm.evaluate(ds, [run([("q", "a", 1.0)], "good"), run([("q", "b", 1.0)], "bad")], ["P@1", "RR"])
    assert result.metrics == ["precision@1", "mrr"]
    assert result.to_dict(per_query=True) == {
        "runs": {
            "good": {"mean": {"precision@1": 1.0, "mrr": 1.0}, "per_query": {"q": {"precision@1": 1.0, "mrr": 1.0}}},
            "bad": {"mean": {"precision@1": 0.0, "mrr": 0.0}, "per_query": {"q": {"precision@1": 0.0, "mrr": 0.0}}},
        }
    }
    with pytest.raises(rm.RagMetricsError, match="run names must be unique"):
        rm.evaluate(ds, [run([], "x"), run([], "x")], ["mrr"])


def test_inputs_are_not_modified():
    ds = dataset([("q", "a", 1), ("q", "b", 0)])
    r = run([("q", "b", 2.0), ("q", "a", 1.0), ("q", "a", 0.5)])
    before_run, before_qrels = r.frame.copy(), ds.qrels.copy()
    rm.evaluate(ds, r, ["ndcg@2", "map"], warn=False)
    pd.testing.assert_frame_equal(r.frame, before_run)
    pd.testing.assert_frame_equal(ds.qrels, before_qrels)


def test_empty_run_scores_zero_everywhere():
    ds = dataset([("q", "a", 1)])
    result = rm.evaluate(ds, run([]), ["ndcg@10", "map", "mrr", "rprec", "bpref", "hits@5"], warn=False)
    assert result.coverage["run"].empty_run
    assert (result.per_query("run").loc["q"] == 0).all()


# --- LlamaIndex mode against llama_index.core itself ----------------------------------------


def test_llamaindex_mode_equals_llama_index_core():
    metrics = pytest.importorskip("llama_index.core.evaluation.retrieval.metrics")
    rng = random.Random(7)
    compared = 0
    for case in range(150):
        pool = [f"d{i}" for i in range(rng.randint(2, 15))]
        qrels, rows, expected = [], [], {}
        for q in range(rng.randint(1, 5)):
            qid = f"q{case}_{q}"
            exp_ids = rng.sample(pool, rng.randint(0, min(5, len(pool))))
            qrels += [(qid, d, 1) for d in exp_ids] + [(qid, pool[-1] + "x", 0)]
            retrieved = [rng.choice(pool) for _ in range(rng.randint(0, 10))]  # duplicates on purpose
            rows += [(qid, d, 0.0) for d in retrieved]
            expected[qid] = (exp_ids, retrieved)
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
        frame["rank"] = frame.groupby("query_id").cumcount() + 1
        r = rm.Run.from_frame(frame.drop(columns="score"), name="li")
        k = rng.choice([None, 1, 3, 5])
        suffix = "" if k is None else f"@{k}"
        names = ["hit_rate", "mrr", "precision", "recall", "ap", "ndcg"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = rm.evaluate(dataset(qrels), r, [n + suffix for n in names], mode="llamaindex").per_query("li")
        classes = [
            metrics.HitRate(),
            metrics.MRR(),
            metrics.Precision(),
            metrics.Recall(),
            metrics.AveragePrecision(),
            metrics.NDCG(),
        ]
        for qid, (exp_ids, retrieved) in expected.items():
            retrieved = retrieved if k is None else retrieved[:k]
            for column, metric in zip(ours.columns, classes):
                if not exp_ids or not retrieved:
                    assert np.isnan(ours.at[qid, column])  # LlamaIndex raises ValueError here
                    continue
                value = metric.compute(expected_ids=exp_ids, retrieved_ids=retrieved).score
                assert ours.at[qid, column] == pytest.approx(value, abs=1e-12), (qid, column)
                compared += 1
    assert compared > 500


def test_llamaindex_mode_rejects_metrics_it_does_not_have():
    with pytest.raises(rm.MetricNameError, match="no LlamaIndex counterpart"):
        rm.evaluate(dataset([("q", "a", 1)]), run([("q", "a", 1.0)]), ["bpref"], mode="llamaindex")


def test_run_queries_match_by_text_or_by_the_id_derived_from_text():
    ds = dataset(
        [("q1", "a", 1), ("q2", "b", 1)],
        queries=[{"query_id": "q1", "query": "退款 要 多久？"}, {"query_id": "q2", "query": "How much?"}],
    )
    r = run([(" 退款 要 多久？ ", "a", 1.0), (rm.query_id_from_text("How much?"), "b", 1.0)])
    result = rm.evaluate(ds, r, ["mrr"])
    assert result.coverage["run"].matched_by_text == 2
    assert result.per_query("run")["mrr"].tolist() == [1.0, 1.0]


def test_a_held_alignment_is_reused_and_computes_each_metric_once():
    data = dataset([("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 1)])
    ranked = run([("q1", "d2", 3.0), ("q1", "d1", 3.0), ("q1", "d9", 1.0), ("q2", "d3", 0.5)])
    alignment = rm.align(data, ranked)
    first = rm.evaluate(data, alignment, ["ndcg@10"], warn=False)
    again = rm.evaluate(data, [alignment], ["map", "precision@2"], warn=False)
    assert again["run"].alignment is first["run"].alignment is alignment
    assert alignment.value("map") is again["run"].array("map")  # kept, not computed again
    assert not alignment.value("map").flags.writeable
    fresh = rm.evaluate(dataset([("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 1)]), ranked, ["map", "precision@2"])
    pd.testing.assert_frame_equal(again["run"].values, fresh["run"].values)
    # an alignment made under other conventions or on another dataset is refused, not silently reused
    with pytest.raises(rm.RagMetricsError, match="another dataset or under other conventions"):
        rm.evaluate(data, alignment, ["map"], rel_level=2)
    with pytest.raises(rm.RagMetricsError, match="another dataset or under other conventions"):
        rm.evaluate(dataset([("q1", "d9", 1)]), alignment, ["map"])
    assert rm.evaluate(data, ranked, ["map"], rel_level=2, warn=False)["run"].values["map"].tolist() == [0.5, 0.0]
    assert rm.evaluate(dataset([("q1", "d9", 1)]), ranked, ["map"], warn=False)["run"].values["map"].tolist() == [1 / 3]


def test_one_run_against_two_datasets_from_two_threads_gives_each_its_numbers():
    """Nothing is cached on the run: two threads align the same Run object with two datasets at once."""
    from concurrent.futures import ThreadPoolExecutor

    ranked = run([(f"q{i}", f"d{j}", float(-j)) for i in range(200) for j in range(30)])
    first = dataset([(f"q{i}", f"d{i % 30}", 1) for i in range(200)])
    second = dataset([(f"q{i}", f"d{(i * 7) % 30}", 2) for i in range(200)])
    expected = {
        id(d): rm.evaluate(d, run(list(ranked.frame.itertuples(index=False))), ["mrr", "ndcg@10"]).mean()
        for d in (first, second)
    }
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(rm.evaluate, d, ranked, ["mrr", "ndcg@10"]) for _ in range(20) for d in (first, second)]
        results = [(d, job.result()) for job, d in zip(jobs, [first, second] * 20)]
    for d, result in results:
        pd.testing.assert_frame_equal(result.mean(), expected[id(d)])
    assert expected[id(first)].loc["run", "mrr"] != expected[id(second)].loc["run", "mrr"]


def test_a_run_built_from_a_frame_changed_after_a_first_evaluation_gives_the_new_numbers():
    data = dataset([("q1", "d1", 1), ("q2", "d2", 1)])
    frame = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d9", "d2"], "score": [2.0, 1.0, 1.0]})
    before = rm.Run.from_frame(frame, name="run")
    assert rm.evaluate(data, before, ["mrr"])["run"].means["mrr"] == 1.0
    frame.loc[0, "score"] = 0.5  # d9 now ranks first for q1
    after = rm.Run.from_frame(frame, name="run")
    assert rm.evaluate(data, after, ["mrr"])["run"].means["mrr"] == 0.75
    assert rm.evaluate(data, before, ["mrr"])["run"].means["mrr"] == 1.0  # the first run kept its own rows


def test_alignment_values_and_curves_are_computed_once_under_threads():
    from concurrent.futures import ThreadPoolExecutor
    from unittest import mock

    from ragmetrics.engine import metrics as registry

    data = dataset([(f"q{i}", f"d{i}", 1) for i in range(50)])
    ranked = run([(f"q{i}", f"d{j}", float(-j)) for i in range(50) for j in range(40)])
    alignment = rm.align(data, ranked)
    calls = []
    real = registry.curve

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    with mock.patch.object(registry, "curve", counted), ThreadPoolExecutor(4) as pool:
        curves = list(pool.map(lambda _: alignment.curve("recall", 20), range(16)))
    assert calls == ["recall"]
    assert all(np.shares_memory(c, curves[0]) and c.shape == (50, 20) for c in curves)
    assert np.shares_memory(alignment.curve("recall", 100), curves[0])  # a deeper one is the same kept curve


def test_the_python_api_reads_what_peers_pass_and_refuses_what_means_nothing():
    """Was (an adversarial read of the API): a run whose ids meet no judgment scored 0.0 in silence; alpha=1.5
    passed every difference; compare() answered a pair of no shared query with NaN; bytes and int ids missed each
    other; a score "0.5" and a dict of runs ended deep in pyarrow; LlamaIndex's {query: [doc, ...]} failed; a string
    of ids was split into characters; "ndcg_cut" read as the uncut nDCG."""
    from ragmetrics.analysis.agreement import agreement
    from ragmetrics.analysis.compare import compare
    from ragmetrics.engine.metrics import MetricNameError, parse_metric
    from ragmetrics.foundation.errors import RagMetricsWarning

    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    good = rm.Run.from_dict({"q1": {"d1": 2.0, "x": 1.0}, "q2": {"d2": 1.0, "y": 2.0}}, name="good")
    elsewhere = rm.Run.from_dict({"q1": {"doc_d1": 1.0}, "q2": {"doc_d2": 1.0}}, name="elsewhere")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert rm.evaluate(qrels, elsewhere, ["ndcg@10"]).mean().iloc[0, 0] == 0.0
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, RagMetricsWarning))
    assert "do not meet the qrels" in said and "in the run's document ids (tried: 100% of the queries" in said
    for bad, message in (({"alpha": 1.5}, "'alpha' parameter must be a number strictly between 0 and 1"),
                         ({"seed": -1}, "'seed' parameter must be a whole number of 0 or more")):  # fmt: skip
        with pytest.raises(rm.RagMetricsError, match=message):
            compare(qrels, [good, good.with_name("again")], ["ndcg@10"], **bad)
    lone = rm.Run.from_dict({"q2": {"d2": 1.0}}, name="lone")
    with pytest.raises(rm.RagMetricsError, match="share 1 query with a value; a paired test needs at least 2"):
        compare(qrels, [good, lone], ["ndcg@10"], missing="skip", warn=False)
    assert rm.evaluate({b"q1": {b"d1": 1}}, {b"q1": {b"d1": 1.0}}, ["ndcg@10"]).mean().iloc[0, 0] == 1.0
    assert rm.evaluate({1: {"d": 1}}, {1: {"d": 1.0}}, ["ndcg@10"]).mean().iloc[0, 0] == 1.0
    listed = rm.evaluate({"q1": ["d1"], "q2": ["d2"]}, good, ["hits@1"])  # LlamaIndex's and RAGAS' expected ids
    assert listed.mean().iloc[0, 0] == 0.5
    with pytest.raises(rm.RagMetricsError, match=r"document 'd1' has score '0\.5'; expected a number"):
        rm.evaluate(qrels, {"q1": {"d1": "0.5"}}, ["ndcg@10"])
    with pytest.raises(rm.RagMetricsError, match=r"several runs: \{name: Run.from_dict"):
        rm.evaluate(qrels, {"a": {"q1": {"d1": 0.9}}}, ["ndcg@10"])
    with pytest.raises(rm.RagMetricsError, match="query 'q1' maps to str"):
        rm.Run.from_lists({"q1": "d1d2"})
    with pytest.raises(rm.RagMetricsError, match="must be a sequence of query ids"):
        agreement(good, good, queries="q1")
    for name in ("ndcg_cut", "map_cut"):
        with pytest.raises(MetricNameError, match="is the metric at each of its cut-offs"):
            parse_metric(name)
    assert str(parse_metric("ndcg_cut_10")) == "ndcg@10" and str(parse_metric("map_cut_5")) == "map@5"
    with pytest.raises(rm.RagMetricsError, match="align takes a Dataset and a Run"):
        rm.align(qrels, good)
    with pytest.raises(rm.RagMetricsError, match=r"'k_max' parameter must be an int >= 1 or None\. Got -3"):
        rm.evaluate(qrels, good, ["ndcg"]).curves(["ndcg"], k_max=-3)
    assert agreement(good, good, p=np.float32(0.9)).mean()["rbo"] == pytest.approx(1.0)  # numpy's floats are numbers


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("P(rel=2)@5", r"the name is: P@5; rel=2 is the relevance level of the whole evaluation \(--rel-level 2"),
        ("nDCG(dcg=exp-log2)@10", r"dcg=exp-log2 is 'ndcg_exp@10' \(gain 2\^label - 1\)$"),
        ("AP(rel=2, judged_only=True)", r"the name is: AP; rel=2 .*; judged_only=True is --unjudged skip"),
        ("RBP(p=0.8)", r"p=0.8 is 'rbp_p=0.8'"),
        ("nDCG(gains={0:0,1:1})@10", r"the name is: nDCG@10; gains= is not read here$"),
    ],
)
def test_ir_measures_parameters_are_answered_with_what_takes_their_place(name, said):
    with pytest.raises(rm.MetricNameError, match=rf"^metric '{re.escape(name)}': ir_measures' parameters .*{said}"):
        rm.parse_metric(name)


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("1", r"has label '1' \(str\); expected a whole number \(an int, as pytrec_eval's qrels\)"),
        (2.0, r"has label '2.0' \(float\); expected a whole number"),
        (None, r"has label 'None' \(NoneType\)"),
        (True, r"has label 'True' \(bool\)"),
        (2**70, r"has label '1180591620717411303424' \(int\); expected a 64-bit integer"),
    ],
)
def test_a_qrels_dict_label_that_is_no_whole_number_is_refused_with_its_pair(label, said):
    """Was: pyarrow's "Expected bytes, got a 'float' object" (mixed types), an OverflowError, or "1" taken as 1
    where the same JSON file is refused."""
    with pytest.raises(rm.RagMetricsError, match=rf"^qrels 'dataset': query 'q1', document 'd2' {said}"):
        rm.Dataset.from_dict({"q1": {"d1": 1, "d2": label}})
    assert rm.Dataset.from_dict({"q1": {"d1": 1, "d2": np.int64(2)}}).qrels["relevance"].tolist() == [1, 2]


@pytest.mark.parametrize(
    ("metric", "k_max", "said"),
    [
        ("recall", -1, r"The 'k_max' parameter must be an int >= 1. Got -1 instead."),
        ("recall", 0, r"Got 0 instead"),
        ("recall", 2.7, r"Got 2.7 instead"),
        ("ndcg@10", 3, r"a curve is the metric at every cut-off 1..k_max; name it without one \('ndcg'\)"),
        ("P_5", 3, r"name it without one \('precision'\)"),
    ],
)
def test_a_curve_of_no_length_or_of_a_cut_metric_is_refused(metric, k_max, said):
    """Was: curve("recall", -1) of shape (n, 99), curve("recall", 2.7) of 2 columns, "@10" ignored."""
    alignment = rm.align(rm.Dataset.from_dict({"q1": {"d1": 1}}), rm.Run.from_dict({"q1": {"d1": 1.0}}))
    assert alignment.curve("recall", 3).shape == (1, 3)
    with pytest.raises(rm.RagMetricsError, match=said):
        alignment.curve(metric, k_max)


def test_frames_take_the_column_names_files_take_and_a_run_frame_is_evaluated_as_one_run():
    """Was: "missing column(s) ['query_id', ...]" for qid/docno/label frames (which the files, and the Polars and
    Spark frames, read), and evaluate(qrels_frame, run_frame) refused the run frame."""
    qrels = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d1", "d2"], "label": [2, 0]})
    run = pd.DataFrame({"Query-ID": ["q1", "q1"], "docid": ["d2", "d1"], "score": [2.0, 1.0]})
    dataset, ranked = rm.Dataset.from_frames(qrels), rm.Run.from_frame(run)
    assert list(dataset.qrels.columns) == ["query_id", "doc_id", "relevance"]
    assert ranked.frame[["query_id", "doc_id"]].values.tolist() == [["q1", "d2"], ["q1", "d1"]]
    assert rm.evaluate(qrels, run, ["mrr"]).mean().loc["run", "mrr"] == 0.5
    assert list(run.columns) == ["Query-ID", "docid", "score"]  # the caller's frame is left as it was
    with pytest.raises(rm.RagMetricsError, match="the run DataFrame has no rows: nothing to evaluate"):
        rm.evaluate(qrels, run.iloc[:0], ["mrr"])


def test_a_peer_s_measure_not_computed_here_is_named_not_matched_to_another():
    """Was: "unknown metric 'ERR@10'; did you mean 'mrr@10'?", a different metric."""
    from ragmetrics.engine.metrics import _ALIASES, PEER_NOT_COMPUTED

    assert not set(PEER_NOT_COMPUTED) & set(_ALIASES)
    with pytest.raises(rm.MetricNameError, match=r"^metric 'ERR@10': ir_measures' ERR \(expected reciprocal rank"):
        rm.parse_metric("ERR@10")
    with pytest.raises(rm.MetricNameError, match=r"ir_measures' alpha_nDCG"):
        rm.parse_metric("alpha_nDCG@20")


def test_the_reprs_a_notebook_prints_are_one_line_of_what_matters():
    """Was: 15,000 characters of Arrow tables for a RunResult (its alignment, dataset and run in full)."""
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}, "q2": {"d2": 1}}, name="qrels")
    run = rm.Run.from_dict({"q1": {"d1": 1.0, "d3": 0.5}}, name="bm25")
    result = rm.evaluate(dataset, run, ["ndcg@10", "P_5"], warn=False)
    assert repr(dataset) == "Dataset(name='qrels', queries=2, judgments=2)"
    assert repr(run) == "Run(name='bm25', rows=2, has_scores=True)"
    assert repr(result) == "EvalResult(dataset='qrels', runs=['bm25'], metrics=['ndcg@10', 'precision@5'])"
    assert repr(result["bm25"]) == "RunResult(run='bm25', queries=2, metrics=['ndcg@10', 'precision@5'])"
    assert repr(result["bm25"].alignment) == "Alignment(run='bm25', dataset='qrels', queries=2)"


@pytest.mark.parametrize("name", ["runid", "num_q"])
def test_trec_eval_s_table_lines_are_said_to_be_printed_not_metrics(name):
    """Was: "-m runid" answered "did you mean 'unj@k'?"."""
    with pytest.raises(rm.MetricNameError, match=rf"^metric '{name}': every table prints the run's name"):
        rm.parse_metric(name)


@pytest.mark.parametrize(("name", "found"), [("ndcg@0", "0"), ("recall@5.5", "5.5"), ("precision@-1", "-1")])
def test_a_cut_off_that_is_no_whole_number_of_at_least_1_is_said_so_one_way(name, found):
    """Was three wordings: "must be an int >= 1. Got 0 instead.", "is a whole number >= 1, found 5.5" and, for -1,
    "cannot read metric"."""
    with pytest.raises(rm.MetricNameError, match=rf"^metric '{re.escape(name)}': the cut-off k is a whole number >= 1, "
                                                 rf"found {re.escape(found)}$"):  # fmt: skip
        rm.parse_metric(name)


def test_results_named_as_trec_eval_equal_pytrec_eval_key_for_key():
    """A pytrec_eval user reads ``res.mean(names="trec_eval")["P_5"]``: the names it keys by, the same values."""
    qrels = {"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"d": 1}, "q3": {"e": 1, "f": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}, "q2": {"y": 0.5, "d": 0.4}, "q3": {"z": 0.3}}
    measures = {"P_5", "ndcg_cut_10", "recip_rank", "map", "Rprec"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    result = rm.evaluate(qrels, run, sorted(measures) + ["f1@5"])
    ours = result.per_query(names="trec_eval").loc["run"]
    assert set(ours.columns) == measures | {"f1@5"}  # a metric trec_eval lacks keeps its own name
    for query, values in theirs.items():
        for measure, value in values.items():
            assert ours.at[query, measure] == pytest.approx(value, abs=1e-12), (query, measure)
    means = result.mean(names="trec_eval")
    assert means.at["run", "P_5"] == pytest.approx(np.mean([v["P_5"] for v in theirs.values()]))
    assert list(result.mean().columns) == result.metrics  # canonical by default, as every other output
    with pytest.raises(rm.RagMetricsError, match="names='P_5': expected one of 'ragmetrics', 'trec_eval'"):
        result.mean(names="P_5")
