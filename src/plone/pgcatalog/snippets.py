"""Snippets: a passage of a result's text around the words its search
matched, those words marked.

The text is what the catalog indexed: the ``indexed_text`` column for
SearchableText (kept since schema version 8), the metadata column of the
same name for another text index (Title, Description).  It is read only
for the brains a page shows, a window of rows in one statement, as their
metadata is.

Words are found as the index found them: the lexicon's own pipeline
folds each letter (case, accents), so that the text can be searched in
a copy folded letter by letter, of the same length, whose matches are
where the words are in the text.  A letter the pipeline turns into
several (``ß``, ``æ``) stays as it is: such a word is indexed but not
marked.  A phrase's words are marked one by one, a ``NOT`` part's never.
The passage is HTML: the text is escaped, then the marks are added.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from plone.pgcatalog.relevance import Scored
from typing import Any

import re


__all__ = ["DEFAULT_SIZE", "Snippets", "passage"]

DEFAULT_SIZE = 200
"""Characters of text in a snippet, about."""
MAX_SIZE = 2000
_CANDIDATES = 10  # the first matches of each word, where a passage may start
_LEAD = 4  # a passage starts a quarter of its size before a match
_BLANKS = re.compile(r"\s+")
_NON_WORD = re.compile(r"\W")
_WORD_CHAR = re.compile(r"\w")
# The letters whose folding is learnt from the lexicon's pipeline: Latin,
# Greek, Cyrillic (other scripts have no case; CJK words are bigrams)
_FOLDED_RANGES = ((0x41, 0x5B), (0xC0, 0x250), (0x370, 0x400), (0x400, 0x530), (0x1E00, 0x1F00))


@dataclass(frozen=True)
class Word:
    """A word a search matched: found by its *literal* start (a glob's
    prefix), matched whole by *pattern* there."""

    literal: str
    pattern: re.Pattern
    bounded: bool  # between word boundaries (not a CJK bigram)


@dataclass(frozen=True)
class Marked:
    """What to mark in a text: its folding table and the matched words."""

    fold: Mapping[int, str]
    words: tuple[Word, ...]


class Snippets:
    """The snippets of one search's results (see :meth:`passage`); what
    to mark is worked out when the first is asked for."""

    def __init__(
        self,
        scored: Sequence[Scored],
        lexicons: Callable[[], Mapping[str, Any]],
        load: Callable[[list[int]], dict[int, str | None]],
    ) -> None:
        self.load = load  # the indexed texts of some record ids (database.load_texts)
        # SearchableText first: it has the whole text
        self._scored = min(scored, key=lambda s: s.index.column is None)
        self._lexicons = lexicons
        self._marked: Marked | None = None
        self.index = self._scored.index

    @property
    def stored(self) -> bool:
        """Whether the text is the ``indexed_text`` column (else: the
        metadata column named as the index)."""
        return self.index.column is not None

    def passage(self, text: str, size: int = DEFAULT_SIZE) -> str:
        if self._marked is None:
            lexicon = self._lexicons().get(self.index.options.get("lexicon_id"))
            self._marked = Marked(_fold_table(lexicon), _words(tuple(_terms(self._scored.tree))))
        return passage(text, self._marked, size)


def passage(text: str, marked: Marked, size: int = DEFAULT_SIZE) -> str:
    """About *size* characters of *text* where most of the matched words
    are, as HTML: escaped, the words in ``<mark>``, an ellipsis where
    text is left out."""
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_SIZE:
        raise ValueError(f"A snippet's size is a number of characters from 1 to {MAX_SIZE}, not {size!r}")
    folded = text.translate(marked.fold) if marked.words else ""
    start, end = _window(text, _matches(folded, marked.words, 0, len(folded), _CANDIDATES), size)
    parts = ["… " if start else ""]
    at = start
    for begin, finish, _ in _matches(folded, marked.words, start, end):
        if begin < at:
            continue
        parts += [_plain(text[at:begin]), "<mark>", escape(text[begin:finish]), "</mark>"]
        at = finish
    parts += [_plain(text[at:end]), " …" if end < len(text) else ""]
    return "".join(parts).strip()


def _matches(
    folded: str, words: tuple[Word, ...], start: int, end: int, each: int | None = None
) -> list[tuple[int, int, str]]:
    """``(start, end, folded word)`` of the matched *words* in
    ``folded[start:end]`` (at most *each* of each word), in order.  Each
    word is sought by its literal start (``str.find``, which skips through
    text far faster than one expression of all the words), then matched
    whole."""
    spans = []
    for word in words:
        found, at = 0, folded.find(word.literal, start, end)
        while at >= 0 and found != each:
            match = word.pattern.match(folded, at, end)
            if match and (not word.bounded or at == 0 or not _WORD_CHAR.match(folded, at - 1)):
                spans.append((at, match.end(), match.group()))
                found += 1
            at = folded.find(word.literal, at + 1, end)
    return sorted(spans)


def _plain(text: str) -> str:
    return escape(_BLANKS.sub(" ", text))


def _window(text: str, spans: list[tuple[int, int, str]], size: int) -> tuple[int, int]:
    """The start and end of the passage: of the windows that begin a
    little before a match, the one holding the most different words."""
    if not spans:
        return 0, _cut(text, 0, min(len(text), size))
    lead = size // _LEAD
    best, most = 0, -1
    held: Counter[str] = Counter()  # the words of spans[i:j], the passage of span i
    j = 0
    for i, (begin, _, _) in enumerate(spans):
        j = max(i, j)
        while j < len(spans) and spans[j][1] <= begin - lead + size:
            held[spans[j][2]] += 1
            j += 1
        if len(held) > most:
            best, most = i, len(held)
        if j > i:  # span i leaves the window
            held[spans[i][2]] -= 1
            if not held[spans[i][2]]:
                del held[spans[i][2]]
    match_start, match_end, _ = spans[best]
    start = max(0, match_start - lead)
    if start and not _NON_WORD.match(text, start - 1):
        gap = _NON_WORD.search(text, start, match_start)  # not in the middle of a word
        start = gap.end() if gap else match_start
    end = min(len(text), max(start + size, match_end))
    return start, _cut(text, match_end, end)


def _cut(text: str, after: int, end: int) -> int:
    """*end*, moved back to a blank (after *after*) so as not to cut a word."""
    if end >= len(text) or _NON_WORD.match(text, end):
        return end
    blank = text.rfind(" ", after, end)
    return blank if blank > after else end


def _terms(node: Any) -> Iterator[tuple[str, bool]]:
    """``(word, glob)`` of each word a parse tree searches for (not under ``NOT``)."""
    kind, value = node.nodeType(), node.getValue()
    if kind == "ATOM":
        yield value, False
    elif kind == "PHRASE":
        for word in value:
            yield word, False
    elif kind == "GLOB":
        yield value, True
    elif kind in ("AND", "OR"):
        for child in value:
            yield from _terms(child)


@lru_cache(maxsize=256)
def _words(terms: tuple[tuple[str, bool], ...]) -> tuple[Word, ...]:
    """The words to find in text folded as the index folds it."""
    words = {}
    for word, glob in terms:
        if glob:
            literal = word[: min((word.index(c) for c in "*?" if c in word), default=len(word))]
            body = "".join(r"\w*" if c == "*" else r"\w" if c == "?" else re.escape(c) for c in word)
        else:
            literal, body = word, re.escape(word)
        bounded = all(ord(c) < 0x2E80 for c in word)  # (a CJK bigram may start and end anywhere)
        if literal:
            words[word, glob] = Word(literal, re.compile(rf"{body}(?!\w)" if bounded else body), bounded)
    return tuple(words.values())


_TABLES: dict[tuple[str, ...], Mapping[int, str]] = {}


def _fold_table(lexicon: Any) -> Mapping[int, str]:
    """``str.translate``'s table of the letters *lexicon* folds into one
    other letter (a missing lexicon: lower case); one per pipeline."""
    names = tuple(lexicon.getPipelineNames()) if lexicon is not None else ()
    table = _TABLES.get(names)
    if table is None:
        fold = lexicon.process if lexicon is not None else lambda letters: [letters[0].lower()]
        table = _TABLES[names] = {}
        for low, high in _FOLDED_RANGES:
            for point in range(low, high):
                letter = chr(point)
                words = fold([letter])
                folded = words[0] if len(words) == 1 and len(words[0]) == 1 else letter.lower()
                if len(folded) == 1 and folded != letter:
                    table[point] = folded
    return table
