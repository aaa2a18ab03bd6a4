"""ZCTextIndex query language → PostgreSQL ``tsquery``.

Parsing is ZCTextIndex's own :class:`QueryParser` run over the index's
lexicon, so the grammar (AND / OR / NOT, ``"phrases"``, ``-word``,
``prefix*``, ``a?c``), the word folding and the ``ParseError`` for bad
syntax are exactly ZCatalog's.  The parse tree is then written out as a
``tsquery`` literal over the same normalised words the indexer stored.

A ``tsquery`` knows prefixes only.  A glob with a wildcard inside
(``po?t``, ``post*sql``) is matched as ZCTextIndex's lexicon matches it,
by the shell pattern over the row's words (:func:`glob_like`), behind the
``tsquery`` of its prefix, which keeps the text index in use.
"""

from __future__ import annotations

from typing import Any

from plone.pgcatalog.errors import TextQueryTooLong
from Products.ZCTextIndex import ParseTree
from Products.ZCTextIndex.QueryParser import QueryParser

import re


__all__ = [
    "MAX_LEXEME_BYTES",
    "MAX_TEXT_TERMS",
    "as_typed",
    "glob_like",
    "glob_prefix",
    "lexeme",
    "node_tsquery",
    "parse",
    "text_condition",
]


ParseError = ParseTree.ParseError

_GLOB = re.compile(r"[*?]")


class _FallbackLexicon:
    """Word splitting for an index whose lexicon object is missing."""

    def parseTerms(self, text):
        return [w.lower() for w in re.findall(r"[\w*?]+", text, re.UNICODE)]

    def isGlob(self, word):
        return "*" in word or "?" in word


# PostgreSQL's limit on a lexeme is 2 KiB: a longer word is never indexed
# (extraction leaves it out), and a tsquery cannot even name it.
MAX_LEXEME_BYTES = 2000
# ... so it stands for a word no row holds, which is what it is: a lexeme
# no lexicon yields (its splitters keep word characters only).
_NO_WORD = "\x01"

# The most words (a phrase's each, a glob one) one text query may have.
# Past it a search would hold its database backend for seconds (a list of
# 10,000 words, which ``SearchableText:list`` builds from a URL, ran 1.5 s on
# a 30-page site; 2,000 globs 4.6 s), where nobody asks for so many.
MAX_TEXT_TERMS = 500


def lexeme(word: str) -> str:
    """*word* as a quoted ``tsquery`` lexeme."""
    if len(word.encode("utf-8")) > MAX_LEXEME_BYTES:
        word = _NO_WORD
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def lexeme_sql(word: str) -> str:
    """The SQL of a ``tsquery`` of the one lexeme held by the SQL text
    expression *word*, quoted as :func:`lexeme` quotes it (for words known
    only inside a statement: chr(39) is a quote, chr(92) a backslash)."""
    return (
        f"(chr(39) || replace(replace({word}, chr(92), chr(92) || chr(92)), chr(39), chr(39) || chr(39))"
        " || chr(39))::tsquery"
    )


def _balanced(operator: str, parts: list[str]) -> str:
    """``(a op b op c ...)`` nested as a balanced tree: PostgreSQL reads
    a flat list as a chain as deep as it is long, and thousands of terms
    exceed its stack."""
    if len(parts) <= 2:
        return "(" + f" {operator} ".join(parts) + ")"
    middle = len(parts) // 2
    return f"({_balanced(operator, parts[:middle])} {operator} {_balanced(operator, parts[middle:])})"


def glob_prefix(pattern: str) -> str:
    """The words a ``prefix*`` glob expands to start with this."""
    prefix = _GLOB.split(pattern, 1)[0]
    if not prefix:
        raise ParseError(f"Glob pattern without a prefix: {pattern!r}")
    return prefix


def glob_like(pattern: str) -> str | None:
    """*pattern* (``*`` any run of characters, ``?`` one character, as in
    ``Lexicon.globToWordIds``) as a ``LIKE`` pattern, or None when its
    prefix alone says it all (``prefix*``)."""
    prefix = glob_prefix(pattern)
    if not pattern[len(prefix) :].strip("*"):
        return None
    escaped = {"*": "%", "?": "_", "%": "\\%", "_": "\\_", "\\": "\\\\"}
    return "".join(escaped.get(c, c) for c in pattern)


def _exact(node) -> bool:
    """Whether ``tsquery`` alone decides *node* (no glob with an inner wildcard)."""
    kind, value = node.nodeType(), node.getValue()
    if kind == "GLOB":
        return glob_like(value) is None
    if kind == "NOT":
        return _exact(value)
    if kind in ("AND", "OR"):
        return all(_exact(child) for child in value)
    return True


def text_condition(node: Any, expr: str) -> tuple[str, list]:
    """SQL that holds for the rows whose ``tsvector`` *expr* matches *node*,
    with its parameters: one ``tsquery`` test, or, around globs with an
    inner wildcard, the same tree as SQL."""
    if _exact(node):
        return f"{expr} @@ %s::tsquery", [node_tsquery(node)]
    kind, value = node.nodeType(), node.getValue()
    if kind == "GLOB":
        words = f"SELECT 1 FROM unnest({expr}) AS u WHERE u.lexeme LIKE %s"
        return f"({expr} @@ %s::tsquery AND EXISTS ({words}))", [node_tsquery(node), glob_like(value)]
    if kind == "NOT":
        sql, params = text_condition(value, expr)
        return f"NOT {sql}", params
    parts = [text_condition(child, expr) for child in value]
    joined = f" {kind} ".join(sql for sql, _ in parts)
    return f"({joined})", [p for _, params in parts for p in params]


def node_tsquery(node: Any) -> str:
    """A parse tree (node) as a ``tsquery`` literal; a glob as its prefix
    (all that a ``tsquery`` can say: see :func:`text_condition`)."""
    kind = node.nodeType()
    value = node.getValue()
    if kind == "ATOM":
        return lexeme(value)
    if kind == "PHRASE":
        return "(" + " <-> ".join(lexeme(w) for w in value) + ")"
    if kind == "GLOB":
        return lexeme(glob_prefix(value)) + ":*"
    if kind == "NOT":
        return "!" + node_tsquery(value)
    if kind in ("AND", "OR"):
        return _balanced("&" if kind == "AND" else "|", [node_tsquery(child) for child in value])
    raise ParseError(f"unsupported query node {kind}")


def parse(query: Any, lexicon: Any = None) -> Any:
    """ZCTextIndex's parse tree of *query*, or None where ZCTextIndex
    matches nothing (an empty query, or only words the lexicon drops);
    raises ``ParseError`` where ZCTextIndex does."""
    if isinstance(query, (list, tuple)):
        query = " ".join(str(q) for q in query)
    if not isinstance(query, str):
        query = str(query)
    if not query:
        return None  # ZCTextIndex answers nothing; only blanks fail its parser
    tree = QueryParser(lexicon if lexicon is not None else _FallbackLexicon()).parseQuery(query)
    if tree is not None and _terms(tree) > MAX_TEXT_TERMS:
        raise TextQueryTooLong(f"A text query may have at most {MAX_TEXT_TERMS} words")
    return tree


def as_typed(query: str, lexicon: Any = None) -> Any:
    """The parse tree of a text being typed (the ``as_you_type`` option):
    every word must match, the last one as a prefix unless a blank follows
    it; None where the text has no word.

    There is no syntax: ``and``, quotes and wildcards are typed text.
    ZCTextIndex reads ``super expi`` as ``super AND expi`` and finds
    nothing while "expired" is being typed; this tree is ``super AND
    expi*``, scored as ZCTextIndex scores that query.
    """
    words = (lexicon if lexicon is not None else _FallbackLexicon()).parseTerms(_GLOB.sub(" ", query))
    if not words:
        return None
    if len(words) > MAX_TEXT_TERMS:
        raise TextQueryTooLong(f"A text query may have at most {MAX_TEXT_TERMS} words")
    nodes = [ParseTree.AtomNode(word) for word in words]
    if not query[-1].isspace():
        nodes[-1] = ParseTree.GlobNode(words[-1] + "*")
    return nodes[0] if len(nodes) == 1 else ParseTree.AndNode(nodes)


def _terms(node) -> int:
    """How many words the parse tree *node* searches for."""
    kind, value = node.nodeType(), node.getValue()
    if kind in ("AND", "OR"):
        return sum(_terms(child) for child in value)
    if kind == "NOT":
        return _terms(value)
    return len(value) if kind == "PHRASE" else 1
