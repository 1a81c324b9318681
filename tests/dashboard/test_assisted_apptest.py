"""The Judge page's assisted judging under AppTest, on a real SQLite store and a stub OpenAI-compatible endpoint on
127.0.0.1 registered through RAGMETRICS_MODELS: run the endpoint judge over the pool, see the agreement and the
corrected numbers appear as people label the planned sample."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from dashboard.core import assisted as core
from dashboard.data.workspace import Workspace
from dashboard.ui.assisted import JOB_KEY, OFFERED
from ragmetrics.analysis import ppi
from ragmetrics.analysis.verdicts import SAID
from ragmetrics.engine.metrics import parse_metric
from ragmetrics.judges.base import provenance_of
from ragmetrics.judges.call import CallableJudge
from ragmetrics.judges.registry import JUDGES
from ragmetrics.store.database import Store
from tests.dashboard.apptest import no_problems, open_page, param
from tests.dashboard.test_assisted import N_QUERIES, TRUTH, assist_dataset, judge_grade, stub_answer

pytestmark = pytest.mark.apptest


def _store(folder: Path) -> Store:
    return Store(f"sqlite:///{folder / 'ragmetrics.sqlite'}")


def _seed(tmp_path, monkeypatch, stub) -> dict[str, str]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMETRICS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGMETRICS_SAMPLES", "off")
    monkeypatch.setenv("RAGMETRICS_MODELS", f"stubjudge=openai:{stub.url}?model=stub-model&cache=off")
    monkeypatch.delenv("RAGMETRICS_STORE_URL", raising=False)
    monkeypatch.delenv("RAGMETRICS_BASE_URL", raising=False)
    ws = Workspace(_store(tmp_path))
    dataset, runs = assist_dataset()
    entry = ws.add_dataset(dataset, source="assist-mini")
    ids = {"dataset": entry.id, **{run.name: ws.add_run(entry.id, run).id for run in runs}}
    ws.store.engine.dispose()
    return ids


@pytest.fixture
def seeded(tmp_path, monkeypatch, model_stub) -> dict[str, str]:
    return _seed(tmp_path, monkeypatch, model_stub(stub_answer))


def _params(ids: dict[str, str]) -> dict[str, str]:
    return {"ds": ids["dataset"], "runs": f"{ids['alpha']},{ids['beta']}", "m": "ndcg", "k": "3"}


def _markdown(at) -> str:  # type: ignore[no-untyped-def]
    return " ".join(str(m.value) for m in at.markdown).replace("\\", "")


def test_only_judges_the_page_can_build_are_offered() -> None:
    assert "callable" not in OFFERED  # it would run code named in the browser
    assert set(OFFERED) == {n for n, k in JUDGES.items() if k.needs != "call"}


def test_the_endpoint_judge_runs_then_agreement_and_corrected_numbers_follow_the_labels(seeded, tmp_path) -> None:
    at = open_page("judge", _params(seeded))
    no_problems(at)
    assert "No judge has labelled this pool yet." in [c.value for c in at.caption]
    assert at.selectbox(key="judge.run_model").options == ["stubjudge"]
    # the picker names the judges (a third of the form's width: a description in each option was cut); its help
    # describes each, from the registry
    picker = at.selectbox(key="judge.run_judge")
    assert picker.options == list(OFFERED)
    assert all(f"**{n}**: {JUDGES[n].help}" in picker.help for n in OFFERED)
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    next(b for b in at.button if b.label == "Run the judge over the pool").click()
    at.run()
    no_problems(at)
    job = at.session_state[JOB_KEY]
    assert job.wait(60)
    at.run()
    no_problems(at)
    done = " ".join(str(s.value) for s in at.success).replace("\\", "")
    assert f"graded {2 * N_QUERIES} of {2 * N_QUERIES} pairs; {2 * N_QUERIES} label(s) stored" in done
    # the form comes back as it was left (was: "rule" again, since a widget not drawn while the job ran is forgotten)
    assert at.selectbox(key="judge.run_judge").value == "endpoint"
    assert at.selectbox(key="judge.run_model").value == "stubjudge"

    store = _store(tmp_path)
    labels = store_labels = Workspace(store).lineage_labels(seeded["dataset"])
    assert len(store_labels) == 2 * N_QUERIES and store_labels["source"].str.startswith("judge:endpoint@1#").all()
    assert all(judge_grade(q, d) == g for q, d, g in zip(labels.query_id, labels.doc_id, labels.label))
    assert "People have labelled none of the judge's pairs yet: label the planned sample." in [
        c.value for c in at.caption
    ]

    # people label the first three planned queries (as the page's plan queue offers them)
    dataset, _ = assist_dataset()
    plan = core.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")
    for q in plan[:3]:
        for s in "bc":
            store.add_label(seeded["dataset"], q, f"{q}-{s}", TRUTH[(q, f"{q}-{s}")], author="ann")
    at.run()
    no_problems(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Pairs both labelled"] == "6"
    assert "Weighted kappa (linear)" in metrics  # a graded scale (0-2)
    text = _markdown(at)
    assert f"6 human / {2 * N_QUERIES - 6} judge labels" in text
    assert f"3 of the {N_QUERIES} queries of the plan are labelled; next: query **{plan[3]}**" in text
    # 3 labelled queries: too few to tell, no corrected interval (as a corrected delta of so few), so neither a
    # projection of it nor a note on its width (was: "3 more labelled queries would shrink ... to about ±...")
    for run in ("alpha", "beta"):
        assert f"**{run}**: corrected **" in text and f"({ppi.TOO_FEW_WORDS}) · judge-only" in text
    assert "would shrink the corrected interval" not in text
    assert "score alike here" not in " ".join(w.value for w in at.warning)
    corrected = next(d.value for d in at.dataframe if "corrected" in d.value.columns)
    assert corrected["run"].tolist() == ["alpha", "beta"] and (corrected["n_labelled"] == 3).all()

    # the page's queue follows the plan when asked: the pair shown is the fourth planned query's
    at.radio(key="judge.order").set_value("plan").run()
    no_problems(at)
    assert f"{plan[3]}-" in _markdown(at)
    # the plan's order is not by impact: no "every pair that can change something comes first" beside it
    assert not [i for i in at.info if "cannot change anything" in i.value]
    # the queue's order, the plan and the judge shown travel in the link, and a link reopens them
    source = str(store_labels["source"].iloc[0])
    assert (param(at, "jq"), param(at, "jp"), param(at, "js")) == ("plan", None, source)
    at.selectbox(key="judge.plan").set_value("category").run()
    no_problems(at)
    assert param(at, "jp") == "category"
    again = open_page("judge", {**_params(seeded), "jq": "plan", "jp": "category", "js": source})
    no_problems(again)
    assert again.radio(key="judge.order").value == "plan" and again.selectbox(key="judge.plan").value == "category"
    stratified = core.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "category")
    upcoming = next(q for q in stratified if q not in plan[:3])  # the queue follows the stratified plan now
    assert f"{upcoming}-" in _markdown(again)
    store.engine.dispose()


def _run_the_form(at) -> None:  # type: ignore[no-untyped-def]
    """Submit the judge form and wait for its job to end (reported on the page's next run)."""
    next(b for b in at.button if b.label == "Run the judge over the pool").click()
    at.run()
    if JOB_KEY in at.session_state:  # else it ended before the page's rerun, which reported it
        assert at.session_state[JOB_KEY].wait(60)
        at.run()
    no_problems(at)


def test_the_learned_judge_runs_over_the_endpoint_s_labels(seeded, tmp_path) -> None:
    at = open_page("judge", _params(seeded))
    assert at.selectbox(key="judge.run_base").options == ["no other judge"]  # no judge has labelled yet
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    next(b for b in at.button if b.label == "Run the judge over the pool").click()
    at.run()
    assert at.session_state[JOB_KEY].wait(60)
    store = _store(tmp_path)
    dataset, _ = assist_dataset()
    for q in core.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")[:4]:
        for s in "bc":
            store.add_label(seeded["dataset"], q, f"{q}-{s}", TRUTH[(q, f"{q}-{s}")], author="ann")
    at.run()
    no_problems(at)
    endpoint = next(s for s in Workspace(store).lineage_labels(seeded["dataset"])["source"] if s != core.HUMAN)
    box = at.selectbox(key="judge.run_base")
    assert box.options == ["no other judge", core.judge_title(endpoint)]
    at.selectbox(key="judge.run_judge").set_value("learned")
    box.set_value(endpoint)
    _run_the_form(at)
    # the form comes back as it was left, the base judge too
    assert at.selectbox(key="judge.run_base").value == endpoint
    labels = Workspace(store).lineage_labels(seeded["dataset"])
    learned = labels[labels["source"].str.startswith("judge:learned@2#")]
    assert len(learned) == 2 * N_QUERIES  # people's pairs too (cross-fitted), for the corrected numbers
    # the endpoint's labels are part of its configuration: the learned judge alone is another judge
    at.selectbox(key="judge.run_base").set_value("")
    _run_the_form(at)
    assert f"learned judge: graded {2 * N_QUERIES} of {2 * N_QUERIES} pairs" in " ".join(
        str(s.value) for s in at.success
    ).replace("\\", "")
    labels = Workspace(store).lineage_labels(seeded["dataset"])
    sources = set(labels.loc[labels["source"].str.startswith("judge:learned@2#"), "source"])
    assert len(sources) == 2 and set(learned["source"]) < sources
    store.engine.dispose()


def test_overview_and_compare_show_the_corrected_numbers_with_the_badge(seeded, tmp_path) -> None:
    params = _params(seeded)
    at = open_page("overview", params)
    no_problems(at)
    assert not [e for e in at.expander if "corrected by the human sample" in e.label]  # no judge yet: nothing
    store = _store(tmp_path)
    ws = Workspace(store)
    judge = CallableJudge("tests:truth", lambda pair, top: judge_grade(pair.query_id, pair.doc_id))
    ws.add_judge_labels(seeded["dataset"], [(q, d, judge_grade(q, d)) for q, d in TRUTH], provenance_of(judge, 2))
    dataset, runs = assist_dataset()
    plan = core.plan_order(dataset, dataset.query_ids.astype(str).tolist(), "random")
    for q in plan[:4]:
        for s in "bc":
            ws.add_label(seeded["dataset"], q, f"{q}-{s}", TRUTH[(q, f"{q}-{s}")], author="ann")
    human = core.human_labels(ws.lineage_labels(seeded["dataset"]))
    judged = core.judge_labels(ws.lineage_labels(seeded["dataset"]), provenance_of(judge, 2).source)
    expected = core.corrected_table(dataset, runs, parse_metric("ndcg@3"), human, judged, tuple(plan[:4]))
    deltas = core.corrected_deltas(dataset, runs, "alpha", parse_metric("ndcg@3"), human, judged, tuple(plan[:4]))
    store.engine.dispose()

    badge = f"8 human / {2 * N_QUERIES - 8} judge labels"
    at = open_page("overview", params)
    no_problems(at)
    box = next(e for e in at.expander if "corrected by the human sample" in e.label)
    assert box.label == f"nDCG@3 corrected by the human sample ({badge})"
    text = " ".join(m.value for m in box.markdown).replace("\\", "")
    assert expected["too_few"].all()  # 4 labelled queries: too few to tell, as a corrected delta of so few
    for row in expected.itertuples():
        assert f"**{row.run}**: corrected **{row.corrected:.3f}** ({ppi.TOO_FEW_WORDS}) · judge-only" in text
    at = open_page("compare", params)
    no_problems(at)
    box = next(e for e in at.expander if "corrected by the human sample" in e.label)
    text = " ".join(m.value for m in box.markdown).replace("\\", "")
    assert deltas["run"].tolist() == ["beta"]
    assert f"**beta** − alpha: corrected Δ **{deltas['delta'].iloc[0]:+.3f}**" in text
    # one family with the page's table (every pair of the runs on every compared metric), and the interval beside
    # the Holm p-value adjusted as it is
    family = re.search(r"Holm-corrected over \d+ comparison\(s\)[^,.:]*", " ".join(c.value for c in at.caption))
    assert family is not None
    said = " ".join(c.value for c in box.caption)
    assert family.group(0) in said and "intervals: Holm-adjusted CI" in said, said
    # the panel's lambda is tuned, on 4 labelled queries; its note speaks of an interval, and a too-few row shows
    # none: not said, as the CLI does not say it, and no other caution of an interval either
    assert "With the tuned lambda" not in said and "the interval is rough" not in text + said, said
    assert not any("rough" in w.value or "too narrow" in w.value for w in box.warning)
    # the row says the library's verdict in the registry's words (the CLI's): 4 labelled queries, too few to tell,
    # so neither the Holm p nor the interval at its level (was "Holm p 0.16" beside the mark)
    assert deltas["verdict"].tolist() == ["too few"] and f" · {SAID['too few'].mark} (" in text, text
    assert deltas["p_value_corrected"].notna().all()
    assert re.search(r"corrected Δ \*\*[+-]\d\.\d{3}\*\* no interval · ", text), text
    assert "Holm p" not in text and "% CI" not in text, text


def test_a_version_takes_people_s_labels_and_the_judges_only_when_asked(seeded, tmp_path) -> None:
    """Was: "Save" made every judge's label a judgment of the version, unsaid, and every page then scored the judge
    as the truth (the verdict flipped) while people's queue emptied. Now people's labels alone by default, the
    judges' by a checkbox, and the message and the Workspace say whose each label is."""
    store = _store(tmp_path)
    ws = Workspace(store)
    judge = CallableJudge("tests:truth", lambda pair, top: judge_grade(pair.query_id, pair.doc_id))
    ws.add_judge_labels(seeded["dataset"], [(q, d, judge_grade(q, d)) for q, d in TRUTH], provenance_of(judge, 2))
    ws.add_label(seeded["dataset"], "q00", "q00-b", TRUTH[("q00", "q00-b")], author="ann")
    store.engine.dispose()
    at = open_page("judge", _params(seeded))
    no_problems(at)
    include = at.checkbox(key="judge.save_judges")
    assert include.label == f"Include the judges' labels of {len(TRUTH) - 1} pair(s) nobody labelled"
    assert include.value is False
    at.button(key="judge.save").click().run()
    no_problems(at)
    said = " ".join(s.value for s in at.success).replace("\\", "")
    assert "Saved 1 label(s) as v1: " in said and "1 people's, 0 a judge's." in said
    assert f"The judges' labels of {len(TRUTH) - 1} pair(s) were left out." in said
    store = _store(tmp_path)
    versions = Workspace(store).version_table(seeded["dataset"])
    assert versions[["labels", "people's", "judges'"]].values.tolist() == [[0, 0, 0], [1, 1, 0]]
    people_only = versions["id"].iloc[1]
    assert len(Workspace(store).store.get_dataset(people_only).qrels) == len(assist_dataset()[0].qrels) + 1
    store.engine.dispose()
    # the people-only version still sees the judge for the corrected numbers and keeps the judge's pairs queued
    at = open_page("judge", {**_params(seeded), "ds": people_only})
    no_problems(at)
    assert f"{2 * N_QUERIES - 1:,}** of" in _markdown(at).replace(",", "")
    # the judges' labels moved on to the version, pending there: asked, its next save takes them, counted apart
    at = open_page("judge", {**_params(seeded), "ds": people_only})
    ws = Workspace(_store(tmp_path))
    ws.add_label(people_only, "q01", "q01-b", TRUTH[("q01", "q01-b")], author="ann")
    ws.store.engine.dispose()
    at.run()
    include = at.checkbox(key="judge.save_judges")
    assert include.label == f"Include the judges' labels of {len(TRUTH) - 2} pair(s) nobody labelled"
    include.check().run()
    at.button(key="judge.save").click().run()
    no_problems(at)
    said = " ".join(s.value for s in at.success).replace("\\", "")
    assert f"1 people's, {len(TRUTH) - 2} a judge's." in said


def test_save_waits_for_the_judge_running_on_the_dataset(tmp_path, monkeypatch, model_stub) -> None:
    """A save while a judge labels the dataset would leave the labels it gives afterwards behind on this version:
    the button waits (people's labels are in the store meanwhile) and says why."""
    release = threading.Event()

    def held(messages: list[dict]) -> str:
        release.wait(60)
        return stub_answer(messages)

    ids = _seed(tmp_path, monkeypatch, model_stub(held))
    store = _store(tmp_path)
    store.add_label(ids["dataset"], "q00", "q00-b", TRUTH[("q00", "q00-b")], author="ann")
    store.engine.dispose()
    at = open_page("judge", _params(ids))
    no_problems(at)
    assert not at.button(key="judge.save").disabled
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    next(b for b in at.button if b.label == "Run the judge over the pool").click()
    at.run()
    try:
        save = at.button(key="judge.save")
        assert save.disabled and "A judge is labelling this dataset" in str(save.help)
    finally:
        release.set()
    assert at.session_state[JOB_KEY].wait(60)
    at.run()
    no_problems(at)
    assert not at.button(key="judge.save").disabled


def test_the_corrected_numbers_follow_the_pool_depth(seeded, tmp_path) -> None:
    """Was: the corrected table was cached on the labels alone, so a deeper pool (fewer queries of the plan fully
    labelled) kept showing the numbers of the shallower one, next to a plan line that said none was labelled."""
    ws = Workspace(_store(tmp_path))
    judge = CallableJudge("tests:truth", lambda pair, top: judge_grade(pair.query_id, pair.doc_id))
    ws.add_judge_labels(seeded["dataset"], [(q, d, judge_grade(q, d)) for q, d in TRUTH], provenance_of(judge, 2))
    for q, d in TRUTH:
        if d.endswith("-b"):
            ws.add_label(seeded["dataset"], q, d, TRUTH[(q, d)], author="ann")
    ws.store.engine.dispose()
    at = open_page("judge", {**_params(seeded), "dp": "1"})
    no_problems(at)
    assert f"{N_QUERIES} of the {N_QUERIES} queries of the plan are labelled" in _markdown(at)
    assert re.search(r"corrected \*\*\d", _markdown(at)), _markdown(at)
    at.number_input(key="judge.depth").set_value(3).run()
    no_problems(at)
    assert f"0 of the {N_QUERIES} queries of the plan are labelled" in _markdown(at)
    assert not re.search(r"corrected \*\*\d", _markdown(at)), _markdown(at)
    assert any("Label the planned queries" in str(i.value) for i in at.info)


def test_a_judge_job_shows_on_its_own_dataset_only_and_a_reloaded_tab_gets_its_outcome(seeded, tmp_path) -> None:
    """Was: this tab's job on dataset A took over dataset B's Judge page (its progress, no run form, Save disabled);
    a tab reloaded while a job ran never showed how it ended."""
    from dashboard.data.jobs import JudgeJob
    from dashboard.ui import assisted as page_assisted
    from ragmetrics import Dataset
    from ragmetrics.judges.registry import make_judge

    ws = Workspace(_store(tmp_path))
    dataset, runs = assist_dataset()
    qrels = dataset.qrels.copy()
    qrels.loc[0, "relevance"] = 1  # another content: another dataset
    other = ws.add_dataset(Dataset.from_frames(qrels, dataset.queries, name="other", documents=dataset.documents))
    other_runs = [ws.add_run(other.id, run).id for run in runs]
    ws.add_label(other.id, "q00", "q00-b", 1, author="ann")
    ws.store.engine.dispose()
    # this session's job on A, not started: it reads as running
    job = JudgeJob(make_judge("rule"), [], 2, lambda labels: (0, 0), "rule judge", dataset_id=seeded["dataset"])
    at = open_page("judge", {"ds": other.id, "runs": ",".join(other_runs), "m": "ndcg", "k": "3"}, {JOB_KEY: job})
    no_problems(at)
    assert not at.get("progress")
    assert not at.button(key="judge.save").disabled
    assert any(b.label == "Run the judge over the pool" for b in at.button)

    # another tab's job on A, found after a reload, then ending with an error: this tab says so
    at = open_page("judge", _params(seeded))
    page_assisted._running()[seeded["dataset"]] = job
    at.run()
    assert at.get("progress")
    job._error = "ConnectionError: the model endpoint refused the connection"
    job._ended = time.monotonic()
    at.run()
    assert any("It stopped\\: ConnectionError" in str(e.value) for e in at.error), [e.value for e in at.error]
    assert seeded["dataset"] not in page_assisted._running()


def test_the_judge_this_tab_started_is_the_one_shown_once_it_labels(seeded, tmp_path) -> None:
    """Was: with two judges labelled before, the page kept showing the one picked before, and the new judge's
    labels were not the ones shown (with one judge before, they were)."""
    from types import SimpleNamespace

    ws = Workspace(_store(tmp_path))
    pairs = [(q, d, 1) for q, d in TRUTH]
    for old in ("judge:rule@1#aaaaaaaaaaaaaaaa", "judge:rule@1#bbbbbbbbbbbbbbbb"):
        ws.add_judge_labels(seeded["dataset"], pairs, SimpleNamespace(source=old))
    ws.store.engine.dispose()
    at = open_page("judge", _params(seeded))
    before = at.selectbox(key="judge.shown_judge").value
    assert before.startswith("judge:rule@1#")
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    _run_the_form(at)
    shown = at.selectbox(key="judge.shown_judge")
    assert len(shown.options) == 3 and shown.value.startswith("judge:endpoint@"), (shown.options, shown.value)
    at.selectbox(key="judge.shown_judge").set_value(before).run()  # and a person may still pick another
    assert at.selectbox(key="judge.shown_judge").value == before


def test_a_judge_on_a_saved_version_grades_the_pairs_people_saved_into_it(seeded, tmp_path) -> None:
    """Was: on a version, the store dropped the judge's grades of the pairs people's saved labels judge (the
    version's own qrels), so agreement said people labelled none of the judge's pairs and every rerun graded them
    again."""
    ws = Workspace(_store(tmp_path))
    labelled = [(q, d) for q, d in TRUTH if d.endswith("-b")][:6]
    for q, d in labelled:
        ws.add_label(seeded["dataset"], q, d, TRUTH[(q, d)], author="ann")
    version = ws.commit_labels(seeded["dataset"], author="ann", judges=False).entry
    assert version is not None
    runs = [r.id for r in ws.runs(version.id)]
    ws.store.engine.dispose()
    at = open_page("judge", {"ds": version.id, "runs": ",".join(runs), "m": "ndcg", "k": "3"})
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    _run_the_form(at)
    done = " ".join(str(s.value) for s in at.success).replace("\\", "")
    assert "24 label(s) stored" in done and "left to the person" not in done, done
    assert {m.label: m.value for m in at.metric}["Pairs both labelled"] == "6"
    judged = core.judge_labels(ws.lineage_labels(version.id), core.judge_sources(ws.lineage_labels(version.id))[0])
    assert set(labelled) <= set(zip(judged["query_id"], judged["doc_id"]))


def test_a_judge_that_ends_while_the_page_reads_its_labels_is_shown_with_them(seeded, tmp_path, monkeypatch) -> None:
    """Was: a judge ending after the page read the labels and before it asked whether the judge ran was reported
    done over the labels read before (no agreement with people), and the page stopped following it. Here it ends
    in that window on every run: the judge waits until the page has read the labels."""
    import streamlit as st

    from dashboard.data import jobs
    from dashboard.ui import assisted as page_assisted

    ws = Workspace(_store(tmp_path))
    labelled = [(q, d) for q, d in TRUTH if d.endswith("-b")][:6]
    for q, d in labelled:
        ws.add_label(seeded["dataset"], q, d, TRUTH[(q, d)], author="ann")
    ws.store.engine.dispose()
    read = threading.Event()
    grade, sample_of = jobs.run_judge, page_assisted.assisted.sample_of

    def graded_once_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert read.wait(60)
        return grade(*args, **kwargs)

    def sample_then_end(*args, **kwargs):  # type: ignore[no-untyped-def]
        job = st.session_state.get(JOB_KEY)
        if job is not None and not read.is_set():  # the labels are read: the judge ends now
            read.set()
            assert job.wait(60)
        return sample_of(*args, **kwargs)

    monkeypatch.setattr(jobs, "run_judge", graded_once_read)
    monkeypatch.setattr(page_assisted.assisted, "sample_of", sample_then_end)
    at = open_page("judge", _params(seeded))
    at.selectbox(key="judge.run_judge").set_value("endpoint")
    next(b for b in at.button if b.label == "Run the judge over the pool").click()
    at.run()
    no_problems(at)
    assert read.is_set()
    assert "24 label(s) stored" in " ".join(str(s.value) for s in at.success).replace("\\", "")
    assert {m.label: m.value for m in at.metric}["Pairs both labelled"] == "6"
    captions = [str(c.value).replace("\\", "") for c in at.caption]
    assert any(c.startswith("Judge shown: endpoint") for c in captions), captions


def test_the_judge_started_on_one_dataset_does_not_steer_another_s_page(seeded, tmp_path) -> None:
    """The judge a tab started is followed on its own dataset's page only: elsewhere a person's pick stands."""
    from types import SimpleNamespace

    from dashboard.ui.assisted import FOLLOW_KEY

    ws = Workspace(_store(tmp_path))
    pairs = [(q, d, 1) for q, d in TRUTH]
    older, newer = "judge:rule@1#aaaaaaaaaaaaaaaa", "judge:rule@1#bbbbbbbbbbbbbbbb"
    for source in (older, newer):
        ws.add_judge_labels(seeded["dataset"], pairs, SimpleNamespace(source=source))
    ws.store.engine.dispose()
    at = open_page("judge", _params(seeded), {FOLLOW_KEY: ("another-dataset", "judge:endpoint@1#cccccccccccccccc")})
    no_problems(at)
    other = older if at.selectbox(key="judge.shown_judge").value == newer else newer
    at.selectbox(key="judge.shown_judge").set_value(other).run()
    assert at.selectbox(key="judge.shown_judge").value == other
    assert at.session_state[FOLLOW_KEY] == ("another-dataset", "judge:endpoint@1#cccccccccccccccc")


def test_the_corrected_boxes_say_which_queries_the_judge_alone_judges(monkeypatch) -> None:
    """Was: the Overview's corrected box showed a judge-only mean other than the table's (the corrected means count
    the queries the judge alone judges, none relevant; the table leaves them out) with no word, where the Judge
    page said why. Overview, Compare and the Judge page now say it with one helper."""
    import pandas as pd

    from dashboard.ui import assisted as ui

    dataset, _ = assist_dataset()
    said: list[str] = []
    monkeypatch.setattr(ui.st, "info", lambda text, **_: said.append(text))
    judge = pd.DataFrame({"query_id": ["new", "new"], "doc_id": ["a", "b"], "label": [0, 0]})
    ui._say_judged_alone(dataset, judge, ())
    assert len(said) == 1 and "1 query the dataset does not judge is judged by the judge's labels alone" in said[0]
    ui._say_judged_alone(dataset, judge.assign(label=[0, 1]), ())  # one of them relevant: not a query judged empty
    ui._say_judged_alone(dataset, judge, ["new"])  # people sampled it: their labels judge it
    assert len(said) == 1
