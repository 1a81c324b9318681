"""The Judge page's assisted judging (Streamlit): run a judge over the pool in the background (progress, Cancel;
each few labels stored at once with their provenance), its agreement with people, the planned human sample, and
the page's metric corrected by that sample beside the judge-only and human-only numbers
(:mod:`dashboard.core.assisted`).

Only the judges a page can build are offered (:data:`OFFERED`): the endpoint judge over the models the deployer
registered (``RAGMETRICS_MODELS``), never an address typed here; the callable judge, which would run code named
in the browser, is the CLI's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard.core import assisted
from dashboard.core.share import DEFAULT_PLAN, JUDGE_QUEUES, ViewState
from dashboard.core.specs import MetricSpec, title
from dashboard.core.text import md_escape
from dashboard.data.jobs import JudgeJob
from dashboard.data.workspace import DatasetEntry, Workspace
from dashboard.ui import cache, layout, state
from ragmetrics.analysis import ppi
from ragmetrics.analysis.compare import DEFAULT_FAMILY, intervals_name
from ragmetrics.analysis.judging import judged_by_the_judge_alone, judged_by_the_judge_alone_words, pool
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.model import Dataset
from ragmetrics.judges.base import JudgeLabel, max_grade, pairs_from_pool, provenance_of
from ragmetrics.judges.registry import JUDGES, JudgeInputs, make_judge
from ragmetrics.models.registry import registered, registrations

__all__ = ["FOLLOW_KEY", "OFFERED", "Assist", "assist", "corrected_elsewhere", "current_job", "panels", "start_job"]

OFFERED = tuple(name for name, kind in JUDGES.items() if kind.needs in ("", "training", "model"))
"""The registered judges the page can build: from nothing, from people's labels, from a registered model."""
JOB_KEY = "ragmetrics.judge.job"
FOLLOW_KEY = "ragmetrics.judge.follow"
"""The dataset and the source of the judge this tab started: shown on that dataset's page once its first labels are
stored (until then, it has none, and the page shows what it showed)."""


@dataclass(frozen=True)
class Assist:
    """What the page reads off the lineage: its original judgments (``base``), their ``pool`` at the page's depth,
    every label given (``labels``, :func:`ragmetrics.store.provenance.lineage_labels`), people's latest
    (``human``), the judge shown (``source``, "" when none labelled) and its latest (``judge``), the sample
    ``plan`` chosen and its order, the human :class:`~dashboard.core.assisted.Sample` it makes, and when the labels
    were read (``read_at``, :func:`time.monotonic`)."""

    base: DatasetEntry
    pool: pd.DataFrame
    labels: pd.DataFrame
    human: pd.DataFrame
    source: str
    judge: pd.DataFrame
    plan: str
    order: list[str]
    sample: assisted.Sample
    read_at: float


@cache.memo
def base_pool(base: DatasetEntry, selection: cache.Selection, depth: int) -> pd.DataFrame:
    """The unjudged pairs of the selected runs' top ``depth`` under the lineage's original judgments."""
    return pool(base.dataset, [a.run for a in selection.alignments], int(depth))


@dataclass(frozen=True)
class LabelsRead:
    """A dataset lineage's labels (:func:`ragmetrics.store.provenance.lineage_labels`) and when they were read
    (``at``, :func:`time.monotonic`): a judge that ended after ``at`` may have stored labels they miss."""

    labels: pd.DataFrame
    at: float


def read_labels(workspace: Workspace, dataset_id: str) -> LabelsRead:
    """Read the lineage's labels now."""
    at = time.monotonic()
    return LabelsRead(workspace.lineage_labels(dataset_id), at)


def assist(
    workspace: Workspace,
    ds: DatasetEntry,
    selection: cache.Selection,
    depth: int,
    view: ViewState,
    read: LabelsRead | None = None,
    follow: str | None = None,
) -> Assist:
    """Read the lineage's labels (unless the caller just did: ``read``) and the view's choices (the judge shown:
    ``follow``, the judge this tab started, once it has labelled here; else the view's; the latest when the view
    names none or one that did not label here; the sample plan)."""
    base = workspace.family(ds.id)[0]
    pooled = base_pool(base, selection, depth)
    read = read or read_labels(workspace, ds.id)
    labels = read.labels
    sources = assisted.judge_sources(labels)
    source = ""
    if sources:
        source = next((s for s in (follow, view.shown_judge) if s in sources), sources[0])
    plan = view.plan if view.plan in assisted.PLANS else DEFAULT_PLAN
    order = assisted.plan_order(base.dataset, base.dataset.query_ids.astype(str).tolist(), plan)
    human = assisted.human_labels(labels)
    return Assist(
        base, pooled, labels, human, source, assisted.judge_labels(labels, source), plan, order,
        assisted.sample_of(order, pooled, human), read.at,
    )  # fmt: skip


def queue_order(todo: pd.DataFrame, help_: Assist) -> pd.DataFrame:
    """The page's queue in the order picked: the most consequential pairs first, or the planned sample's."""
    left, right = st.columns([1, 1])
    order = left.radio(
        "Queue",
        list(JUDGE_QUEUES),
        format_func=JUDGE_QUEUES.__getitem__,
        horizontal=True,
        key="judge.order",
        help="The planned sample is what corrects a judge's numbers: label its queries in order.",
    )
    right.selectbox(
        "Human sample plan",
        list(assisted.PLANS),
        format_func=assisted.PLANS.__getitem__,
        key="judge.plan",
        help="Seeded: every judge, tab and server is given the same plan.",
    )
    return assisted.plan_queue(todo, help_.order) if order == "plan" else todo


# --- running a judge ------------------------------------------------------------------------


@st.cache_resource
def _running() -> dict[str, JudgeJob]:
    """The judge jobs of this server process by dataset: a reloaded page, or another tab, shows the one running."""
    return {}


def current_job(dataset_id: str | None = None) -> JudgeJob | None:
    """This session's judge job on ``dataset_id`` (running, or ended and not reported yet), else the one another
    session (or this tab before a reload) started on it, running or ended and not reported yet: a reloaded tab
    gets its outcome too. A job on another dataset is not this page's."""
    job = st.session_state.get(JOB_KEY)
    if isinstance(job, JudgeJob) and (dataset_id is None or job.dataset_id == dataset_id):
        return job
    return _running().get(dataset_id or "")


def start_job(
    workspace: Workspace, ds: DatasetEntry, help_: Assist, name: str, model: str | None, over: str = ""
) -> JudgeJob:
    """Build the judge ``name`` of :data:`OFFERED` (``model``: a registered model's name, for the endpoint judge;
    ``over``: the source of a judge that labelled on the lineage, whose latest labels the learned judge learns to
    correct) and start it over the pool's pairs it has not labelled (people's too: :func:`assisted.to_judge`)."""
    running = _running().get(ds.id)
    if running is not None and running.status().running:
        raise RagMetricsError(f"{running.label} is running on this dataset already; cancel it first")
    if name not in OFFERED:
        raise RagMetricsError(f"judge {name!r} is not offered on this page; expected one of {', '.join(OFFERED)}")
    if JUDGES[name].needs == "model" and model not in registered():
        raise RagMetricsError(f"no model named {model!r} is registered")
    base = help_.base.dataset
    training: list = []
    if JUDGES[name].needs == "training":
        # each labelled pair as the pool has it (its rank, run count and, without a corpus, a run's chunk text)
        pooled = help_.pool[["query_id", "doc_id", "best_rank", "runs", *(["text"] if "text" in help_.pool else [])]]
        ranked = help_.human.merge(pooled, on=["query_id", "doc_id"], how="left")
        ranked[["best_rank", "runs"]] = ranked[["best_rank", "runs"]].fillna(0).astype(int)
        training = list(zip(pairs_from_pool(base, ranked), ranked["label"].astype(int)))
    if over and over not in assisted.judge_sources(help_.labels):
        raise RagMetricsError(f"no judge {assisted.judge_title(over)} labelled on this dataset")
    theirs = assisted.judge_labels(help_.labels, over) if over and JUDGES[name].needs == "training" else None
    base_labels = None
    if theirs is not None:
        base_labels = {
            (str(q), str(d)): int(y) for q, d, y in theirs[["query_id", "doc_id", "label"]].itertuples(False)
        }
    over_title = assisted.judge_title(over) if base_labels is not None else ""
    judge = make_judge(name, JudgeInputs(training=training, base=base_labels, base_source=over_title, model=model))
    source = provenance_of(judge, max_grade(base)).source
    todo = assisted.to_judge(help_.pool, help_.labels, source)
    pairs = pairs_from_pool(base, todo)
    unable = JUDGES[name].unable(pairs)
    if unable:
        raise RagMetricsError(f"the {name} judge cannot grade this pool: {unable}")

    def save(labels: list[JudgeLabel]) -> tuple[int, int]:  # the judge's source is their author
        rows = [(lab.pair.query_id, lab.pair.doc_id, int(lab.label)) for lab in labels if lab.label is not None]
        return workspace.add_judge_labels(ds.id, rows, labels[0].provenance)

    label = f"{name} judge" + (f" ({model})" if model else "")
    job = JudgeJob(judge, pairs, max_grade(base), save, label, dataset_id=ds.id).start()
    st.session_state[JOB_KEY] = job
    st.session_state[FOLLOW_KEY] = (ds.id, source)  # its labels are the ones shown as they come
    _running()[ds.id] = job
    return job


def _runner(workspace: Workspace, ds: DatasetEntry, help_: Assist) -> None:
    job = current_job(ds.id)
    if job is not None and not job.status().running:
        if job.ended_after(help_.read_at):  # its last labels are not in what the page read (asked once it ended)
            st.rerun(scope="app")
        if st.session_state.get(JOB_KEY) is job:
            st.session_state.pop(JOB_KEY, None)
            st.session_state.pop(FOLLOW_KEY, None)  # labelled nothing, or shown already
        if _running().get(ds.id) is job:
            del _running()[ds.id]
        status = job.status()
        done = (
            f"{job.label}: graded {status.done:,} of {status.total:,} pairs; {status.stored:,} label(s) stored"
            + (f", {status.skipped:,} left to the person who labelled the pair meanwhile" if status.skipped else "")
            + (f", {status.ungraded:,} without a grade" if status.ungraded else "")
        )
        if status.cancelled:
            st.warning(f"Cancelled. {md_escape(done)}: starting again grades only the rest.", icon=":material/cancel:")
        elif status.error:
            st.error(md_escape(f"{done}. It stopped: {status.error}"), icon=":material/error:")
        else:
            st.success(md_escape(done + "."), icon=":material/check_circle:")
        for problem in status.problems:
            st.caption(md_escape(problem))
        job = None
    if job is not None:

        @st.fragment(run_every=0.5)
        def progress() -> None:
            status = job.status()
            if not status.running:
                st.rerun(scope="app")
            st.progress(status.fraction, text=f"{job.label}: {status.done:,} of {status.total:,} pairs graded")
            if st.button("Cancel", icon=":material/stop:", key="judge.cancel_job"):
                job.cancel()

        progress()
        return
    found = registrations()
    models = sorted(found.found)
    layout.say_registration_problems(found.problems)
    # never a judge that learned from people's labels: stacked on it, a labelled query's grade would read its own
    learned = {n for n, kind in JUDGES.items() if kind.needs == "training"}
    bases = ["", *(s for s in assisted.judge_sources(help_.labels) if assisted.judge_name(s) not in learned)]
    choices = {"judge.run_judge": list(OFFERED), "judge.run_model": models, "judge.run_base": bases}
    # the form is not drawn while a judge runs, and Streamlit forgets a widget not drawn: the choices are kept aside
    for key, options in choices.items():
        kept = st.session_state.get(f"{key}.kept")
        if key not in st.session_state and kept in options:
            st.session_state[key] = kept
    with st.form("judge.run_form", border=True):
        left, middle, right = st.columns([1, 1, 1])
        name = left.selectbox(
            "Judge",
            list(OFFERED),
            key="judge.run_judge",
            help="  \n".join(f"**{n}**: {JUDGES[n].help}" for n in OFFERED),
        )
        model = middle.selectbox(
            "Model (the endpoint judge)",
            models,
            key="judge.run_model",
            help="The models the deployer registered (RAGMETRICS_MODELS); nobody types an address here.",
        )
        base = right.selectbox(
            "Over the labels of (the learned judge)",
            bases,
            key="judge.run_base",
            format_func=lambda s: assisted.judge_title(s) if s else "no other judge",
            help="The learned judge reads this judge's grade of each pair beside its own features, and learns from "
            "people's labels how far to trust it.",
        )
        if st.form_submit_button("Run the judge over the pool", icon=":material/play_arrow:", type="primary"):
            for key, value in zip(choices, (name, model, base), strict=True):
                st.session_state[f"{key}.kept"] = value
            try:
                if JUDGES[name].needs == "model" and not models:
                    raise RagMetricsError("no model is registered for the endpoint judge (RAGMETRICS_MODELS)")
                start_job(workspace, ds, help_, name, model if JUDGES[name].needs == "model" else None, base or "")
            except RagMetricsError as err:
                st.error(md_escape(str(err)), icon=":material/error:")
            else:
                st.rerun()


# --- what the labels say ---------------------------------------------------------------------


def _agreement(help_: Assist) -> None:
    st.markdown("**Agreement with people** (on the pairs both labelled)")
    if not help_.source:
        st.caption("No judge has labelled this pool yet.")
        return
    found = assisted.agreement(help_.human, help_.judge, help_.pool, help_.base.dataset, max_grade(help_.base.dataset))
    if found is None:
        st.caption("People have labelled none of the judge's pairs yet: label the planned sample.")
        return
    graded = found.max_grade > 1  # on two grades a weighted kappa is the kappa: not shown twice
    columns = st.columns(4 if graded else 3)
    columns[0].metric("Pairs both labelled", f"{found.pairs:,}")
    columns[1].metric("Same grade", f"{found.accuracy:.0%}")
    columns[2].metric("Cohen's kappa", f"{found.kappa:.2f}")
    if graded:
        columns[3].metric(
            "Weighted kappa (linear)",
            f"{found.kappa_linear:.2f}",
            help=f"Quadratic weights: {found.kappa_quadratic:.2f}",
        )
    if found.rough:
        st.caption(found.rough[0].upper() + found.rough[1:] + ".")
    left, right = st.columns([1, 2])
    with left:
        st.caption("People's grades (rows) by the judge's (columns)")
        st.dataframe(found.confusion, key="judge.confusion")
    with right:
        st.caption("Where the judge errs: share of pairs graded differently; judge minus people (+: too high)")
        layout.show_table(
            found.errors,
            key="judge.errs",
            filename="judge-errors.csv",
            column_config={
                "disagree": st.column_config.NumberColumn("disagree", format="percent"),
                "judge_minus_human": st.column_config.NumberColumn("judge − people", format="%+.2f"),
            },
        )


@cache.memo
def _corrected(
    base: DatasetEntry,
    selection: cache.Selection,
    metric: str,
    digest: str,
    strata: bool,
    _spec: MetricSpec,
    _human: pd.DataFrame,
    _judge: pd.DataFrame,
    sample: tuple[str, ...],
) -> pd.DataFrame:
    # keyed on the sample too: it follows the pool (its depth, the runs), which the labels' digest does not name
    runs = [a.run for a in selection.alignments]
    conventions = selection.alignments[0].conventions if selection.alignments else None
    return assisted.corrected_table(
        base.dataset, runs, _spec, _human, _judge, sample, conventions=conventions, strata=strata
    )


def _digest(*parts: object) -> str:
    return hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=16).hexdigest()


def _corrected_panel(selection: cache.Selection, spec: MetricSpec, help_: Assist) -> None:
    sample = help_.sample
    st.markdown(f"**Corrected {title(spec)}**: {assisted.badge(help_.human, help_.judge)}")
    planned = f"{len(sample.queries):,} of the {len(help_.order):,} queries of the plan are labelled"
    if sample.next_query is not None:
        planned += f"; next: query **{md_escape(sample.next_query)}** ({sample.pairs_left} pair(s) left)" + (
            f"; {sample.beyond} labelled beyond it join once it is" if sample.beyond else ""
        )
    st.markdown(planned + ".")
    st.caption(
        "A planned query counts once people labelled every pair the selected runs pool for it: another run pools "
        "more pairs, and a query counted before can wait for them."
    )
    if not help_.source:
        return
    human, judge = help_.human, help_.judge
    digest = _digest(human.to_numpy().tolist(), judge.to_numpy().tolist())
    try:
        table = _corrected(
            help_.base, selection, str(spec), digest, help_.plan == "category", spec, human, judge, sample.queries
        )
    except RagMetricsError as err:
        st.info(f"Label the planned queries to correct the judge's numbers ({md_escape(str(err))}).")
        return
    _warn_if_unreadable(table, "corrected_low", "corrected_high")
    _say_judged_alone(help_.base.dataset, judge, sample.queries)
    spread = table[(table["corrected_high"] - table["corrected_low"]) > 1e-12]  # width 0: nothing to shrink
    first = spread.iloc[0] if len(spread) else None
    if first is not None and int(first["more"]):  # every query labelled: the judge adds nothing, no more to label
        st.markdown(
            f"{int(first['more']):,} more labelled queries would shrink the corrected interval of "
            f"**{md_escape(str(first['run']))}** to about **±{first['projected']:.3f}** "
            f"(now ±{(first['corrected_high'] - first['corrected_low']) / 2:.3f})."
        )
    for row in table.itertuples(index=False):
        st.markdown(assisted.mean_words(row, others_intervals=True))
    number = st.column_config.NumberColumn
    layout.show_table(
        table,
        key="judge.corrected",
        filename="corrected.csv",
        column_config={c: number(c, format="%.4f") for c in table.columns if table[c].dtype.kind == "f"},
    )
    st.caption(
        "Corrected: prediction-powered inference (PPI++), the judge's labels on every query plus the human-minus-judge "
        "difference on the planned sample; 95% intervals. Judge-only takes the judge's labels as truth; human-only "
        "reads the sample alone."
    )


def _say_judged_alone(base: Dataset, judge: pd.DataFrame, sampled: Collection[str]) -> None:
    """The queries the judge's labels alone judge, none relevant, named (the corrected means count them, where the
    plain table leaves a query without judgments out: why its judge-only mean differs from the table's); the
    ``sampled`` queries are people's to judge."""
    alone = judged_by_the_judge_alone(base, judge.rename(columns={"label": "relevance"}), people=sampled)
    if alone:
        words = judged_by_the_judge_alone_words(alone)
        st.info(md_escape(f"{words[0].upper()}{words[1:]}."), icon=":material/info:")


def _warn_if_unreadable(table: pd.DataFrame, low: str, high: str, paired: bool = False) -> None:
    """Say when corrected intervals of ``table`` (of means, or ``paired`` differences) cannot be read yet, each
    caution once (:func:`ragmetrics.analysis.ppi.unreadable_rows`)."""
    for kind, words in ppi.unreadable_rows(table, low, high, paired=paired):
        st.warning(
            f"{words[0].upper()}{words[1:]}. Label more of the plan.",
            icon=":material/warning:" if kind == "flat" else ":material/info:",
        )


def panels(workspace: Workspace, ds: DatasetEntry, selection: cache.Selection, spec: MetricSpec, help_: Assist) -> None:
    """The judge runner, the agreement and the corrected numbers."""
    st.subheader("Label the pool with a judge")
    st.caption(
        "A judge's labels are stored as they come, with its name, version and configuration; they never override "
        "a person's and never count as one."
    )
    _runner(workspace, ds, help_)
    sources = assisted.judge_sources(help_.labels)
    if len(sources) > 1:
        state.seed("judge.shown_judge", help_.source, force=st.session_state.get("judge.shown_judge") != help_.source)
        st.selectbox("Judge shown", sources, format_func=assisted.judge_title, key="judge.shown_judge")
    elif help_.source:
        st.caption(f"Judge shown: {md_escape(assisted.judge_title(help_.source))}")
    _agreement(help_)
    _corrected_panel(selection, spec, help_)


@cache.memo
def _deltas(
    base: DatasetEntry,
    selection: cache.Selection,
    baseline: str,
    metric: str,
    digest: str,
    strata: bool,
    correction: str,
    alpha: float,
    family: tuple[str, ...],
    family_name: str,
    _spec: MetricSpec,
    _family_specs: tuple[MetricSpec, ...],
    _human: pd.DataFrame,
    _judge: pd.DataFrame,
    sample: tuple[str, ...],
) -> pd.DataFrame:
    runs = [a.run for a in selection.alignments]
    conventions = selection.alignments[0].conventions if selection.alignments else None
    return assisted.corrected_deltas(
        base.dataset, runs, baseline, _spec, _human, _judge, sample, family_specs=_family_specs,
        conventions=conventions, strata=strata, correction=correction, alpha=alpha, family=family_name,
    )  # fmt: skip


def corrected_elsewhere(
    workspace: Workspace,
    ds: DatasetEntry,
    selection: cache.Selection,
    spec: MetricSpec,
    depth: int,
    view: ViewState,
    *,
    baseline: str | None = None,
    family_specs: Sequence[MetricSpec] = (),
    correction: str = "holm",
    alpha: float = 0.05,
    family: str = DEFAULT_FAMILY,
) -> None:
    """Overview's (each run's corrected mean) or, with ``baseline`` (a run name), Compare's (each run's corrected
    difference from it, corrected over Compare's ``family`` of the runs on every metric of ``family_specs``, and
    named by the family computed: :func:`dashboard.core.assisted.family_words`) numbers corrected by the human sample, in an expander titled with the badge; nothing when no
    judge labelled on the dataset's lineage. The judge shown and the plan are the view's (the Judge page's)."""
    read = read_labels(workspace, ds.id)
    if not assisted.judge_sources(read.labels):
        return
    help_ = assist(workspace, ds, selection, depth, view, read)
    badge = assisted.badge(help_.human, help_.judge)
    sample = help_.sample
    with st.expander(f"{title(spec)} corrected by the human sample ({badge})"):
        st.caption(
            f"A judge ({md_escape(assisted.judge_title(help_.source))}) "
            f"{assisted.judge_reach_words(help_.pool, help_.judge, depth)}; {len(sample.queries)} planned queries are labelled by people (the Judge page; a query counts once "
            "every pair these runs pool for it is, so another run can make it wait). Prediction-powered "
            + ("inference, 95% intervals." if baseline is None else "inference; its intervals are named below.")
        )
        digest = _digest(help_.human.to_numpy().tolist(), help_.judge.to_numpy().tolist())
        strata = help_.plan == "category"
        try:
            if baseline is None:
                table = _corrected(
                    help_.base, selection, str(spec), digest, strata, spec, help_.human, help_.judge, sample.queries
                )
            else:
                specs = tuple(dict.fromkeys([*family_specs, spec]))
                table = _deltas(
                    help_.base, selection, baseline, str(spec), digest, strata, correction, alpha,
                    tuple(str(s) for s in specs), family, spec, specs, help_.human, help_.judge, sample.queries,
                )  # fmt: skip
        except RagMetricsError as err:
            st.info(
                f"Label the planned queries on the Judge page to correct the judge's numbers ({md_escape(str(err))})."
            )
            return
        _warn_if_unreadable(
            table,
            *(("corrected_low", "corrected_high") if baseline is None else ("ci_low_adjusted", "ci_high_adjusted")),
            paired=baseline is not None,
        )
        _say_judged_alone(help_.base.dataset, help_.judge, sample.queries)
        if baseline is not None and len(table):
            st.caption(
                f"p: the t test of each corrected Δ, {assisted.family_words(table, correction)}, as the table above; "
                f"intervals: {intervals_name(correction, alpha)}."
            )
            # the panel's lambda is tuned; said only beside an interval shown (a too-few row shows none)
            tuned = ppi.tuned_lambda_note(int(table["n_labelled"].min()), None, remedy="the CLI's --ppi-lambda 1")
            if tuned is not None and not table["too_few"].astype(bool).all():
                st.caption(tuned[0].upper() + tuned[1:] + ".")
        for row in table.itertuples(index=False):
            if baseline is None:
                st.markdown(assisted.mean_words(row, others_intervals=False))
            else:
                st.markdown(assisted.delta_words(row, baseline, correction))
