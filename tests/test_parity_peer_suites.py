"""The peers' own test suites, reproduced through the CLI: every metric expectation of ir_measures' tests
(terrierteam/ir_measures, tests/), ranx's metric tests (AmenRa/ranx, tests/unit/ranx/) and trectools' evaluation
tests (joaopalotti/trectools, unittests/testtreceval.py) whose measure ragmetrics has, written here as data (the
qrels, the run, our metric with the CLI options that say the peer's conventions, the peer's value), each naming the
test it comes from. The expectations we do not reproduce are listed in ``DIFFERENT`` with the reason.

The CLI refuses inputs on which every number would be 0 or empty; each such peer case is scored with the flag that
insists (``--allow-no-overlap``: a run meeting no judged document, an empty run; ``--allow-no-relevant``: nothing
relevant at the level asked, empty qrels), and the refusal without it is checked to name that flag."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import NamedTuple

import pytest

import ragmetrics as rm
from ragmetrics.cli import main

ir_measures = pytest.importorskip("ir_measures")


def _trec_run(ranked: dict[str, list[str]]) -> str:
    """A run in the order given (ranx's test arrays are in rank order): decreasing scores."""
    return "".join(f"{q} Q0 {d} {i + 1} {len(docs) - i} r\n" for q, docs in ranked.items() for i, d in enumerate(docs))


def _trec_qrels(judged: dict[str, dict[str, int]]) -> str:
    return "".join(f"{q} 0 {d} {label}\n" for q, docs in judged.items() for d, label in docs.items())


# --- ir_measures' inputs (tests/test_pytrec_eval.py and the tests that share its qrels and run) ------------------------

IRM_QRELS = "0 0 D0 0\n0 0 D1 1\n0 0 D2 1\n0 0 D3 2\n0 0 D4 0\n1 0 D0 1\n1 0 D3 2\n1 0 D5 2\n"
"""test_NumRet, test_judged.py, test_gdeval.py, test_providers.py, test_aggregate.py."""
IRM_QRELS_Q0 = "".join(line + "\n" for line in IRM_QRELS.splitlines() if line.startswith("0 "))
"""test_ranx.py; test_providers.py's partial qrels."""
IRM_QRELS_SET = "0 0 D0 0\n0 0 D1 1\n0 0 D2 2\n0 0 D3 2\n0 0 D4 0\n1 0 D0 1\n1 0 D3 2\n1 0 D5 0\n"
"""test_Success, test_SetP, test_SetR, test_SetAP, test_SetF."""
IRM_QRELS_NEG = "0 0 D0 1\n0 0 D1 -1\n0 0 D2 0\n0 0 D3 2\n0 0 D4 0\n1 0 D0 1\n1 0 D3 2\n1 0 D4 -1\n1 0 D5 0\n"
"""test_infAP, test_nDCG."""
IRM_QRELS_P = "0 0 D0 -1\n0 0 D1 1\n0 0 D3 2\n0 0 D4 1\n1 0 D0 1\n1 0 D3 0\n1 0 D4 -1\n"
"""test_P; its query 0 alone: test_judged_only."""
IRM_QRELS_P_Q0 = "0 0 D0 -1\n0 0 D1 1\n0 0 D3 2\n0 0 D4 1\n"

_RUN_Q0 = "0 0 D0 1 0.8 run\n0 0 D2 2 0.7 run\n0 0 D1 3 0.3 run\n0 0 D3 4 0.4 run\n0 0 D4 5 0.1 run\n"
IRM_RUN = _RUN_Q0 + "1 0 D1 1 0.8 run\n1 0 D3 2 0.7 run\n1 0 D4 3 0.3 run\n1 0 D2 4 0.4 run\n"
IRM_RUN_Q0 = _RUN_Q0
IRM_RUN_SET = _RUN_Q0 + "1 0 D1 1 0.8 run\n1 0 D4 2 0.7 run\n1 0 D3 3 0.3 run\n1 0 D2 4 0.4 run\n"
IRM_RUN_P = _RUN_Q0 + "1 0 D1 1 0.8 run\n1 0 D0 2 0.7 run\n1 0 D3 3 0.3 run\n1 0 D2 4 0.4 run\n"
IRM_RUN_AGG = IRM_RUN + "1 0 D0 5 0.1 run\n"
"""test_aggregate.py: query 1 retrieves five documents."""

CWL_QRELS = _trec_qrels(
    {
        "T1": {"D1": 1, "D2": 0, "D3": 1, "D4": 1, "D7": 1, "D8": 0, "D9": 1, "D10": 0},
        "T2": {"D1": 1, "D2": 1, "D5": 1, "D6": 0, "D7": 1, "D8": 1, "D9": 1, "D10": 0},
        "T3": {"D4": 0, "D5": 0, "D6": 1, "D7": 1, "D8": 1, "D9": 0, "D10": 1},
    }
)
"""ir_measures' tests/cwl.qrels."""
CWL_RUN = _trec_run({q: [f"D{i}" for i in range(1, 11)] for q in ("T1", "T2", "T3")})
"""ir_measures' tests/cwl.run: D1..D10 in that order for each query."""

EMPTY = ""

# --- ranx's inputs (tests/unit/ranx/metrics_test.py; meta/evaluate_test.py repeats them through ranx.evaluate) -------

_NDCG_QRELS = _trec_qrels({"q1": {"2": 5, "4": 4, "5": 3, "10": 2}})
_RANKED_7 = ["4", "5", "6", "2", "1", "7", "3"]
_RANKED_R = ["2", "4", "3", "1", "5", "6", "7"]
_BPREF_QRELS = {
    "q1": {"d2": 1, "d5": 1, "d1": 0, "d4": 0},
    "q2": {"d2": 1, "d5": 1, "d1": 0, "d6": 0},
    "q3": {"d2": 1, "d5": 1, "d7": 1, "d1": 0, "d6": 0, "d8": 0},
    "q4": {"d2": 1, "d4": 1, "d6": 1, "d9": 1, "d1": 0, "d3": 0, "d7": 0, "d8": 0},
}
_BPREF_RUN = {
    "q1": ["d1", "d2", "d3", "d4"],
    "q2": ["d1", "d2", "d3", "d4", "d5", "d6"],
    "q3": ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"],
    "q4": ["d1", "d2", "d3", "d4", "d6", "d7", "d8"],
}
_F1_RUN = {**_BPREF_RUN, "q4": ["d1", "d12", "d3", "d14", "d16", "d7", "d8"]}
_ZERO_QRELS = {"q_1": {"doc_a": 1}, "q_2": {"doc_b": 1}, "q_3": {"doc_c": 1}, "q_4": {"doc_d": 1}}
_ZERO_RUN = {"q_1": ["doc_a"], "q_2": ["doc_b"], "q_4": ["doc_d"]}  # q_3's empty dict: no line in a TREC run

# --- trectools' inputs (unittests/files/qrel1.txt and r4.run) -----------------------------------------------------------

TRECTOOLS_QRELS = _trec_qrels(
    {
        "1": {f"doc1_{i}": {2: 1, 7: 2}.get(i, 0) for i in range(10)},
        "2": {f"doc2_{i}": int(i < 3) for i in range(10)},
        "3": {f"doc3_{i}": int(i == 9) for i in range(10)},
    }
)
TRECTOOLS_RUN = (
    "1 Q0 doc1_1 1 1 NR\n1 Q0 doc1_2 2 0.81 R\n1 Q0 doc1_3 3 0.80 NR\n"
    "2 Q0 doc2_1 1 2 R\n2 Q0 doc2_3 2 1 NR\n2 Q0 doc2_2 3 0.5 R\n"
    "3 Q0 doc3_1 1 5 R\n3 Q0 doc3_2 2 0.7 R\n3 Q0 doc3_3 3 0.5 R\n"
)


class Case(NamedTuple):
    source: str
    """The peer's test the expectation comes from."""
    qrels: str
    run: str
    metric: str
    """Our name for the peer's measure."""
    expected: float | dict[str, float]
    """The peer's mean, or its per-query values (only the queries named are compared)."""
    flags: tuple[str, ...] = ()
    """The peer's conventions as CLI options; the first, when it is an --allow-* flag, is what the CLI refuses without."""
    tol: float = 1e-9
    """Where the peer's test compares to 4 or 5 places, half a unit of that place."""


P4, P5 = 5e-5, 1e-5
NO_RELEVANT, NO_OVERLAP = ("--allow-no-relevant",), ("--allow-no-overlap",)
REL2, REL3 = ("--rel-level", "2"), ("--allow-no-relevant", "--rel-level", "3")
NDCG_IDCG = 5 + 4 / math.log2(3) + 3 / math.log2(4) + 2 / math.log2(5)
NDCG_EXP_IDCG = 31 + 15 / math.log2(3) + 7 / math.log2(4) + 3 / math.log2(5)

IR_MEASURES = [
    # test_pytrec_eval.py::test_Success
    Case("test_Success", IRM_QRELS_SET, IRM_RUN_SET, "hits@2", {"0": 1, "1": 0}),
    Case("test_Success", IRM_QRELS_SET, IRM_RUN_SET, "hits@2", 0.5),
    Case("test_Success", IRM_QRELS_SET, IRM_RUN_SET, "hits@2", {"0": 1, "1": 0}, REL2),
    Case("test_Success", IRM_QRELS_SET, IRM_RUN_SET, "hits@2", {"0": 0, "1": 0}, REL3),
    # test_SetP: SetP divides by the number retrieved (5 for query 0, 4 for query 1): precision@5 and precision@4
    Case("test_SetP", IRM_QRELS_SET, IRM_RUN_SET, "precision@5", {"0": 0.6}),
    Case("test_SetP", IRM_QRELS_SET, IRM_RUN_SET, "precision@4", {"1": 0.25}),
    Case("test_SetP", IRM_QRELS_SET, IRM_RUN_SET, "precision@5", {"0": 0.4}, REL2),
    Case("test_SetP", IRM_QRELS_SET, IRM_RUN_SET, "precision@4", {"1": 0.25}, REL2),
    Case("test_SetP", IRM_QRELS_SET, IRM_RUN_SET, "precision@5", {"0": 0, "1": 0}, REL3),
    # test_SetR: recall over every retrieved document
    Case("test_SetR", IRM_QRELS_SET, IRM_RUN_SET, "recall@1000", {"0": 1.0, "1": 0.5}),
    Case("test_SetR", IRM_QRELS_SET, IRM_RUN_SET, "recall@1000", 0.75),
    Case("test_SetR", IRM_QRELS_SET, IRM_RUN_SET, "recall@1000", {"0": 1.0, "1": 1.0}, REL2),
    Case("test_SetR", IRM_QRELS_SET, IRM_RUN_SET, "recall@1000", {"0": 0, "1": 0}, REL3),
    # test_SetF (beta 1): the harmonic mean of SetP and SetR, f1@k at k = the number retrieved
    Case("test_SetF", IRM_QRELS_SET, IRM_RUN_SET, "f1@5", {"0": 0.75}, tol=P4),
    Case("test_SetF", IRM_QRELS_SET, IRM_RUN_SET, "f1@4", {"1": 0.33333}, tol=P4),
    Case("test_SetF", IRM_QRELS_SET, IRM_RUN_SET, "f1@5", {"0": 0, "1": 0}, REL3),
    # test_SetAP(rel=3) and the other rel=3 measures of these tests: 0 everywhere
    Case("test_SetAP", IRM_QRELS_SET, IRM_RUN_SET, "map", {"0": 0, "1": 0}, REL3),
    Case("test_SetAP", IRM_QRELS_SET, IRM_RUN_SET, "mrr", {"0": 0, "1": 0}, REL3),
    # test_infAP: its AP expectations (negative labels are judged non-relevant)
    Case("test_infAP", IRM_QRELS_NEG, IRM_RUN_SET, "map", {"0": 0.8333, "1": 0.125}, tol=P4),
    Case("test_infAP", IRM_QRELS_NEG, IRM_RUN_SET, "map", 0.47916666666666663, tol=P4),
    Case("test_infAP", IRM_QRELS_NEG, IRM_RUN_SET, "map", {"0": 0.33333, "1": 0.25}, REL2, tol=P4),
    Case("test_infAP", IRM_QRELS_NEG, IRM_RUN_SET, "map", 0.2917, REL2, tol=P4),
    # test_nDCG
    Case("test_nDCG", IRM_QRELS_NEG, IRM_RUN_SET, "ndcg", {"0": 0.76018, "1": 0.32739}, tol=P5),
    Case("test_nDCG", IRM_QRELS_NEG, IRM_RUN_SET, "ndcg@3", {"0": 0.76018, "1": 0.0}, tol=P5),
    # test_P: judged_only is --unjudged skip
    Case("test_P", IRM_QRELS_P, IRM_RUN_P, "precision@4", {"0": 0.5, "1": 0.25}),
    Case("test_P", IRM_QRELS_P, IRM_RUN_P, "precision@4", {"0": 0.75, "1": 0.25}, ("--unjudged", "skip")),
    # test_judged.py
    Case("test_judged", IRM_QRELS, IRM_RUN, "judged@1000", {"0": 1.0, "1": 0.25}),
    Case("test_judged", IRM_QRELS, IRM_RUN, "judged@10", {"0": 1.0, "1": 0.25}),
    Case("test_judged", IRM_QRELS, IRM_RUN, "judged@3", {"0": 1.0, "1": 1 / 3}),
    Case("test_judged", IRM_QRELS, IRM_RUN, "judged@1", {"0": 1.0, "1": 0.0}),
    # test_aggregate.py
    Case("test_aggregate", IRM_QRELS, IRM_RUN_AGG, "precision@5", 0.5),
    # test_ranx.py (ir_measures' ranx provider)
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "precision@5", 0.6),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "precision@5", 0.2, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@5", 1.0),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@5", 1.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@2", 0.3333333333333333),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@2", 0.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "precision@5", 0.6),  # SetP: five documents retrieved
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@1000", 1.0),  # SetR
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "recall@5", 1.0, REL2),  # SetR(rel=2)@5
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr", 0.5),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr", 0.3333333333333333, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr@10", 0.5),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr@10", 0.3333333333333333, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr@2", 0.5),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "mrr@2", 0.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map", 0.6388888888888888),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map", 0.3333333333333333, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map@10", 0.6388888888888888),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map@10", 0.3333333333333333, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map@2", 0.16666666666666666),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "map@2", 0.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "hits@10", 1.0),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "hits@10", 1.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "hits@2", 1.0),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "hits@2", 0.0, REL2),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg", 0.6584645692843067),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg@5", 0.6584645692843067),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg@2", 0.23981246656813146),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg_exp", 0.6201040599710453),  # nDCG(dcg='exp-log2')
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg_exp@5", 0.6201040599710453),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "ndcg_exp@2", 0.17376534287144002),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "rprec", 0.6666666666666666),
    Case("test_ranx", IRM_QRELS_Q0, IRM_RUN_Q0, "rprec", 0.0, REL2),
    # test_gdeval.py: gdeval's nDCG is exponential gains, the ranking by score
    Case("test_gdeval", IRM_QRELS, IRM_RUN, "ndcg_exp@20", {"0": 0.6201, "1": 0.35099}, tol=P5),
    Case("test_gdeval", IRM_QRELS, IRM_RUN, "ndcg_exp@20", 0.485545, tol=P5),
    Case("test_gdeval", IRM_QRELS, IRM_RUN, "ndcg_exp@2", {"0": 0.17377, "1": 0.38685}, tol=P5),
    Case("test_gdeval", IRM_QRELS, IRM_RUN, "ndcg_exp@2", 0.28031, tol=P5),
    # test_cwl_eval.py
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "map", {"T1": 0.7087, "T2": 0.7438, "T3": 0.3068}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "precision@1", {"T1": 1.0, "T2": 1.0, "T3": 0.0}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "precision@10", {"T1": 0.5, "T2": 0.6, "T3": 0.4}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "precision@20", {"T1": 0.25, "T2": 0.3, "T3": 0.2}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "precision@5", {"T1": 0.6, "T2": 0.6, "T3": 0.0}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "rbp_p=0.9", {"T1": 0.3501, "T2": 0.3996, "T3": 0.1988}, tol=P4),
    Case("test_cwl_eval", CWL_QRELS, CWL_RUN, "mrr", {"T1": 1.0, "T2": 1.0, "T3": 0.1667}, tol=P4),
    # test_providers.py::test_empty: qrels but no run, a partial run, no qrels, partial qrels, neither
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "precision@5", {"0": 0.0, "1": 0.0}, NO_OVERLAP),
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "precision@5", 0.0, NO_OVERLAP),
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "judged@5", {"0": 0.0, "1": 0.0}, NO_OVERLAP),
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "judged@5", 0.0, NO_OVERLAP),
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "mrr@5", {"0": 0.0, "1": 0.0}, NO_OVERLAP),  # msmarco RR@5
    Case("test_empty: qrels, no run", IRM_QRELS, EMPTY, "mrr@5", 0.0, NO_OVERLAP),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "precision@5", {"0": 0.6, "1": 0.0}),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "precision@5", 0.3),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "judged@5", {"0": 1.0, "1": 0.0}),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "judged@5", 0.5),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "mrr@5", {"0": 0.5, "1": 0.0}),
    Case("test_empty: partial run", IRM_QRELS, IRM_RUN_Q0, "mrr@5", 0.25),
    Case("test_empty: no qrels", EMPTY, IRM_RUN, "precision@5", {}, NO_RELEVANT),
    Case("test_empty: no qrels", EMPTY, IRM_RUN, "precision@5", math.nan, NO_RELEVANT),
    Case("test_empty: no qrels", EMPTY, IRM_RUN, "judged@5", math.nan, NO_RELEVANT),
    Case("test_empty: no qrels", EMPTY, IRM_RUN, "mrr@5", math.nan, NO_RELEVANT),
    Case("test_empty: partial qrels", IRM_QRELS_Q0, IRM_RUN, "precision@5", {"0": 0.6}),
    Case("test_empty: partial qrels", IRM_QRELS_Q0, IRM_RUN, "precision@5", 0.6),
    Case("test_empty: partial qrels", IRM_QRELS_Q0, IRM_RUN, "judged@5", 1.0),
    Case("test_empty: partial qrels", IRM_QRELS_Q0, IRM_RUN, "mrr@5", 0.5),
    Case("test_empty: neither", EMPTY, EMPTY, "precision@5", math.nan, (*NO_RELEVANT, *NO_OVERLAP)),
    Case("test_empty: neither", EMPTY, EMPTY, "judged@5", math.nan, (*NO_RELEVANT, *NO_OVERLAP)),
    Case("test_empty: neither", EMPTY, EMPTY, "mrr@5", math.nan, (*NO_RELEVANT, *NO_OVERLAP)),
]

RANX = [
    # metrics_test.py::test_hit_rate (q1's qrels list doc 6 twice: one label in ranx's Qrels, as here)
    Case(
        "test_hit_rate",
        _trec_qrels({"q1": {"9": 1, "6": 1, "8": 1}, "q2": {"1": 1, "2": 1, "4": 1}}),
        _trec_run({"q1": ["1", "2", "3", "4", "5", "7"], "q2": ["1", "2", "4", "3", "5", "7"]}),
        "hit_rate@5",
        0.5,
    ),
    # test_hits: ranx's hits@5 counts the relevant documents in the top 5 (2.5 on average); ours is precision@5 * 5
    Case(
        "test_hits (as precision@5 = hits / 5)",
        _trec_qrels({"q1": {"1": 1, "4": 1, "5": 1, "6": 1}, "q2": {"1": 1, "4": 1, "6": 1}}),
        _trec_run({"q1": ["1", "2", "3", "4", "5", "7"], "q2": ["1", "2", "4", "3", "5", "7"]}),
        "precision@5",
        2.5 / 5,
    ),
    # test_precision and test_average_precision: the mean is the mean of each query's value
    Case(
        "test_precision",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}, "q2": {"4": 1, "5": 1, "6": 1, "7": 1}, "q3": {"8": 1, "9": 1}}),
        _trec_run({"q1": _RANKED_7, "q2": _RANKED_7, "q3": _RANKED_7}),
        "precision@5",
        {"q1": 2 / 5, "q2": 3 / 5, "q3": 0.0},
    ),
    Case(
        "test_average_precision",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}, "q2": {"4": 1, "5": 1, "6": 1, "7": 1}, "q3": {"8": 1, "9": 1}}),
        _trec_run({"q1": _RANKED_7, "q2": _RANKED_7, "q3": _RANKED_7}),
        "average_precision@7",
        {"q1": (1 / 4 + 2 / 5 + 3 / 7) / 3, "q2": (1 + 1 + 1 + 4 / 6) / 4, "q3": 0.0},
    ),
    Case(
        "test_reciprocal_rank_single",
        _trec_qrels({"q1": {"3": 1}}),
        _trec_run({"q1": ["2", "3", "1", "4", "5"]}),
        "mrr@5",
        0.5,
    ),
    Case(
        "test_reciprocal_rank_single_no_match",
        _trec_qrels({"q1": {"3": 1}}),
        _trec_run({"q1": ["2", "1", "4", "5"]}),
        "mrr@5",
        0.0,
        NO_OVERLAP,
    ),
    # test_reciprocal_rank: q3's array repeats document 1 three times; a run holds it once (the CLI drops the repeats)
    Case(
        "test_reciprocal_rank",
        _trec_qrels({"q1": {"3": 1}, "q2": {"1": 1}, "q3": {"3": 1}}),
        _trec_run({"q1": ["2", "3", "1", "4", "5"], "q2": ["1", "2", "3", "4", "5"], "q3": ["1", "4", "5"]}),
        "mrr@5",
        0.5,
    ),
    Case(
        "test_r_precision_single",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}}),
        _trec_run({"q1": _RANKED_R}),
        "r_precision",
        2 / 3,
    ),
    Case(
        "test_r_precision",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}, "q2": {"1": 1, "2": 1}}),
        _trec_run({"q1": _RANKED_R, "q2": _RANKED_R}),
        "r_precision",
        (2 / 3 + 1 / 2) / 2,
    ),
    Case(
        "test_recall_single",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}}),
        _trec_run({"q1": _RANKED_R}),
        "recall@2",
        1 / 3,
    ),
    Case(
        "test_recall",
        _trec_qrels({"q1": {"1": 1, "2": 1, "3": 1}, "q2": {"1": 1, "2": 1}}),
        _trec_run({"q1": _RANKED_R, "q2": _RANKED_R}),
        "recall@2",
        (1 / 3 + 1 / 2) / 2,
    ),
    # test_ndcg_jarvelin (linear gains) and test_ndcg_burges (exponential gains), three runs on one query
    Case(
        "test_ndcg_jarvelin",
        _NDCG_QRELS,
        _trec_run({"q1": ["1", "2", "3", "4", "5"]}),
        "ndcg@10",
        (5 / math.log2(3) + 4 / math.log2(5) + 3 / math.log2(6)) / NDCG_IDCG,
    ),
    Case(
        "test_ndcg_jarvelin",
        _NDCG_QRELS,
        _trec_run({"q1": ["10", "5", "2", "4", "3"]}),
        "ndcg@10",
        (2 + 3 / math.log2(3) + 5 / math.log2(4) + 4 / math.log2(5)) / NDCG_IDCG,
    ),
    Case("test_ndcg_jarvelin", _NDCG_QRELS, _trec_run({"q1": ["1", "3", "6", "7", "8"]}), "ndcg@10", 0.0, NO_OVERLAP),
    Case(
        "test_ndcg_burges",
        _NDCG_QRELS,
        _trec_run({"q1": ["1", "2", "3", "4", "5"]}),
        "ndcg_burges@10",
        (31 / math.log2(3) + 15 / math.log2(5) + 7 / math.log2(6)) / NDCG_EXP_IDCG,
    ),
    Case(
        "test_ndcg_burges",
        _NDCG_QRELS,
        _trec_run({"q1": ["10", "5", "2", "4", "3"]}),
        "ndcg_burges@10",
        (3 + 7 / math.log2(3) + 31 / math.log2(4) + 15 / math.log2(5)) / NDCG_EXP_IDCG,
    ),
    Case(
        "test_ndcg_burges", _NDCG_QRELS, _trec_run({"q1": ["1", "3", "6", "7", "8"]}), "ndcg_burges@10", 0.0, NO_OVERLAP
    ),
    # metrics/bpref_test.py
    Case(
        "bpref_test",
        _trec_qrels(_BPREF_QRELS),
        _trec_run(_BPREF_RUN),
        "bpref",
        {
            "q1": 1 / 2 * (1 - 1 / 2),
            "q2": 1 / 2 * ((1 - 1 / 2) + (1 - 1 / 2)),
            "q3": 1 / 3 * ((1 - 1 / 3) + (1 - 1 / 3) + (1 - 2 / 3)),
            "q4": 1 / 4 * ((1 - 1 / 4) + (1 - 2 / 4) + (1 - 2 / 4)),
        },
    ),
    # metrics/f1_test.py: ranx's f1 without k reads the whole ranking: f1@k at k = the ranking's length
    Case(
        "f1_test", _trec_qrels(_BPREF_QRELS), _trec_run(_F1_RUN), "f1@4", {"q1": 2 * (1 / 4 * 1 / 2) / (1 / 4 + 1 / 2)}
    ),
    Case("f1_test", _trec_qrels(_BPREF_QRELS), _trec_run(_F1_RUN), "f1@6", {"q2": 2 * (2 / 6 * 1) / (2 / 6 + 1)}),
    Case("f1_test", _trec_qrels(_BPREF_QRELS), _trec_run(_F1_RUN), "f1@8", {"q3": 2 * (3 / 8 * 1) / (3 / 8 + 1)}),
    Case("f1_test", _trec_qrels(_BPREF_QRELS), _trec_run(_F1_RUN), "f1@7", {"q4": 0.0}),
    # metrics/rank_biased_precision_test.py (rounded to 4 places)
    *(
        Case(
            "rank_biased_precision_test",
            _trec_qrels({"q1": dict.fromkeys(("d1", "d2", "d6", "d11", "d17"), 1)}),
            _trec_run({"q1": [f"d{i}" for i in range(1, 21)]}),
            f"rbp_p={p}",
            value,
            tol=P4,
        )
        for p, value in ((0.5, 0.7661), (0.8, 0.4526), (0.95, 0.1881))
    ),
    # metrics/zero_division_error_test.py: precision, recall and f1 of whole rankings of one document; q_3 retrieves
    # nothing (scored 0, --missing zero)
    *(
        Case("zero_division_error_test", _trec_qrels(_ZERO_QRELS), _trec_run(_ZERO_RUN), metric, 0.75)
        for metric in ("precision@1", "recall@1", "f1@1")
    ),
]

TRECTOOLS = [
    # testtreceval.py, its r4.run against qrel1.txt (teval1); trec_eval=True is trec_eval's order and -c
    Case("test_get_reciprocal_rank", TRECTOOLS_QRELS, TRECTOOLS_RUN, "mrr", 0.5, tol=P4),
    Case("test_get_map", TRECTOOLS_QRELS, TRECTOOLS_RUN, "map", 0.2685, tol=P4),
    Case("test_get_precision", TRECTOOLS_QRELS, TRECTOOLS_RUN, "precision@1000", 0.0010, tol=P4),
    Case("test_get_recall", TRECTOOLS_QRELS, TRECTOOLS_RUN, "recall@1000", 0.3889, tol=P4),
]

DIFFERENT = {
    # Expectations of the peers' suites that this test does not reproduce, and why.
    "ir_measures test_NumRet, test_NumQ, test_NumRel, test_ranx NumRet (10 expectations)": "counts, not metrics: "
    "ragmetrics has no NumRet/NumQ/NumRel (eval --per-query and the coverage notes give the counts)",
    "ir_measures test_SetP SetRelP (2), test_SetAP rel=1, rel=2 (2), test_SetF beta=0.5, 2 (2), test_IPrec (7), "
    "test_infAP infAP (2), test_nDCG gains={0:1,1:4} (1), test_judged_only SetAP and IPrec@0.5 (2)": "measures ragmetrics does not have (SetP and SetF are "
    "precision@k and f1@k at k = the number retrieved, reproduced above per query)",
    "ir_measures test_SetP, test_SetR, test_SetF means over both queries": "SetP/SetF divide by each query's number "
    "retrieved; one precision@k has one k (the per-query values reproduce; SetR's mean does, as recall@1000)",
    "ir_measures test_gdeval ERR (2), test_cwl_eval BPM, INSQ, INST, SDCG, NERR8-11 (10), test_compat Compat (4), "
    "test_pyndeval alpha_nDCG (1), test_providers ERR@5, Compat, Accuracy": "measures ragmetrics does not have "
    "(ir_measures' Accuracy is not our accuracy@k, which needs the corpus size)",
    "ir_measures test_measures.py, test_util.py, test_runtime.py": "no metric expectation (printing, parsing, timing)",
    "ranx test_dcg_jarvelin, test_dcg_burges (6)": "unnormalised DCG: ragmetrics reports nDCG only",
    "ranx evaluate_test.py": "the same inputs and expectations as metrics_test.py through ranx.evaluate (reproduced "
    "once above); test_keys_control expects ranx to raise on a run query the qrels lack: the CLI drops it with a note "
    "(trec_eval); test_std: the CLI prints means, not standard deviations",
    "trectools testtreceval.py on input.uic0301 and robust03_cs_qrels.txt (teval2, teval3: 20 expectations)": "its "
    "data files (3.6 MB and 2.7 MB) are not in its package and too large to write here as data: "
    "test_trectools_robust03_expectations reproduces them when RAGMETRICS_TRECTOOLS_FILES names its unittests/files",
}


def _cli(tmp_path, case: Case, flags: tuple[str, ...]) -> tuple[int, dict, str]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(case.qrels)
    run.write_text(case.run)
    argv = ["eval", "--dataset", str(qrels), "--run", str(run), "--format", "json", "--per-query", "-m", case.metric]
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, *flags], out, err)
    return code, (json.loads(out.getvalue())["runs"]["run"] if code == 0 else {}), err.getvalue()


def _ids(cases: list[Case]) -> list[str]:
    return [f"{i}-{c.source}-{c.metric}{''.join(c.flags)}" for i, c in enumerate(cases)]


def _check(tmp_path, case: Case) -> None:
    allow = [f for f in case.flags if f.startswith("--allow-")]
    if allow:  # refused without the flag, the refusal naming it
        code, _, err = _cli(tmp_path, case, tuple(f for f in case.flags if f != allow[-1]))
        assert code == 2 and allow[-1] in err and "Traceback" not in err, err
    code, values, err = _cli(tmp_path, case, case.flags)
    assert code == 0, err
    key = str(rm.parse_metric(case.metric))
    if isinstance(case.expected, dict):
        per_query = values.get("per_query", {})
        if not case.expected:
            assert per_query == {}  # the peer gives no query a value
        for query, value in case.expected.items():
            assert per_query[query][key] == pytest.approx(value, abs=case.tol), query
    elif math.isnan(case.expected):
        assert values["mean"][key] is None  # the peer's NaN: no query to average
    else:
        assert values["mean"][key] == pytest.approx(case.expected, abs=case.tol)


@pytest.mark.parametrize("case", IR_MEASURES, ids=_ids(IR_MEASURES))
def test_ir_measures_suite_reproduces_through_the_cli(tmp_path, case):
    _check(tmp_path, case)


@pytest.mark.parametrize("case", RANX, ids=_ids(RANX))
def test_ranx_suite_reproduces_through_the_cli(tmp_path, case):
    _check(tmp_path, case)


@pytest.mark.parametrize("case", TRECTOOLS, ids=_ids(TRECTOOLS))
def test_trectools_suite_reproduces_through_the_cli(tmp_path, case):
    _check(tmp_path, case)


JUDGED_ONLY = {
    # test_pytrec_eval.py::test_judged_only: each measure with judged_only equals the measure on the run without its
    # unjudged (D2) and negatively labelled (D0) documents; SetP and SetF are precision@3 and f1@3 there (3 remain)
    "precision@4": lambda: ir_measures.P @ 4,
    "mrr": lambda: ir_measures.RR,
    "rprec": lambda: ir_measures.Rprec,
    "map": lambda: ir_measures.AP,
    "map@4": lambda: ir_measures.AP @ 4,
    "ndcg": lambda: ir_measures.nDCG,
    "ndcg@4": lambda: ir_measures.nDCG @ 4,
    "recall@2": lambda: ir_measures.R @ 2,
    "precision@3": lambda: ir_measures.SetP,
    "f1@3": lambda: ir_measures.SetF,
    "hits@2": lambda: ir_measures.Success @ 2,
}


@pytest.mark.parametrize("metric", list(JUDGED_ONLY))
def test_ir_measures_judged_only_suite_is_unjudged_skip_through_the_cli(tmp_path, metric):
    measure = JUDGED_ONLY[metric]()
    qrels = list(ir_measures.read_trec_qrels(IRM_QRELS_P_Q0))
    condensed = "".join(line + "\n" for line in IRM_RUN_Q0.splitlines() if line.split()[2] not in ("D0", "D2"))
    judged_only = ir_measures.pytrec_eval.calc_aggregate([measure], qrels, list(ir_measures.read_trec_run(condensed)))
    plain = ir_measures.pytrec_eval.calc_aggregate([measure], qrels, list(ir_measures.read_trec_run(IRM_RUN_Q0)))
    skip = Case("test_judged_only", IRM_QRELS_P_Q0, IRM_RUN_Q0, metric, judged_only[measure], ("--unjudged", "skip"))
    _check(tmp_path, skip)
    if metric not in ("precision@3", "f1@3"):  # SetP and SetF of the whole run are @5
        _check(tmp_path, skip._replace(expected=plain[measure], flags=()))


TRECTOOLS_COMMON = ["303", "307", "310", "314", "320", "322", "325", "330", "336", "341"]
"""testtreceval.py's common_topics: input.uic0301_top30 holds input.uic0301's top 30 of these."""
TRECTOOLS_ROBUST03 = {
    # testtreceval.py, teval2 (input.uic0301 against robust03_cs_qrels.txt): means, then per-query values
    "mrr": 0.6466,
    "map": 0.2396,
    "precision@1000": 0.0371,
    **{f"recall@{k}": v for k, v in ((5, 0.0858), (10, 0.1314), (15, 0.1686), (20, 0.1968), (30, 0.2530))},
    **{f"recall@{k}": v for k, v in ((100, 0.4243), (200, 0.5323), (500, 0.6569), (1000, 0.7518))},
}
TRECTOOLS_ROBUST03_PER_QUERY = {
    "mrr": {"378": 0.0017, "650": 0.1429, "624": 0.3333},
    "map": {"622": 0.4926, "609": 0.2808, "320": 0.2335},
    "precision@30": {"607": 0.1333, "433": 0.0333, "375": 0.5333},
    "recall@30": {"607": 0.3636, "433": 0.0769, "375": 0.2000, "303": 0.1000},
}


def test_trectools_robust03_expectations_reproduce_through_the_cli(tmp_path):
    """trectools' teval2 and teval3 expectations, on its own data files (not in its package: give the folder)."""
    folder = os.environ.get("RAGMETRICS_TRECTOOLS_FILES")
    if not folder:
        pytest.skip("RAGMETRICS_TRECTOOLS_FILES: trectools' unittests/files folder (github.com/joaopalotti/trectools)")
    files = Path(folder)
    qrels, full, top30 = files / "robust03_cs_qrels.txt", files / "input.uic0301", files / "input.uic0301_top30"

    def values(run: Path, metrics: list[str]) -> dict:
        argv = ["eval", "--dataset", str(qrels), "--run", str(run), "--format", "json", "--per-query"]
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, *(a for m in metrics for a in ("-m", m))], out, err) == 0, err.getvalue()
        return next(iter(json.loads(out.getvalue())["runs"].values()))

    metrics = [*TRECTOOLS_ROBUST03, "mrr@30", "map@30", "precision@30", "precision@500", "recall@500"]
    ours = values(full, metrics)
    for metric, value in TRECTOOLS_ROBUST03.items():
        assert ours["mean"][metric] == pytest.approx(value, abs=P4), metric
    for metric, expected in TRECTOOLS_ROBUST03_PER_QUERY.items():
        for query, value in expected.items():
            assert ours["per_query"][query][metric] == pytest.approx(value, abs=P4), (metric, query)
    # depth 30 of the full run equals the run cut at 30 (depth 1000); at depth 500 they differ on every common topic
    cut = values(top30, ["mrr", "map", "precision@30", "recall@30", "precision@500", "recall@500"])
    for at_30, whole in (
        ("mrr@30", "mrr"),
        ("map@30", "map"),
        ("precision@30", "precision@30"),
        ("recall@30", "recall@30"),
    ):
        for query in TRECTOOLS_COMMON:
            assert ours["per_query"][query][at_30] == pytest.approx(cut["per_query"][query][whole], abs=P4), query
    for metric in ("precision@500", "recall@500"):
        for query in TRECTOOLS_COMMON:
            assert ours["per_query"][query][metric] != pytest.approx(cut["per_query"][query][metric], abs=P4), query


def test_an_empty_file_insisted_on_with_a_partitioned_engine_names_the_engine_that_scores_it(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(IRM_QRELS)
    run.write_text(EMPTY)
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", "--engine", "duckdb", "--dataset", str(qrels), "--run", str(run), "--allow-no-overlap"]
    assert main(argv, out, err) == 2
    assert "an empty file is scored only with --engine inprocess" in err.getvalue(), err.getvalue()


def test_a_partitioned_engine_says_at_once_what_it_does_not_read(tmp_path, monkeypatch):
    """Was: an empty run without --allow-no-overlap got the parser's "found no data lines" on a partitioned engine,
    then, with the flag, "scored only with --engine inprocess"; and ``--run -`` looked for a file called "-"."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(IRM_QRELS)
    run.write_text(EMPTY)
    out, err = io.StringIO(), io.StringIO()
    assert main(["eval", "--engine", "polars", "--dataset", str(qrels), "--run", str(run)], out, err) == 2
    assert "an empty file is scored only with --engine inprocess and --allow-no-overlap" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()  # empty qrels: the in-process engine scores them with the other flag
    assert main(["eval", "--engine", "polars", "--dataset", str(run), "--run", str(run)], out, err) == 2
    assert "an empty file is scored only with --engine inprocess and --allow-no-relevant" in err.getvalue()
    for command in (["eval", "--run", "-"], ["compare", "--baseline", "-", "--run", str(run)]):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"q1 Q0 d1 1 1.0 r\n")))
        out, err = io.StringIO(), io.StringIO()
        assert main([command[0], "--engine", "stream" if command[0] == "eval" else "duckdb", "--dataset",
                     str(qrels), *command[1:]], out, err) == 2  # fmt: skip
        assert "-: standard input is read by --engine inprocess only" in err.getvalue(), err.getvalue()
