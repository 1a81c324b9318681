"""``widgets.guarded_button``: a click that reaches a run drawing the button disabled says why, once; a click that
no run read is not taken for a later one."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from dashboard.ui import state, widgets

    state.begin_run()
    if widgets.guarded_button("Go", key="go", refused=st.session_state.get("refused")):
        st.success("done")


def _said(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def test_a_click_acts_while_the_button_may_act() -> None:
    at = AppTest.from_function(_page).run()
    at.button(key="go").click().run()
    assert [s.value for s in at.success] == ["done"] and not _said(at)
    at.run()
    assert not at.success and not _said(at)  # the click acted once


def test_a_click_that_finds_the_button_refused_says_why_once() -> None:
    at = AppTest.from_function(_page).run()
    at.button(key="go").click()
    at.session_state["refused"] = "another tab did it meanwhile"  # changed between the click and its run
    at.run()
    assert at.button(key="go").disabled and _said(at) == ["another tab did it meanwhile"] and not at.success
    at.run()
    assert not _said(at)  # said once


def test_a_click_no_run_read_is_not_taken_for_a_later_one() -> None:
    at = AppTest.from_function(_page).run()
    at.session_state["refused"] = "nothing to do"
    # a click recorded for a run that stopped before it drew the button (an earlier run's serial)
    at.session_state["ragmetrics.clicked.go"] = 0
    at.run()
    assert at.button(key="go").disabled and not _said(at)
