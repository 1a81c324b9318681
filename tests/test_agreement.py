"""Agreement of two runs without judgments: RBO^a_EXT, overlap@k and churn@k, in the library and `ragmetrics agree`.

RBO is checked against values computed by hand from Webber, Moffat & Zobel (2010) and Corsi & Urbano (2024), against
a literal transcription of Webber et al.'s equation 32 (untied lists of any lengths), and, with ties, against the
mean of that equation over every order of the tied items (what RBO^a is, for lists of equal length).
"""

from __future__ import annotations

import io
import itertools
import json
import math
import random

import pytest

import ragmetrics as rm
from ragmetrics.analysis.agreement import agreement, rbo
from ragmetrics.cli import main
from tests import oracle


def webber_ext(x: list[str], y: list[str], p: float) -> float:
    """Webber et al. 2010, equation 32, term by term with sets (S the shorter list, L the longer)."""
    short, long = (x, y) if len(x) <= len(y) else (y, x)
    s, l = len(short), len(long)  # noqa: E741
    overlap = [len(set(short[:d]) & set(long[:d])) for d in range(1, l + 1)]  # X_d, with S[:d] = S past s
    x_s, x_l = overlap[s - 1], overlap[l - 1]
    total = sum(overlap[d - 1] / d * p**d for d in range(1, l + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((x_l - x_s) / l + x_s / s) * p**l


# --- RBO by hand ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y", "p", "expected"),
    [
        (["a", "b", "c"], ["a", "b", "c"], 0.9, 1.0),  # (1 - p)(1 + p + p^2) + p^3
        (["a", "b", "c"], ["x", "y", "z"], 0.9, 0.0),
        # s = 2, l = 3: A = 1, 1/2, then (X_3 + (3 - 2) A_2) / 3 = 5/6, tail (5/6) p^4 / (1 - p): 5/6 at p = 1/2
        (["a", "b"], ["a", "c", "b"], 0.5, 5 / 6),
        # b, c tied at ranks 2-3: each in the top 2 with weight 1/2; X = 1, 1.5, 3; A = 1, 3/4, 1; 15/16 at p = 1/2,
        # the mean of [a, b, c] (1) and [a, c, b] (7/8) against [a, b, c]
        (["a", {"b", "c"}], ["a", "b", "c"], 0.5, 15 / 16),
        # a, b tied in the shorter list: X = 1/2, 1, 2; A = 1/2, 1/2, then (2 + 1/2) / 3; 7/12 at p = 1/2
        ([{"a", "b"}], ["b", "c", "a"], 0.5, 7 / 12),
        # one list empty: nothing in common; a single shared item of two one-item lists: 1
        ([], ["a"], 0.9, 0.0),
        (["a"], ["a"], 0.9, 1.0),
    ],
)
def test_rbo_by_hand(x, y, p, expected):
    assert rbo(x, y, p) == pytest.approx(expected, abs=1e-12)
    assert rbo(y, x, p) == pytest.approx(expected, abs=1e-12)  # symmetric


def test_rbo_of_two_empty_lists_is_left_out():
    assert math.isnan(rbo([], [], 0.9))


@pytest.mark.parametrize("seed", range(60))
def test_untied_rbo_equals_webbers_equation_32(seed):
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(20)]
    x, y = rng.sample(pool, rng.randint(1, 15)), rng.sample(pool, rng.randint(1, 15))
    p = rng.choice([0.5, 0.8, 0.9, 0.98])
    assert rbo(x, y, p) == pytest.approx(webber_ext(x, y, p), abs=1e-12)


def _orders(ranking: list) -> list[list[str]]:
    """Every untied order of a ranking with tie groups."""
    groups = [[entry] if isinstance(entry, str) else list(itertools.permutations(sorted(entry))) for entry in ranking]
    return [[item for part in choice for item in ([part] if isinstance(part, str) else part)] for choice in
            itertools.product(*groups)]  # fmt: skip


@pytest.mark.parametrize("seed", range(30))
def test_tied_rbo_is_the_mean_over_the_orders_of_the_ties(seed):
    """Corsi & Urbano's RBO^a: for lists of equal length, the mean of the untied RBO over every tie order."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(12)]
    n = rng.randint(2, 7)

    def tied(items: list[str]) -> list:
        out: list = []
        i = 0
        while i < len(items):
            size = min(rng.choice([1, 1, 2, 3]), len(items) - i)
            out.append(items[i] if size == 1 else set(items[i : i + size]))
            i += size
        return out

    x, y = tied(rng.sample(pool, n)), tied(rng.sample(pool, n))
    p = rng.choice([0.5, 0.9])
    pairs = list(itertools.product(_orders(x), _orders(y)))
    mean = sum(webber_ext(a, b, p) for a, b in pairs) / len(pairs)
    assert rbo(x, y, p) == pytest.approx(mean, abs=1e-12)


def test_rbo_refuses_an_item_twice():
    with pytest.raises(rm.RagMetricsError, match="a ranking holds 'a' twice; expected each item once"):
        rbo(["a", {"b", "a"}], ["a"])


@pytest.mark.parametrize("p", [0, 1, 1.5, -0.1])
def test_rbo_refuses_a_persistence_outside_0_1(p):
    with pytest.raises(rm.RagMetricsError, match="The 'p' parameter must be a number between 0 and 1"):
        rbo(["a"], ["a"], p)


# --- two runs ------------------------------------------------------------------------------------------

# q1: A ranks d1..d5; B ranks d1, d9, d3, d2 (d9 new, d4 and d5 gone). q2: A ties d1 and d2 (equal scores), B ranks
# d2, d1. q3: only A answers it.
RUN_A = rm.Run.from_dict(
    {"q1": {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0}, "q2": {"d1": 1.0, "d2": 1.0}, "q3": {"d7": 1.0}},
    name="a",
)
RUN_B = rm.Run.from_lists({"q1": ["d1", "d9", "d3", "d2"], "q2": ["d2", "d1"]}, name="b")


def test_overlap_and_churn_by_hand():
    result = agreement(RUN_A, RUN_B, k=[1, 2, 3, 10], missing="zero")
    values = result.values
    # q1 top 3: {d1, d2, d3} vs {d1, d9, d3}: 2 of 3 shared; top 10: 5 vs 4 documents, 3 shared, over 5
    assert values.loc["q1", ["overlap@1", "overlap@2", "overlap@3", "overlap@10"]].tolist() == [1.0, 0.5, 2 / 3, 0.6]
    assert values.loc["q1", ["churn@1", "churn@2", "churn@3", "churn@10"]].tolist() == [0.0, 0.5, 1 / 3, 0.4]
    # q2: A's tie is broken by doc id descending for the top k (d2 first), as every metric's ranking is
    assert values.loc["q2", ["overlap@1", "churn@1", "overlap@2"]].tolist() == [1.0, 0.0, 1.0]
    # q3: B does not answer it: nothing shared
    assert values.loc["q3", ["rbo", "overlap@1", "churn@1"]].tolist() == [0.0, 0.0, 1.0]
    assert result.mean()["overlap@2"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert (result.queries_compared, result.one_sided) == (3, 1)


def test_a_query_only_one_run_ranks_is_left_out_unless_missing_zero():
    """Was: q3, which run b does not rank, scored 0 (churn 1) in the mean, a disagreement never measured. By
    default it is left out, as a query neither run ranks; missing="zero" (trec_eval -c) scores it 0."""
    result = agreement(RUN_A, RUN_B, k=2)
    assert result.values.loc["q3"].isna().all() and (result.queries_compared, result.one_sided) == (2, 1)
    assert result.mean()["overlap@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert result.to_dict()["missing"] == "skip" and result.to_dict()["one_sided"] == 1
    with pytest.raises(
        rm.RagMetricsError, match=r"none of the 1 queries compared is ranked by both runs \(1 only one run"
    ):
        agreement(RUN_A, RUN_B, queries=["q3"])
    with pytest.raises(rm.RagMetricsError, match="The 'missing' parameter must be one of 'zero', 'skip'"):
        agreement(RUN_A, RUN_B, missing="drop")  # type: ignore[arg-type]


def test_rbo_of_two_runs_reads_their_ties():
    result = agreement(RUN_A, RUN_B, p=0.5)
    assert result.values.at["q1", "rbo"] == pytest.approx(webber_ext(["d1", "d2", "d3", "d4", "d5"],
                                                                     ["d1", "d9", "d3", "d2"], 0.5), abs=1e-12)  # fmt: skip
    # q2: {d1, d2} tied against d2, d1: X = 1/2, 2; A = 1/2, 1; (1/2 · 1/2 + 1 · 1/4) + 1 · 1/4 = 3/4, the mean of
    # [d1, d2] against [d2, d1] (1/2) and [d2, d1] against itself (1)
    assert result.values.at["q2", "rbo"] == pytest.approx(0.75, abs=1e-12)
    assert result.values.at["q2", "rbo"] == pytest.approx(rbo([{"d1", "d2"}], ["d2", "d1"], 0.5), abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_many_queries_at_once_equal_each_query_alone(seed):
    """The runs' rankings are read in one pass over every query: each query's value is its own pair's."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(25)]
    runs: list[dict[str, dict[str, float]]] = [{}, {}]
    for q in range(rng.randint(1, 8)):
        for run in runs:
            if rng.random() < 0.9:
                docs = rng.sample(pool, rng.randint(1, 12))
                run[f"q{q}"] = {doc: float(rng.randint(0, 4)) for doc in docs}  # ties: equal scores

    def groups(ranked: dict[str, float]) -> list:
        by_score: dict[float, set[str]] = {}
        for doc, score in ranked.items():
            by_score.setdefault(score, set()).add(doc)
        return [by_score[score] for score in sorted(by_score, reverse=True)]

    a, b = rm.Run.from_dict(runs[0], name="a"), rm.Run.from_dict(runs[1], name="b")
    p, k = rng.choice([0.5, 0.9]), rng.randint(1, 12)
    result = agreement(a, b, p=p, k=k, missing="zero").values
    for qid in result.index:
        x, y = groups(runs[0].get(qid, {})), groups(runs[1].get(qid, {}))
        assert result.at[qid, "rbo"] == pytest.approx(rbo(x, y, p), abs=1e-12), qid
        top_a, top_b = (oracle.trec_order([(qid, d, v) for d, v in run.get(qid, {}).items()]).get(qid, [])[:k]
                        for run in runs)  # fmt: skip
        shared = len(set(top_a) & set(top_b))
        assert result.at[qid, f"overlap@{k}"] == shared / max(len(top_a), len(top_b)), qid


def test_queries_given_are_the_queries_compared():
    result = agreement(RUN_A, RUN_B, queries=["q2", "q4"])
    assert list(result.values.index) == ["q2", "q4"]
    assert result.values.loc["q4"].isna().all() and result.queries_compared == 1
    assert result.mean()["rbo"] == result.values.at["q2", "rbo"]


def test_an_alignment_gives_its_run():
    dataset = rm.Dataset.from_dict({"q1": {"d1": 1}})
    assert agreement(rm.align(dataset, RUN_A), RUN_B).values.equals(agreement(RUN_A, RUN_B).values)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"k": 0}, "The 'k' parameter must be an int >= 1"), ({"p": 1.0}, "The 'p' parameter must be a number"),
     ({"k": []}, "The 'k' parameter must be an int >= 1"), ({"queries": []}, "no query to compare")],
)  # fmt: skip
def test_bad_parameters_are_one_line_errors(kwargs, message):
    with pytest.raises(rm.RagMetricsError, match=message):
        agreement(RUN_A, RUN_B, **kwargs)


# --- the CLI: two run files, no qrels ------------------------------------------------------------------


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main([str(a) for a in argv], out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture
def run_files(tmp_path):
    a = tmp_path / "a.trec"
    a.write_text("q1 Q0 d1 1 5 a\nq1 Q0 d2 2 4 a\nq1 Q0 d3 3 3 a\nq2 Q0 d1 1 1 a\nq2 Q0 d2 2 1 a\n")
    b = tmp_path / "b.trec"
    b.write_text("q1 Q0 d1 1 3 b\nq1 Q0 d9 2 2 b\nq1 Q0 d3 3 1 b\nq2 Q0 d2 1 2 b\nq2 Q0 d1 2 1 b\n")
    return a, b


def test_agree_prints_rbo_overlap_and_churn_of_two_runs_without_qrels(run_files):
    code, out, err = run_cli("agree", "--run", run_files[0], "--run", run_files[1], "-k", "2", "-p", "0.5",
                             "--per-query")  # fmt: skip
    assert code == 0, err
    printed = {tuple(part.strip() for part in line.split("\t")[:2]): line.split("\t")[2] for line in out.splitlines()}
    assert printed[("runid", "all")] == "a vs b" and printed[("num_q", "all")] == "2"
    assert printed[("overlap@2", "q1")] == "0.5000" and printed[("churn@2", "q1")] == "0.5000"
    assert printed[("rbo", "q2")] == "0.7500"  # the tie of run a, as in the library's hand-computed case
    q1 = webber_ext(["d1", "d2", "d3"], ["d1", "d9", "d3"], 0.5)
    assert printed[("rbo", "all")] == f"{(q1 + 0.75) / 2:.4f}"
    assert printed[("overlap@2", "all")] == "0.7500" and printed[("churn@2", "all")] == "0.2500"


def test_agree_reads_a_queries_file_and_writes_json(run_files, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q2", "text": "second"}\n{"_id": "q5", "text": "nobody answers it"}\n')
    code, out, err = run_cli("agree", "--run", run_files[0], "--run", run_files[1], "--queries", queries,
                             "--format", "json", "--per-query")  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["runs"] == ["a", "b"] and data["num_q"] == 1 and list(data["per_query"]) == ["q2", "q5"]
    assert data["per_query"]["q5"]["rbo"] is None and data["mean"]["overlap@10"] == 1.0
    # said, as a query only one run ranks is (was: left out without a word)
    assert data["unranked"] == 1 and "1 query of --queries" in err and "that neither run ranks is left out" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["-p", "1"], "expected a number strictly between 0 and 1 (e.g. 0.9)"),
     (["-k", "0"], "expected a whole number of at least 1")],
)  # fmt: skip
def test_agree_refuses_bad_options_in_one_line(run_files, extra, message, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["agree", "--run", str(run_files[0]), "--run", str(run_files[1]), *extra])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_agree_needs_exactly_two_runs(run_files):
    code, _, err = run_cli("agree", "--run", run_files[0])
    assert code == 2 and err == "ragmetrics: error: agree compares two runs: give --run twice (got 1)\n"


def test_agree_and_fuse_refuse_runs_that_share_no_query_and_note_a_partial_share(run_files, tmp_path):
    a, b = run_files
    other = tmp_path / "other.trec"  # run a's rows under another id scheme: no query in common
    other.write_text("".join(f"Q{line}\n" for line in a.read_text().splitlines()))
    fused = tmp_path / "f.trec"
    for argv in (["agree", "--run", a, "--run", other], ["fuse", "--run", a, "--run", other, "-o", fused]):
        code, _, err = run_cli(*argv)
        assert code == 2, err
        assert err == (
            f"ragmetrics: error: {argv[0]}: run 'a' shares no query with 'other' (its ids 'q1', 'q2'; theirs 'Qq1', "
            "'Qq2'): do the runs number their queries the same way?\n"
        )
    assert not fused.exists()
    part = tmp_path / "part.trec"
    part.write_text("q1 Q0 d1 1 3 part\n")
    for argv in (["agree", "--run", a, "--run", part], ["fuse", "--run", b, "--run", part, "-o", fused]):
        code, _, err = run_cli(*argv)
        assert code == 0, err
        who = "a" if argv[0] == "agree" else "b"
        note = f"ragmetrics: note: {argv[0]}: 1 of the 2 queries the runs rank are in every run ('{who}' ranks 2, 'part' ranks 1)"
        assert note in err
    assert "note" not in run_cli("agree", "--run", a, "--run", b)[2]


def test_agree_leaves_out_a_query_only_one_run_ranks_and_says_so(run_files, tmp_path):
    """Was: q2, which the partial run lacks, scored 0 (num_q 2, mean overlap 0.5) beside a note of the partial
    share. Now it is left out (num_q 1) and the note says so and names --missing zero, which scores it 0."""
    a = run_files[0]
    part = tmp_path / "part.trec"
    part.write_text("q1 Q0 d1 1 5 part\nq1 Q0 d2 2 4 part\nq1 Q0 d3 3 3 part\n")
    code, out, err = run_cli("agree", "--run", a, "--run", part, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["num_q"], data["missing"], data["one_sided"]) == (1, "skip", 1) and data["mean"]["overlap@10"] == 1.0
    assert err.endswith(
        "ragmetrics: note: agree: 1 query that only one run ranks is left out of num_q and the mean (--missing zero "
        "scores it 0, as trec_eval -c)\n"
    )
    code, out, err = run_cli("agree", "--run", a, "--run", part, "--format", "json", "--missing", "zero")
    data = json.loads(out)
    assert (data["num_q"], data["missing"], data["mean"]["overlap@10"]) == (2, "zero", 0.5)
    assert err.endswith(
        "ragmetrics: note: agree: 1 query that only one run ranks is scored 0 (churn 1), as --missing zero asks\n"
    )
