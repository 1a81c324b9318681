"""Marked passages: the text is escaped before anything is marked, so no document becomes markup."""

from __future__ import annotations

import re

import pytest

from dashboard.core.text import HIGHLIGHT_LEGEND, MARK_STYLES, Marks, highlight_html, query_terms

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "**bold** _it_ `code` # heading",
    "[link](javascript:alert(1)) ![img](x)",
    "$x^2$ :blue[coloured] :material/home:",
    "a\n\nb\r\n\r\nc",  # blank lines would end the HTML block and let Markdown resume
    "&lt;b&gt; &amp;",
    '" onmouseover="alert(1)',
]


def _marked(html: str) -> list[tuple[str, str]]:
    """(kind, text) of each mark, the kind read back from its style."""
    by_style = {style: kind for kind, (_, style) in MARK_STYLES.items()}
    return [(by_style[s], t) for s, t in re.findall(r'<mark style="([^"]+)">(.*?)</mark>', html)]


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_never_becomes_markup(text: str) -> None:
    html = highlight_html(text, Marks(answer="alert", keywords=["bold"], query="link heading"))
    assert html.startswith("<div") and html.endswith("</div>")
    # the only tags are our own: marks, line breaks and the one block around them, with our styles only
    ours = {f'<mark style="{style}">' for _, style in MARK_STYLES.values()} | {"</mark>", "<br>", "</div>"}
    tags = re.findall(r"<[^>]*>", html)
    assert tags[0].startswith('<div style="') and set(tags[1:]) <= ours, tags
    assert "\n" not in html  # one line: the HTML block never ends, Markdown never resumes inside it
    shown = re.sub(r"&#?\w+;", "", re.sub(r"<[^>]*>", "", html))  # the characters outside tags and references
    for special in '*_`[]()$:#<>"':
        assert special not in shown, special  # escaped, or written as character references


def test_answer_keywords_and_query_words_are_marked_answer_first() -> None:
    text = "个人 Pro 订阅：年付 168 元，相当于每月 14 元。Pro pricing applies."
    html = highlight_html(
        text, Marks(answer="年付 168 元", keywords=["168 元", "每月"], query="个人 Pro 年付多少钱？ pricing")
    )
    marks = _marked(html)
    assert ("answer", "年付 168 元") in marks  # the answer wins over the keyword inside it
    assert ("keyword", "每月") in marks
    assert ("query", "个人") in marks and ("query", "pricing") in marks
    assert not any(kind == "keyword" and "168" in t for kind, t in marks)


def test_marks_are_case_insensitive_and_latin_words_whole() -> None:
    html = highlight_html("Refund within 14 days; refunds are partial.", Marks(query="What is the REFUND policy?"))
    assert _marked(html) == [("query", "Refund")]  # "refunds" is another word; "the", "is" are stop words


def test_query_terms_chinese_longest_runs_and_latin_words() -> None:
    assert query_terms("大莱龙铁路位于哪里？", "大莱龙铁路位于山东省北部") == ["大莱龙铁路位于"]
    assert query_terms("大莱龙铁路一共投资多少亿元？", "总投资11.42亿元") == ["投资", "亿元"]
    assert query_terms("How long is the refund window?", "The refund window is 14 days long") == [
        "long",
        "refund",
        "window",
    ]
    assert query_terms("", "anything") == []


def test_long_text_is_cut_and_empty_text_says_so() -> None:
    assert highlight_html("x" * 5000, limit=100).count("x") == 100
    assert "…" in highlight_html("x" * 5000, limit=100)
    assert "(no text)" in highlight_html("")
    assert "(no text)" in highlight_html(None)


def test_legend_names_every_kind() -> None:
    assert [what for what, _ in MARK_STYLES.values()] == ["expected answer", "expected keyword", "query term"]
    assert all(what in HIGHLIGHT_LEGEND for what, _ in MARK_STYLES.values())


def test_references_read_back_as_the_text_itself() -> None:
    """Was: an apostrophe showed as the text "&#x27;" (its reference's '#' was escaped once more)."""
    import html as html_module

    text = "Customer's \"quote\" & co <b> #1 — it's 100% [ok]"
    out = highlight_html(text, Marks(query="customer quote"))
    assert ("query", "Customer&#39;s") not in _marked(out)  # whole words: "Customer" alone is marked
    assert html_module.unescape(re.sub(r"<[^>]*>", "", out)) == text


def test_a_long_chinese_query_is_marked_in_time_linear_in_it() -> None:
    """Was: every substring of the query was looked for (a 4,001-character query took 92 s on the Judge page)."""
    import random
    import time

    rng = random.Random(7)
    alphabet = "检索评测系统数据中文查询文档相关排序召回率准确"
    passage = "".join(rng.choice(alphabet) for _ in range(4000))
    query = "".join(rng.choice(alphabet) for _ in range(4001))
    start = time.perf_counter()
    out = highlight_html(passage, Marks(query=query))
    assert time.perf_counter() - start < 3.0
    terms = query_terms(query, passage)
    assert terms and all(len(t) >= 2 and t in passage and t in query for t in terms)
    assert any(kind == "query" for kind, _ in _marked(out))
