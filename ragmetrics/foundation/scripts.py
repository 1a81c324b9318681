"""Which characters are Chinese, Japanese or Korean, in one place: the tokenizers, the built-in BM25, the
generators, the diagnosis and the dashboard's highlighting all read these."""

from __future__ import annotations

import re

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Chinese ideographs (CJK unified, extension A, compatibility), as the body of a character class."""

CJK = HAN + "\u3040-\u30ff\uac00-\ud7af"
"""Chinese ideographs, Japanese kana and Korean hangul, as the body of a character class."""

HAN_CHARACTER = re.compile(f"[{HAN}]")
CJK_CHARACTER = re.compile(f"[{CJK}]")
