"""The seeded PPI studies of docs/ppi.md beyond the coverage table of tests/test_ppi.py, in its simulation (SciFact-like
pools of 12, nDCG@10, N = 500 queries):

* ``small``: few labelled queries (n = 10, 15, 20, 30), the "good" judge, two runs of equal quality: coverage of
  the 95% interval of a run's mean, and the size of the corrected delta's test (``queries``) or the non-coverage of
  the delta's interval (``dataset``);
* ``strata``: queries of two kinds (60% easy, 40% hard), the human sample drawn within each: coverage of the
  stratified interval of the population's mean, the strata's shares estimated from the sample;
* ``accurate``: the ``dataset`` target with an accurate judge (misses 3% of relevant documents, invents 0.5%): coverage
  of a run's mean, by the number of labelled queries where the judge and the humans differ.

``PYTHONPATH=. python tests/ppi_studies.py {small,strata,accurate} [SEEDS]`` (default 2,000 seeds).
"""

from __future__ import annotations

import sys

import numpy as np

import tests.test_ppi as T
from ragmetrics.analysis.ppi import MIN_DIFFERING, ppi_mean, ppi_paired, sample_plan

N = 500


def small(seeds: int) -> None:
    T.SIGNALS = (1.0, 1.0)  # equal runs: the null is true
    for population in ("queries", "dataset"):
        rng = np.random.default_rng(11)
        if population == "dataset":
            truth1, tops1 = T.simulate_queries(rng, (N,))
            truth = np.broadcast_to(truth1, (seeds, N, T.POOL))
            tops = [np.broadcast_to(t, (seeds, N, 10)) for t in tops1]
        else:
            truth, tops = T.simulate_queries(rng, (seeds, N))
        labels = T.judge(rng, truth, 0.2, 0.05)
        f, y = [T.ndcg10(labels, t) for t in tops], [T.ndcg10(truth, t) for t in tops]
        if population == "dataset":
            true_mean = y[0].mean(axis=1)
        else:
            big_t, big_tops = T.simulate_queries(np.random.default_rng(12345), (200_000,))
            true_mean = np.full(seeds, T.ndcg10(big_t, big_tops[0]).mean())
        for n in (10, 15, 20, 30):
            cover = reject = 0
            for s in range(seeds):
                sampled = np.zeros(N, bool)
                sampled[rng.choice(N, n, replace=False)] = True
                h = [np.where(sampled, v[s], np.nan) for v in y]
                m = ppi_mean(f[0][s], h[0], population=population)
                cover += m.ppi.ci_low <= true_mean[s] <= m.ppi.ci_high
                d = ppi_paired(f[1][s], f[0][s], h[1], h[0], population=population)
                if population == "dataset":
                    truth_d = (y[1][s] - y[0][s]).mean()
                    reject += not (d.ppi.ci_low <= truth_d <= d.ppi.ci_high)
                else:
                    reject += d.ppi.p_value < 0.05
            what = "size of the delta test" if population == "queries" else "non-coverage of the delta interval"
            print(f"target {population:8s} n={n:2d}: mean coverage {cover / seeds:.3f}; {what} {reject / seeds:.3f}")


def strata(seeds: int) -> None:
    def draw(rng: np.random.Generator, shape: tuple[int, ...], signal: float) -> tuple[np.ndarray, np.ndarray]:
        T.SIGNALS = (signal,)
        truth, (top,) = T.simulate_queries(rng, shape)
        return truth, top

    easy_t, easy_top = draw(np.random.default_rng(1), (400_000,), 3.0)
    hard_t, hard_top = draw(np.random.default_rng(2), (400_000,), 0.2)
    target = 0.6 * T.ndcg10(easy_t, easy_top).mean() + 0.4 * T.ndcg10(hard_t, hard_top).mean()
    ids = [str(i) for i in range(N)]
    for labelled in (40, 100):
        rng = np.random.default_rng(5)
        covered = {"stratified PPI": 0, "stratified human-only": 0, "unstratified PPI": 0}
        for s in range(seeds):
            easy = rng.random(N) < 0.6
            truth, top = np.empty((N, T.POOL), np.int8), np.empty((N, 10), np.int64)
            truth[easy], top[easy] = draw(rng, (int(easy.sum()),), 3.0)
            truth[~easy], top[~easy] = draw(rng, (int((~easy).sum()),), 0.2)
            f, y = T.ndcg10(T.judge(rng, truth, 0.2, 0.05), top), T.ndcg10(truth, top)
            kinds = np.where(easy, "easy", "hard")
            chosen = np.array([int(q) for q in sample_plan(ids, labelled, seed=s, strata=kinds)])
            human = np.full(N, np.nan)
            human[chosen] = y[chosen]
            r, u = ppi_mean(f, human, strata=kinds), ppi_mean(f, human)
            covered["stratified PPI"] += r.ppi.ci_low <= target <= r.ppi.ci_high
            covered["stratified human-only"] += r.human_only.ci_low <= target <= r.human_only.ci_high
            covered["unstratified PPI"] += u.ppi.ci_low <= target <= u.ppi.ci_high
        print(f"n={labelled}, proportional: " + "; ".join(f"{k} {v / seeds:.3f}" for k, v in covered.items()))


def accurate(seeds: int) -> None:
    T.SIGNALS = (1.0, 1.0)
    rng = np.random.default_rng(3)
    truth, tops = T.simulate_queries(rng, (N,))
    y = [T.ndcg10(truth, t) for t in tops]
    true_mean, true_d = y[0].mean(), (y[1] - y[0]).mean()
    for n in (10, 30, 50, 100, 200):
        means, deltas, by = 0, 0, {False: [], True: []}
        for _ in range(seeds):
            f = [T.ndcg10(T.judge(rng, truth, 0.03, 0.005), t) for t in tops]
            sampled = np.zeros(N, bool)
            sampled[rng.choice(N, n, replace=False)] = True
            h = [np.where(sampled, v, np.nan) for v in y]
            d = ppi_paired(f[1], f[0], h[1], h[0], population="dataset").ppi
            m = ppi_mean(f[0], h[0], population="dataset")
            ok = m.ppi.ci_low <= true_mean <= m.ppi.ci_high
            means += ok
            deltas += d.ci_low <= true_d <= d.ci_high
            by[m.differing >= MIN_DIFFERING].append(ok)
        words = ", ".join(
            f"{'at least' if k else 'fewer than'} {MIN_DIFFERING} differing: {np.mean(v):.3f} ({len(v)} seeds)"
            for k, v in by.items()
            if v
        )
        print(
            f"n={n:3d}: mean coverage {means / seeds:.3f}, delta coverage {deltas / seeds:.3f}; the mean's by {words}"
        )


if __name__ == "__main__":
    study = {"small": small, "strata": strata, "accurate": accurate}[sys.argv[1]]
    study(int(sys.argv[2]) if len(sys.argv) > 2 else 2_000)
