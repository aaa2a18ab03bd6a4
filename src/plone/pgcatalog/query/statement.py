"""A compiled search: its WHERE clauses, parameters and what they tell.

The clause builders (:mod:`.kinds`) add to one :class:`Statement`; the
page (:mod:`.page`) reads it and never changes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from plone.pgcatalog import registry as r
from plone.pgcatalog.relevance import Scored
from plone.pgcatalog.schema import CATALOGED


__all__ = ["TRAILING", "Nothing", "Statement", "as_filter"]


class Nothing(Exception):
    """Raised inside the builder when a part of the query matches nothing."""


@dataclass
class Statement:
    """A compiled search: WHERE clauses with their parameters."""

    where: list[str]
    params: list
    # The text indexes of the query: without sort_on, matches come in
    # order of their Okapi BM25 scores (see relevance)
    scored: list[Scored] = field(default_factory=list)
    # ZCatalog's score of a match is scale[0] * (sum of its text scores) + scale[1]
    scale: tuple[int, int] = (1, 0)
    # Whether some clause is false for rows that are not cataloged (their
    # catalog columns are NULL).  Then ``idx IS NOT NULL`` is left out: the
    # planner would take it as independent of the other clauses and
    # underestimate every result ~25-fold on a typical site.
    strict: bool = False
    # The one ``portal_type`` the query asks for, kept when the sort key has
    # a B-tree led by portal_type (a DateIndex): the walk then reads only
    # that type's entries.
    walk_type: tuple[str, str] | None = None  # (its expression, the type)
    # A clause that keeps the result small (a UID, an object or a folder's
    # children): the plain plan then beats walking the sort index.
    selective: bool = False
    # A clause on the typed ``portal_type``: the hot keys' covering index
    # (schema.HOT_KEYS_INDEX) holds what the security and effective range
    # clauses test, so the matches are counted from that index alone
    # (page.ordered_sql) while their first rows come off an index.
    covered: bool = False
    # What the clauses read, as the catalog's change stamps name it
    # (IndexDef.changes): a count of the matches stays true while none
    # of it changes (counts.count_column)
    reads: set[str] = field(default_factory=set)

    def where_sql(self) -> str:
        return " AND ".join(self.where if self.strict else [CATALOGED, *self.where])


def as_filter(clause: str, stmt: Statement, index: r.IndexDef | None = None) -> str:
    """*clause*, as a filter only when the statement is selective, or when
    it is one of the clauses Plone adds to every search (*index* is
    :data:`TRAILING`) and another index's clause leads.

    A UID or a folder's contents find a few rows through their own index;
    a security or date-range clause then only needs testing on those rows.
    Left as it is, the planner ANDs it in as a bitmap: a GIN scan of every
    row a Manager may see, milliseconds on a large site.  The security
    terms and the effective range hold for most items of a site, and the
    planner, which takes them as independent of the other clauses, would
    read them as a bitmap behind any of them (and a type's items carry them
    in the covering index that finds them).  Inside COALESCE the clause
    matches no index (nor implies the partial indexes' IS NOT NULL), and it
    still is false for rows without a value.
    """
    trailing = index is not None and index.name in TRAILING and bool(stmt.where)
    return f"COALESCE({clause}, false)" if stmt.selective or trailing else clause


# Plone's security clauses (CatalogTool.searchResults adds them to every
# search but a Manager's unrestricted ones): they come last, as filters
# of what the other clauses find (see as_filter)
TRAILING = ("allowedRolesAndUsers", "effectiveRange")
