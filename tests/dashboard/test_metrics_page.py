"""The Metrics page: one card per metric of the registry, with the names trec_eval prints for it."""

from __future__ import annotations

from ragmetrics.engine.metrics import METRICS, trec_eval_names
from tests.dashboard.apptest import no_problems, open_page


def test_each_card_names_the_metric_and_every_trec_eval_name_of_it():
    at = open_page("metrics")
    no_problems(at)
    cards = [m.value for m in at.markdown if m.value.startswith("**")]
    assert len(cards) == len(METRICS)
    assert any(card.startswith("**MAP** · `map` · trec_eval `map`, `map_cut_k`\n") for card in cards), cards[:8]
    assert any(card.startswith("**nDCG** · `ndcg` · trec_eval `ndcg`, `ndcg_cut_k`\n\n") for card in cards)
    assert trec_eval_names(METRICS["mrr"]) == ["recip_rank"] and trec_eval_names(METRICS["judged"]) == []
