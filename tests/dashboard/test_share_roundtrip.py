"""Share links carry every control of every page: each widget of each page (``dashboard.views.VIEWS``) is changed,
the URL the page writes is opened in a fresh session, and every widget must be found as it was.

The pages and their widgets are found, not listed: a page added to ``VIEWS`` is walked too, and fails here until
its widgets travel in the link or are declared in its ``unlinked`` (the inputs of an action, with the reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.views import VIEWS, View
from tests.dashboard.apptest import no_problems, open_page, param

pytestmark = pytest.mark.apptest

WIDGET_KINDS = (
    "selectbox",
    "multiselect",
    "radio",
    "number_input",
    "slider",
    "select_slider",
    "text_input",
    "text_area",
    "checkbox",
    "toggle",
    "button_group",  # st.pills and st.segmented_control
    "date_input",
    "time_input",
    "color_picker",
)
"""Every AppTest element kind that holds a value a user sets (and folded sections, below)."""


@dataclass
class Section:
    """A folded section (an expander the page computes only while it is open): a control that is open or not."""

    at: AppTest
    key: str

    @property
    def value(self) -> bool:
        return bool(self.at.session_state[self.key]) if self.key in self.at.session_state else False

    def toggle(self) -> AppTest:
        self.at.session_state[self.key] = not self.value  # what a click on its label does
        return self.at


def sections(at: AppTest) -> list[Section]:
    """The page's folded sections: expanders with a key (their element id ends in it), open or not."""
    found = []
    for expander in at.expander:
        element_id = expander.proto.id
        if element_id:
            found.append(Section(at, element_id.split("-", 2)[2]))
    return found


FIRST = ("sidebar.dataset",)  # changed before the rest: it resets what depends on the dataset


def widgets(at: AppTest, view: View) -> dict[str, Any]:
    """The page's widgets that must travel in the link, by key; a widget without a key cannot be followed."""
    found: dict[str, Any] = {}
    for kind in WIDGET_KINDS:
        for widget in at.get(kind):
            key = getattr(widget, "key", None)
            assert key, f"page {view.key}: a {kind} ({getattr(widget, 'label', '?')!r}) has no key"
            if not any(key.startswith(prefix) for prefix in view.unlinked):
                found[key] = widget
    for section in sections(at):
        if not any(section.key.startswith(prefix) for prefix in view.unlinked):
            found[section.key] = section
    return found


def value_of(widget: Any) -> Any:
    value = widget.value
    return list(value) if isinstance(value, (list, tuple)) else value


def pick_label(widget: Any, label: str) -> Any:
    """Select the option shown as ``label``, as the browser does (radios and pills send the label they show): the
    page's values behind a ``format_func`` are unknown here."""

    class Picked(type(widget)):  # type: ignore[misc]
        @property
        def index(self) -> int:
            return list(self.options).index(label)

        @property
        def formatted_values(self) -> list[str]:
            return [label]

    widget.__class__ = Picked
    return widget


def change(widget: Any) -> Any:
    """Set ``widget`` to another valid value (not run yet); None when it offers no other value."""
    if isinstance(widget, Section):
        return widget.toggle()
    kind = type(widget).__name__
    options = list(getattr(widget, "options", []) or [])
    if kind == "Selectbox":
        if len(options) < 2:
            return None
        return widget.select_index(((widget.index or 0) + 1) % len(options))
    if kind == "Radio":
        return pick_label(widget, options[((widget.index or 0) + 1) % len(options)]) if len(options) > 1 else None
    if kind == "Multiselect":
        chosen = list(widget.value)
        if len(chosen) >= 2:
            return widget.set_value(chosen[:-1])
        free = [o for o in options if o not in chosen]  # values that are their own labels
        return widget.select(free[0]) if free else None
    if kind == "NumberInput":
        before = widget.value
        moved = widget.increment()
        return moved if moved.value != before else widget.decrement()
    if kind in ("TextInput", "TextArea"):
        return widget.set_value("1")
    if kind in ("Checkbox", "Toggle"):
        return widget.set_value(not widget.value)
    if kind == "ButtonGroup":
        shown = set(widget.formatted_values)
        free = [str(o) for o in options if str(o) not in shown]
        return pick_label(widget, free[0]) if free else None
    if kind in ("Slider", "SelectSlider"):
        return None  # none on the pages now; a new one fails the comparison below unless it travels
    raise AssertionError(f"no way to change a {kind} yet: teach change() how")


def url_of(at: AppTest) -> dict[str, str]:
    out = {}
    for key in at.query_params:
        value = at.query_params[key]
        out[key] = value[-1] if isinstance(value, list) else value
    return out


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.key)
def test_every_widget_of_the_page_round_trips_through_the_url(view: View) -> None:
    at = open_page(view.key)
    no_problems(at)
    changed: dict[str, Any] = {}
    for _ in range(60):  # each widget once, including the ones a change makes appear
        current = widgets(at, view)
        todo = [k for k in (*FIRST, *current) if k in current and k not in changed]
        if not todo:
            break
        key = todo[0]
        before = value_of(current[key])
        moved = change(current[key])
        changed[key] = before
        if moved is None:
            continue
        at = moved.run()
        no_problems(at)
        after = widgets(at, view)
        assert key not in after or value_of(after[key]) != before, f"page {view.key}: {key} did not change"
    final = {key: value_of(w) for key, w in widgets(at, view).items()}

    assert final, f"page {view.key} has no widget to walk"
    fresh = open_page(view.key, url_of(at))
    no_problems(fresh)
    reopened = {key: value_of(w) for key, w in widgets(fresh, view).items()}
    lost = {key: (value, reopened.get(key, "<missing>")) for key, value in final.items() if reopened.get(key) != value}
    assert not lost, f"page {view.key}: controls not carried by the link (as set, as reopened): {lost}"


def test_the_walk_covers_every_page_and_its_declared_exceptions_exist() -> None:
    assert {v.key for v in VIEWS} >= {"overview", "breakdown", "missed", "diagnosis", "compare", "power", "upload"}
    for view in VIEWS:
        for prefix, reason in view.unlinked.items():
            assert prefix.startswith(f"{view.key}."), (view.key, prefix)
            assert len(reason) > 20, f"{view.key}: say why {prefix} is not in the link"


def test_every_run_cleared_stays_cleared_on_the_next_page_and_in_the_link() -> None:
    """Was: clearing the sidebar's runs left no ``runs`` key, which the next page read as the first five."""
    at = open_page("overview")
    picker = next(w for w in at.sidebar.multiselect if w.key == "sidebar.runs")
    assert picker.value
    picker.set_value([]).run()
    no_problems(at)
    linked = {key: param(at, key) for key in ("ds", "runs")}
    assert linked["runs"] == "none"
    other = open_page("missed", linked)
    no_problems(other)
    assert next(w for w in other.sidebar.multiselect if w.key == "sidebar.runs").value == []
    assert param(other, "runs") == "none"
