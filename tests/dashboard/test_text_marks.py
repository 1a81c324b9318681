"""Marked passages: the text is escaped before anything is marked, so no document becomes markup."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from dashboard.core.text import (
    HIGHLIGHT_LEGEND,
    MARK_COLOURS,
    WORD_JOINER,
    Marks,
    from_before,
    highlight_markdown,
    md_escape,
    query_terms,
)

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "**bold** _it_ `code` # heading",
    "[link](javascript:alert(1)) ![img](x) <https://evil.example> www.evil.example",
    "$x^2$ :blue[coloured] :material/home: :smile: :green-background[not ours]",
    "a\n\nb\r\n\r\nc",  # blank lines: paragraphs, never a new block of another kind
    "title\n===\n- item\n1. item\n> quote\n| a | b |\n|---|---|\n    indented code",
    "&lt;b&gt; &amp; &#58;",
    '" onmouseover="alert(1)',
    "answer:alert \\:alert",  # a mark right after a colon, and after a backslash and a colon
]
OURS = re.compile(
    r":(" + "|".join(colour for _, colour in MARK_COLOURS.values()) + r")-background\[:\1\[((?:\\.|&#58;|[^\]\\])*)\]\]"
)
"""One of our marks: its colour and its (escaped) text."""
PARSER = MarkdownIt("gfm-like", {"html": True, "linkify": True})
"""CommonMark with GitHub's tables, strikethrough and bare links, HTML allowed: what any of them reads as markup
shows up as a token other than text."""


def _shown(markdown: str) -> str:
    """The text a Markdown renderer shows for ``markdown``, each line break as a newline, as a reader sees it (the
    invisible word joiners that keep an address text left out); it fails on any markup."""
    tokens = PARSER.parse(markdown)
    assert {t.type for t in tokens} <= {"paragraph_open", "inline", "paragraph_close"}, [t.type for t in tokens]
    paragraphs = []
    for token in (t for t in tokens if t.type == "inline"):
        children = token.children or []
        assert {c.type for c in children} <= {"text", "hardbreak"}, [(c.type, c.content) for c in children]
        paragraphs.append("".join(c.content if c.type == "text" else "\n" for c in children))
    return "\n\n".join(paragraphs).replace(WORD_JOINER, "")


def _marked(markdown: str) -> list[tuple[str, str]]:
    """(kind, shown text) of each mark, the kind read back from its colour."""
    by_colour = {colour: kind for kind, (_, colour) in MARK_COLOURS.items()}
    return [(by_colour[colour], _shown(text)) for colour, text in OURS.findall(markdown)]


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_never_becomes_markup(text: str) -> None:
    markdown = highlight_markdown(
        text, Marks(answer="alert", keywords=["bold", "b", "item", "amp"], query="link home quote")
    )
    assert _marked(markdown)  # something is marked in every one
    # every ':' starts one of our marks (the text's own are references), so each mark is read as one, even one
    # right after a colon of the text
    assert markdown.count(":") == 2 * len(OURS.findall(markdown))
    # without our marks' wrappers, a Markdown renderer shows the text itself, its line breaks and nothing else:
    # no HTML, link, emphasis, code, heading, list, quote or table
    plain = _shown(OURS.sub(lambda m: m.group(2), markdown))
    expected = re.sub(r"\n{2,}", "\n\n", re.sub(r"[ \t]*\n[ \t]*", "\n", text.replace("\r\n", "\n"))).strip()
    assert plain == expected


def test_answer_keywords_and_query_words_are_marked_answer_first() -> None:
    text = "个人 Pro 订阅：年付 168 元，相当于每月 14 元。Pro pricing applies."
    markdown = highlight_markdown(
        text, Marks(answer="年付 168 元", keywords=["168 元", "每月"], query="个人 Pro 年付多少钱？ pricing")
    )
    marks = _marked(markdown)
    assert ("answer", "年付 168 元") in marks  # the answer wins over the keyword inside it
    assert ("keyword", "每月") in marks
    assert ("query", "个人") in marks and ("query", "pricing") in marks
    assert not any(kind == "keyword" and "168" in t for kind, t in marks)


def test_marks_are_case_insensitive_and_latin_words_whole() -> None:
    markdown = highlight_markdown(
        "Refund within 14 days; refunds are partial.", Marks(query="What is the REFUND policy?")
    )
    assert _marked(markdown) == [("query", "Refund")]  # "refunds" is another word; "the", "is" are stop words


def test_query_terms_chinese_longest_runs_and_latin_words() -> None:
    assert query_terms("大莱龙铁路位于哪里？", "大莱龙铁路位于山东省北部") == ["大莱龙铁路位于"]
    assert query_terms("大莱龙铁路一共投资多少亿元？", "总投资11.42亿元") == ["投资", "亿元"]
    assert query_terms("How long is the refund window?", "The refund window is 14 days long") == [
        "long",
        "refund",
        "window",
    ]
    assert query_terms("", "anything") == []
    # whole words of the query, never a piece across two of them (was: 和数 of 字母和数字, marked in 和数据库)
    assert query_terms("关于新密码、字母和数字有什么信息？", "消息队列和数据库原理；字母") == ["字母"]


def test_long_text_is_cut_and_empty_text_says_so() -> None:
    assert highlight_markdown("x" * 5000, limit=100).count("x") == 100
    assert "…" in highlight_markdown("x" * 5000, limit=100)
    assert highlight_markdown("") == highlight_markdown(None) == highlight_markdown(" \n\t") == "*(no text)*"


def test_legend_names_every_kind() -> None:
    assert [what for what, _ in MARK_COLOURS.values()] == ["expected answer", "expected keyword", "query term"]
    assert _marked(HIGHLIGHT_LEGEND) == [(kind, what) for kind, (what, _) in MARK_COLOURS.items()]


def test_the_text_reads_back_as_itself_marks_included() -> None:
    text = "Customer's \"quote\" & co <b> #1 — it's 100% [ok] &amp; a=b"
    out = highlight_markdown(text, Marks(query="customer quote"))
    assert _marked(out) == [("query", "Customer"), ("query", "quote")]  # whole words: not "Customer's"
    assert _shown(OURS.sub(lambda m: m.group(2), out)) == text


def test_md_escape_shows_every_character_as_itself() -> None:
    text = "".join(chr(c) for c in range(33, 127)) + " &amp; &#58; === "
    assert _shown(md_escape(text)) == text.strip()


def test_a_long_chinese_query_is_marked_in_time_linear_in_it() -> None:
    """Was: every substring of the query was looked for (a 4,001-character query took 92 s on the Judge page)."""
    import random
    import time

    rng = random.Random(7)
    alphabet = "检索评测系统数据中文查询文档相关排序召回率准确"
    passage = "".join(rng.choice(alphabet) for _ in range(4000))
    query = "".join(rng.choice(alphabet) for _ in range(4001))
    start = time.perf_counter()
    out = highlight_markdown(passage, Marks(query=query))
    assert time.perf_counter() - start < 3.0
    terms = query_terms(query, passage)
    assert terms and all(len(t) >= 2 and t in passage and t in query for t in terms)
    assert any(kind == "query" for kind, _ in _marked(out))


def test_a_long_source_is_shown_from_a_sentence_before_its_answer():
    """Was: the Build page's source box showed characters 0 to 2,384 of a SciFact abstract whose expected answer
    sat below the box's fold: a reviewer judged without seeing it. The box now starts at a sentence about 300
    characters before the answer; a short source, or one whose answer is near its start, shows whole."""
    text = "".join(f"Sentence {i} of the abstract says little. " for i in range(40)) + "The answer is here."
    shown, offset = from_before(text, "The answer is here.")
    assert offset > 0 and shown.startswith("… Sentence ") and text[offset:].lstrip() == shown[2:]
    assert len(shown) < 400 and "The answer is here." in shown
    assert from_before(text, "Sentence 1 of") == (text, 0)
    assert from_before(text, "not in it") == (text, 0)


def test_an_address_in_text_is_shown_as_text_not_made_a_link() -> None:
    """Was: "https://api.yunnote.example/v1，认证时在查询参数中附带" was one link on the Build page, the Chinese after the
    address swallowed into it (no space ends it) and its keyword unmarked. The renderer links text after escapes are
    read, so an invisible word joiner inside the scheme keeps it text (checked in chromium: no link left)."""
    text = "调用地址 https://api.yunnote.example/v1，认证时在查询参数中附带令牌。另见 www.example.com，谢谢。"
    for shown in (md_escape(text), highlight_markdown(text, Marks(keywords=["附带"]))):
        assert f"https{WORD_JOINER}" in shown and f"ww{WORD_JOINER}w" in shown
        assert _shown(OURS.sub(lambda m: m.group(2), shown)) == text
    assert _marked(highlight_markdown(text, Marks(keywords=["附带"]))) == [("keyword", "附带")]
