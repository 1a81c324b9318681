"""A corpus, from whatever a team keeps its documents in: the one reader behind every command that takes one
(``eval``, ``retrieve``, ``evidence`` and ``pool`` ``--corpus``, ``synth``, ``dataset check``), so a set written
from a corpus is evaluated against the same documents under the same ids.

* a JSONL of objects (gzipped or not), BEIR's ``corpus.jsonl`` among them (:func:`ragmetrics.io.beir.read_corpus`):
  the id is the first of :data:`~ragmetrics.io.beir.DOC_ID_KEYS` a record holds, the text the first of
  :data:`~ragmetrics.io.beir.DOC_TEXT_KEYS`, the title ``title``; in a file whose first record names no id, a record
  without one is ``line<N>``, its line;
* a folder of ``.md`` / ``.txt`` files (searched recursively, sorted): the id is the file's path relative to the
  folder (``/``-separated), the title its first Markdown heading (else the file name without its suffix); each file
  UTF-8 (or UTF-16 with its byte-order mark), a file of other bytes refused with its name and line; its line ends
  read as ``\n`` (Windows' ``\r\n`` too).

A document id given twice keeps its first document, said in a warning (as every loader of ragmetrics does).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from ragmetrics.foundation.errors import ParseError
from ragmetrics.io.beir import read_corpus as read_corpus_file
from ragmetrics.io.limits import Limits
from ragmetrics.io.source import Source, check_text, open_source

FOLDER_SUFFIXES = (".md", ".txt")
"""The files a folder corpus is made of."""
_LINE_END = re.compile(r"\r\n?")
"""A line end of Windows (or of old Macs): a file's lines end in ``\n`` once read, as a text editor shows them, so a
file whose line ends a checkout converted is the same document, its offsets the same."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def read_corpus(source: Any, limits: Limits | None = None) -> pd.DataFrame:
    """``doc_id``, ``title``, ``text`` of the corpus at ``source`` (a path, bytes, a stream or a
    :class:`~ragmetrics.io.source.Source`; see the module), one row per document id."""
    opened = open_source(source, limits=limits)
    if opened.is_dir:
        return read_folder(opened)
    start = opened.head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1]
    if start and start not in b"{[":  # a table, a Markdown file: not records
        line = opened.text().lstrip("\ufeff \t\r\n").split("\n", 1)[0].rstrip("\r")
        raise ParseError(
            opened.name,
            1,
            'a corpus: a JSONL file of records ({"_id", "title", "text"}, gzipped or not) or a folder of .md/.txt '
            "files",
            repr(line[:40]),
        )
    return read_corpus_file(opened)


def read_folder(folder: Source) -> pd.DataFrame:
    """The ``.md`` / ``.txt`` files under the folder ``folder`` as documents (see the module); their bytes together
    are held to the folder's ``max_bytes``."""
    assert folder.path is not None
    root = Path(folder.path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES)
    if not files:
        raise ParseError(
            folder.name,
            None,
            f"a corpus file, or a folder of {' or '.join(FOLDER_SUFFIXES)} files",
            "none in the folder",
        )
    folder.limits.check_size(folder.name, sum(p.stat().st_size for p in files))
    rows = []
    for path in files:
        file = open_source(str(path), limits=folder.limits)
        # UTF-8 (or UTF-16 with its mark), else refused at the line that is not; line ends read as "\n"
        text = check_text(file, None, _LINE_END.sub("\n", file.text()), "a document text")
        heading = _HEADING.search(text) if path.suffix.lower() == ".md" else None
        rows.append((path.relative_to(root).as_posix(), heading.group(1) if heading else path.stem, text))
    return pd.DataFrame(rows, columns=["doc_id", "title", "text"]).astype("str")
