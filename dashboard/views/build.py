"""Build dataset: generate candidate queries from the stored corpus of the sidebar's dataset, review them one at a
time beside their source text, and make the kept ones a dataset of their own.

Generation: a generator from the registry (the extractive one needs no model; a model generator is offered per
model the deployer registered in ``RAGMETRICS_MODELS``, never an address typed here), how many candidates and
which categories share them (evenly, the first ones taking the remainder) and a seed. It runs on a thread with a
progress bar and Cancel; each candidate is stored the moment it is written, so a cancelled or interrupted batch
keeps them and Resume writes only the rest. The filters' flags come once the batch is complete.

Review: accept (key A), edit (key E: query, answer, keywords, category, difficulty, relevant documents) or reject
(key X), each decision stored at once with the reviewer and the time (a reload, a second tab or a restarted server
loses nothing). "Make dataset" stores the accepted and edited candidates as a dataset with the corpus's documents
and each query's provenance; the batch records it and its parent, and the sidebar then shows it (every page and
share link can name it). Reads ``ds``, ``bb`` (the batch) and ``bc`` (the candidate shown, decided or not); the
dataset made becomes ``ds``.
"""

from __future__ import annotations

import time

import streamlit as st

from dashboard.core.text import Marks, from_before, highlight_markdown, md_escape, snippet
from dashboard.ui import building, layout, retrievers, state, widgets

KEPT = ("build.generator", "build.n", "build.seed", "build.parent_separator")
CATEGORIES = "build.categories."  # one multiselect a generator

page = layout.page_setup(
    "build", "Build dataset", needs_runs=False, writes="generating candidates and making datasets of them"
)
view = page.state
workspace = page.workspace
building_refused, building_help = workspace.refuses("build datasets"), layout.change_help(workspace, "build datasets")
reviewing_refused, reviewing_help = (
    workspace.refuses("review candidates"),
    layout.change_help(workspace, "review candidates"),
)

message = state.flash()
if message:
    st.success(md_escape(message), icon=":material/check_circle:")

for change in ("build datasets", "review candidates"):
    layout.show_refused_change(workspace, change)

if page.dataset is None:
    st.info("Load a dataset with its corpus first (Upload).", icon=":material/info:")
else:
    ds = page.dataset
    origin = workspace.candidates.made_from(ds.id)
    if origin is not None:
        parent = workspace.dataset(origin.parent)
        st.caption(
            f"**{md_escape(ds.name)}** was built from a batch of candidates generated from "
            f"**{md_escape(parent.name if parent else origin.parent)}** ({md_escape(building.batch_label(origin))}); "
            f"made by {md_escape(origin.made_by or 'anonymous')} on {building.stamp(origin.made_at)}."
        )
    if not retrievers.has_corpus(ds):
        st.info(
            f"**{md_escape(ds.name)}** has no corpus stored, so there is nothing to write queries from: upload it "
            "with its corpus (Upload), or pick a dataset that has one.",
            icon=":material/info:",
        )
    else:
        offered = building.generator_choices()
        layout.say_registration_problems(building.model_registration_problems())
        with st.container(border=True):
            st.markdown("**Generate candidates** from this dataset's corpus (its documents taken as given)")
            # the generation's settings stay as the user left them while another page is open
            state.keep(*KEPT, CATEGORIES)
            state.seed("build.n", 10)
            state.seed("build.seed", 0)
            left, middle, right = st.columns([2, 1, 1])
            label = left.selectbox("Generator", list(offered), key="build.generator")
            n = int(middle.number_input("How many", min_value=1, max_value=1000, key="build.n"))
            seed = int(right.number_input("Seed", min_value=0, max_value=2**31 - 1, key="build.seed"))
            generator_name = offered[label][0]
            if (generator_name, seed) in building.seeds_built(ds.dataset):
                st.caption(
                    f"This dataset was built by {generator_name} with seed {seed}: the same seed on its corpus writes "
                    "the candidates it already holds; pick another seed for new ones."
                )
            categories = building.default_categories(label)
            state.seed(CATEGORIES + generator_name, list(categories))
            chosen = st.multiselect(
                "Categories (they share the count evenly)", list(categories), key=CATEGORIES + generator_name
            )
            mix = building.even_mix(chosen, n)
            st.caption(
                "Mix: " + ", ".join(f"{c} {k}" for c, k in mix.items()) if mix else "Pick at least one category."
            )
            separator = st.text_input(
                "Chunk ids: the document's id ends before (optional)",
                key="build.parent_separator",
                placeholder="e.g. _C for CMRC's DEV_0_C1",
                help="When the stored documents are chunks of longer documents, the part of a chunk's id before the "
                "last occurrence of this text names its document, so a query written from one chunk also grades "
                "its sibling chunks that hold the answer (as `ragmetrics synth --parent-separator`).",
            )
            if separator.strip():
                st.caption(md_escape(building.grouping_words(ds.dataset, separator.strip())))
            if st.button("Generate", icon=":material/auto_awesome:", type="primary", key="build.generate",
                         disabled=not mix or building_refused,
                         help=building_help):  # fmt: skip
                with layout.refused(f"Generating candidates from “{ds.name}”"):
                    job = building.start(workspace, ds, label, mix, seed, separator)
                    st.session_state["build.batch"] = job.batch
                    st.rerun()

        read_at = time.monotonic()
        batches = workspace.candidates.batches(ds.id)
        if not batches:
            st.caption("No candidates generated from this dataset yet.")
            view = view.with_(batch=None, candidate=None)
        else:
            by_id = {b.id: b for b in batches}
            if page.fresh and view.batch in by_id:  # opened from a link: the batch it names
                st.session_state["build.batch"] = view.batch
            elif page.fresh and view.batch:
                st.caption(
                    f"The link names batch {md_escape(view.batch[:8])}, which is not one of this dataset's batches "
                    "in this store: showing the latest."
                )
            if st.session_state.get("build.batch") not in by_id:
                st.session_state.pop("build.batch", None)
            picked = st.selectbox(
                "Batch", list(by_id), format_func=lambda b: building.batch_label(by_id[b]), key="build.batch"
            )
            batch = by_id[picked]
            st.caption(building.batch_state(batch))
            current = building.job_of(batch.id)
            running = current is not None and current.status().running
            if current is not None and not running and current.ended_after(read_at):
                st.rerun()  # the batch read may miss its last candidates (asked once ended: it may end in between)
            if running and current is not None:
                live = current

                @st.fragment(run_every=0.5)
                def progress() -> None:
                    status = live.status()
                    if not status.running:
                        st.rerun(scope="app")
                    total = status.total or batch.requested
                    st.progress(
                        min(1.0, status.done / total) if total else 0.0,
                        text=f"{live.phase.capitalize()}: {status.done:,} of {total:,} candidates stored "
                        f"({status.seconds:.0f} s)",
                    )
                    if st.button("Cancel", icon=":material/stop:", key="build.cancel"):
                        live.cancel()

                progress()
            else:
                ended = current.status() if current is not None else None
                if ended is not None and ended.error and not ended.cancelled:
                    st.error(
                        md_escape(
                            f"Generation failed after {batch.stored:,} of {batch.requested:,} candidates: "
                            f"{ended.error}. The candidates stored stay; Resume tries the rest again."
                        ),
                        icon=":material/error:",
                    )
                elif batch.status != "complete":
                    st.warning(
                        f"Generation stopped after {batch.stored:,} of {batch.requested:,} candidates (cancelled, "
                        "or the server stopped). The candidates stored stay; Resume writes only the rest.",
                        icon=":material/pause_circle:",
                    )
                if batch.status != "complete" and st.button("Resume", icon=":material/play_arrow:", key="build.resume",
                                                            disabled=building_refused, help=building_help):  # fmt: skip
                    with layout.refused("Resuming the generation"):
                        building.resume(workspace, batch)
                        st.rerun()

            candidates = workspace.candidates.candidates(batch.id)
            decided = [c for c in candidates if c.decision is not None]
            kept = [c for c in candidates if c.kept]
            tally = {d: sum(c.decision == d for c in candidates) for d in ("accepted", "edited", "rejected")}
            if candidates:
                st.markdown(
                    f"**{len(candidates) - len(decided):,}** of {len(candidates):,} candidates left to review: "
                    f"{tally['accepted']} accepted, {tally['edited']} edited, {tally['rejected']} rejected."
                )
            else:
                st.caption("No candidate stored yet: they are shown for review as they are written.")
            if page.fresh and view.batch == batch.id and view.candidate:
                if any(c.position == view.candidate for c in candidates):
                    building.revise(batch.id, view.candidate)  # the candidate the link names, decided or not
                else:
                    st.caption(
                        f"The link names candidate {view.candidate}, which this batch does not hold (yet): showing "
                        "the first left to review."
                    )
            item = building.next_candidate(candidates, batch.id)
            view = view.with_(batch=batch.id, candidate=item.position if item is not None else None)
            not_taken = building.not_taken()
            if not_taken:
                st.warning(md_escape(not_taken), icon=":material/sync_problem:")
            places = (st.empty(), st.empty())  # the next candidate in the other place: the previous one goes at once
            if item is None:
                places[0].empty()
                places[1].empty()
                if candidates and not running:
                    st.success("Every candidate of this batch is reviewed.", icon=":material/task_alt:")
            else:
                record = item.final
                places[1 - item.position % 2].empty()
                with places[item.position % 2].container():
                    left, right = st.columns(2)
                    with left, st.container(border=True):
                        again = f" (decided: {item.decision} by {item.reviewer})" if item.decision else ""
                        st.markdown(
                            f"**Candidate {item.position} of {len(candidates)}**{md_escape(again)} · "
                            f"{md_escape(record.get('category', ''))} · {md_escape(record.get('difficulty', ''))}"
                        )
                        st.markdown(f"#### {md_escape(record.get('query', ''))}")
                        st.markdown(f"**Expected answer:** {md_escape(record.get('expected_answer') or '—')}")
                        keywords = ", ".join(record.get("expected_keywords") or [])
                        st.markdown(f"**Keywords:** {md_escape(keywords or '—')}")
                        relevant = record.get("relevant_docs") or {}
                        st.markdown(
                            "**Relevant documents:** "
                            + md_escape(", ".join(f"{d} ({g})" for d, g in relevant.items()) or "none (negative)")
                        )
                        for flag in record.get("flags") or []:
                            st.warning(md_escape(flag), icon=":material/flag:")
                        if not record.get("flags"):
                            st.caption(
                                "No flag" if batch.status == "complete" else "Flags come once the batch is complete."
                            )
                    with right, st.container(border=True):
                        source = record.get("source") or {}
                        answer = str(record.get("expected_answer") or "")
                        shown, offset = from_before(str(source.get("text", "")), answer)
                        st.markdown(
                            f"**Source:** {md_escape(source.get('doc_id', ''))} · characters "
                            f"{source.get('start', 0)}–{source.get('end', 0)}"
                            + (f" · shown from character {offset:,}, before the expected answer" if offset else "")
                        )
                        marks = Marks(answer=answer, keywords=list(record.get("expected_keywords") or []))
                        with st.container(height=320):
                            st.markdown(highlight_markdown(shown, marks))
                    if building.editing(batch.id, item.position):
                        prefix = f"build.edit.{batch.id}.{item.position}."
                        known = set(ds.dataset.documents["doc_id"]) if ds.dataset.documents is not None else set()
                        with st.form(f"build.edit.{batch.id}.{item.position}", border=True):
                            st.text_input("Query", value=record.get("query", ""), key=prefix + "query")
                            st.text_area("Expected answer", value=record.get("expected_answer", ""),
                                         key=prefix + "answer")  # fmt: skip
                            st.text_area("Keywords (one per line)", key=prefix + "keywords",
                                         value="\n".join(record.get("expected_keywords") or []))  # fmt: skip
                            one, two = st.columns(2)
                            categories_known = list(dict.fromkeys([*categories, record.get("category", "")]))
                            one.selectbox("Category", categories_known,
                                          index=categories_known.index(record.get("category", "")),
                                          key=prefix + "category")  # fmt: skip
                            levels = ["easy", "medium", "hard"]
                            two.selectbox("Difficulty", levels,
                                          index=levels.index(record["difficulty"]) if record.get("difficulty") in levels else 1,
                                          key=prefix + "difficulty")  # fmt: skip
                            st.text_input("Relevant documents (DOC_ID=GRADE, comma-separated)",
                                          value=", ".join(f"{d}={g}" for d, g in relevant.items()),
                                          key=prefix + "relevant")  # fmt: skip
                            st.form_submit_button("Save edit", type="primary", on_click=building.save_edit,
                                                  args=(workspace, batch.id, item, known, prefix))  # fmt: skip
                        problem = building.edit_problem()
                        if problem:
                            st.error("  \n".join(md_escape(line) for line in problem.splitlines()),
                                     icon=":material/error:")  # fmt: skip
                        st.button("Cancel edit", key=f"build.edit.cancel.{item.position}",
                                  on_click=building.stop_editing)  # fmt: skip
                    else:
                        with st.container(horizontal=True):
                            st.button("Accept", icon=":material/check:", type="primary", shortcut="A",
                                      key=f"build.accept.{item.position}", on_click=building.decide,
                                      args=(workspace, batch.id, item.position, "accepted"),
                                      disabled=reviewing_refused, help=reviewing_help)  # fmt: skip
                            st.button("Edit", icon=":material/edit:", shortcut="E", key=f"build.edit.{item.position}",
                                      on_click=building.start_editing, args=(batch.id, item.position),
                                      disabled=reviewing_refused, help=reviewing_help)  # fmt: skip
                            st.button("Reject", icon=":material/close:", shortcut="X",
                                      key=f"build.reject.{item.position}", on_click=building.decide,
                                      args=(workspace, batch.id, item.position, "rejected"),
                                      disabled=reviewing_refused, help=reviewing_help)  # fmt: skip
                            if item.decision is not None:  # shown again: leaving keeps its decision
                                st.button("Back to the queue", icon=":material/undo:",
                                          key=f"build.revise.back.{item.position}",
                                          on_click=building.stop_revising)  # fmt: skip

            if decided:
                with st.expander(f"Decisions ({len(decided)})"):
                    st.dataframe(building.decision_rows(candidates), hide_index=True, placeholder=layout.MISSING)
                    positions = [c.position for c in decided]
                    said = {c.position: f"{c.position} · {c.decision} · {snippet(c.final.get('query', ''), 80)}"
                            for c in decided}  # fmt: skip
                    again_at = st.selectbox("Review again", positions, format_func=said.__getitem__, key="build.revise")
                    st.button("Show it", key="build.revise.show", on_click=building.revise,
                              args=(batch.id, again_at))  # fmt: skip

            if candidates:  # nothing to make a dataset of before a candidate is stored
                with st.container(border=True):
                    st.markdown(f"**Make dataset** from the **{len(kept)}** accepted or edited candidate(s)")
                    if batch.dataset_id:
                        made = workspace.dataset(batch.dataset_id)
                        st.caption(
                            f"This batch made **{md_escape(made.name if made else batch.dataset_id)}** "
                            f"({building.stamp(batch.made_at)}, by {md_escape(batch.made_by or 'anonymous')}); "
                            "making it again after more review stores the new set beside it."
                        )
                    # keyed on the batch: a text box keeps the value of its key, whatever default it is given
                    default_name = f"{ds.name} (built, {batch.id[:6]})"
                    name = st.text_input("Name", value=default_name, key=f"build.name.{batch.id}", max_chars=200)
                    name = name.strip() or default_name  # a box emptied: the name it showed
                    refused = (building_help or "This store refuses to build datasets.") if building_refused else None
                    if not kept and refused is None:  # a click sees this only when another reviewer undid the last
                        refused = "No candidate of this batch is accepted or edited any more: no dataset was made."
                    if widgets.guarded_button("Make dataset", icon=":material/library_add:", key="build.make",
                                              refused=refused, help=building_help):  # fmt: skip
                        with layout.refused(f"Making dataset “{name}”"):
                            entry = workspace.make_dataset(batch.id, kept, name=name,
                                                           author=building.reviewer())  # fmt: skip
                            state.flash(
                                f"Dataset “{entry.name}” stored: {entry.n_queries} "
                                f"quer{'y' if entry.n_queries == 1 else 'ies'} with their provenance, built from "
                                f"“{ds.name}”. It is selected in the sidebar."
                            )
                            layout.rerun_with(view.with_(dataset=entry.id, runs=()))

layout.finish(page, view)
