"""What changed in the catalog since a commit, read from the change log
(``schema.CHANGE_LOG``), so that an answer summed over the rows a WHERE
matches is brought up to date instead of summed again over every row.

An answer made at commit *A* (a facet's counts: :mod:`~plone.pgcatalog.facets`)
is a sum of each matching row's part.  Between *A* and now only the rows
the log names changed: the answer now is the one at *A*, plus the parts
of those rows as they are, minus the parts of the same rows as they were
at *A* (the first version the log kept of each after *A*; none for a row
that was no catalog row then).  A statement reads them as *signed rows*
(:func:`signed_rows`): 1 for a row as it is, -1 for a row as it was.  Where
the log cannot tell (*A* is older than what it keeps, the database was
put back from a copy, a rebuild or an undo came between, a WHERE reads
other rows in a subquery), every matching row is read, signed 1.

*A* is named by its stamp (``"<counter>.<transaction id>"``, the ``*``
stamp of ``pgcatalog_counter``), which no other commit ever has.
"""

from __future__ import annotations

from dataclasses import dataclass
from plone.pgcatalog.overlay import site_scope
from plone.pgcatalog.registry import IndexDef
from plone.pgcatalog.registry import OPEN_END
from plone.pgcatalog.schema import CATALOG_ROWS
from plone.pgcatalog.schema import COMMITS
from plone.pgcatalog.schema import LOG
from plone.pgcatalog.schema import LOGGED
from plone.pgcatalog.schema import ROWS
from typing import Any


__all__ = ["ALL", "EFFECTIVE_RANGE", "NONE", "SINCE", "SOME", "Moment", "signed_rows"]

SINCE = "pgcatalog_since"
"""The statement's row of what changed since *A*: ``changed`` (one of
:data:`NONE`, :data:`SOME`, :data:`ALL`) and ``stamp``, the stamp of now."""
CHANGED = "pgcatalog_changed"
TIMED = "pgcatalog_timed"

NONE, SOME, ALL = "none", "some", "all"
"""Nothing changed (the answer at *A* stands); the log names what changed
(the signed rows are the changed ones); the answer is made again (every
matching row, signed 1)."""


@dataclass(frozen=True)
class Moment:
    """A statement's effective range criterion (``start <= minute AND end
    >= minute``, as ``searchResults`` adds it for who may not see inactive
    items), whose minute moves between an answer and the next: the rows
    whose start or end lies between the two minutes count again too."""

    start: str  # the range's SQL expressions
    end: str
    then: int | None  # the minute of the answer brought up to date
    now: int

    def sql(self) -> str:
        return f"COALESCE({self.start} <= %s AND {self.end} >= %s, false)"

    @classmethod
    def of(cls, index: IndexDef, minute: int) -> Moment:
        """The moment of the DateRangeIndex *index* at *minute*, whose answer
        was made at no other minute yet."""
        start, end, *_ = index.range_expressions()
        return cls(start, end, None, minute)


EFFECTIVE_RANGE = "effectiveRange"
"""The DateRangeIndex Plone's ``searchResults`` adds a criterion of at the
minute for who may not see inactive items: the criterion a
:class:`Moment` is made of."""


_SINCE_SQL = f"""{SINCE} AS MATERIALIZED (
SELECT c.stamps->>'*' AS stamp, c.value, a.counter AS since,
       CASE WHEN a.stamp IS NULL THEN '{ALL}'
            WHEN c.stamps->>'*' = a.stamp THEN CASE WHEN a.moved THEN '{SOME}' ELSE '{NONE}' END
            WHEN a.logged AND a.counter >= c.logged_from
                 AND EXISTS (SELECT FROM {COMMITS} m WHERE m.counter = a.counter AND m.xid::text = a.xid)
            THEN '{SOME}'
            ELSE '{ALL}' END AS changed
  FROM pgcatalog_counter c,
       (SELECT s AS stamp, split_part(s, '.', 1)::bigint AS counter, split_part(s, '.', 2) AS xid,
               l AS logged, m AS moved
          FROM (SELECT {{stamp}}, %s::boolean, %s::boolean) AS p(s, l, m)) AS a
 WHERE c.id = 1),
{CHANGED} AS MATERIALIZED (
SELECT DISTINCT ON (l.zoid) l.zoid, {", ".join(f"l.{name}" for name, _ in LOGGED)}
  FROM {SINCE} s
  JOIN {COMMITS} m ON m.counter > s.since AND m.counter <= s.value
  JOIN {LOG} l ON l.xid = m.xid
 WHERE s.changed = '{SOME}'
 ORDER BY l.zoid, l.id)"""

# the rows whose start or end lies between two minutes (%s: the earlier,
# the later, twice); an end is looked up only where one was set (see
# schema.EXPIRING)
_TIMED_SQL = f"""{TIMED} AS MATERIALIZED (
SELECT object_state.zoid FROM {ROWS}
 WHERE (SELECT changed FROM {SINCE}) = '{SOME}'
   AND (({{start}} > %s AND {{start}} <= %s) OR ({{end}} >= %s AND {{end}} < %s AND {{end}} < {OPEN_END})))"""


def signed_rows(
    columns: str,
    where: str,
    params: list,
    site: str,
    stamp: str | None,
    moment: Moment | None = None,
    custom: bool = False,
    shared: tuple[str, list] | None = None,
) -> tuple[str, str, list]:
    """The rows that bring an answer made at the commit stamped *stamp*
    (None: none was made) up to date: ``SELECT columns, sign`` of the
    catalog rows (of the site at path *site*) that match *where* (and the
    *moment*'s criterion, at its minute then for the rows as they were,
    now for the rows as they are), with *params* (those of *columns*, then
    those of *where*).

    Returns the statement's first common table expressions (:data:`SINCE`
    and the changed rows), the signed rows' SELECT, and the parameters of
    both in order.  *custom*: an add-on's index kind wrote some of the
    SQL, which may read columns the log does not keep: counted again after
    any change.  *shared*: a subquery (with its parameters) of the stamp
    of an answer another process made (:mod:`~plone.pgcatalog.shared`),
    brought up to date where *stamp* is None."""
    moved = moment is not None and moment.then is not None and moment.then != moment.now
    whole = custom or CATALOG_ROWS in columns + where  # (a subquery reading other rows)
    if whole and moved:
        stamp, shared = None, None  # (made again)
    stamped, stamp_params = "%s::text", list[Any]([stamp])
    if shared is not None:
        stamped, stamp_params = f"COALESCE(%s::text, ({shared[0]}))", [stamp, *shared[1]]
    since = _SINCE_SQL.format(stamp=stamped)
    if whole:
        if moment is not None:
            where, params = f"{where} AND {moment.sql()}", [*params, moment.now, moment.now]
        select = f"SELECT {columns}, 1 AS sign FROM {ROWS} WHERE {where} AND (SELECT changed FROM {SINCE}) = '{ALL}'"
        return since, select, [*stamp_params, False, False, *params]
    head, head_params = since, [*stamp_params, True, moved]
    changed = f"SELECT zoid FROM {CHANGED}"
    was, now = params, params
    gone = f"SELECT * FROM {CHANGED} WHERE idx IS NOT NULL" + (
        f" AND {site_scope(site, 'path')}" if site else ""
    )
    if moment is not None:
        where = f"{where} AND {moment.sql()}"
        now = [*params, moment.now, moment.now]
        was = [*params, moment.then, moment.then] if moment.then is not None else now
        if moved and moment.then is not None:  # (as moved says)
            lo, hi = sorted((moment.then, moment.now))
            head += ",\n" + _TIMED_SQL.format(start=moment.start, end=moment.end)
            head_params += [lo, hi, lo, hi]
            changed += f" UNION SELECT zoid FROM {TIMED}"
            logged_names = ", ".join(name for name, _ in LOGGED)
            gone += (
                f" UNION ALL SELECT zoid, {logged_names} FROM {ROWS} WHERE object_state.zoid = "
                f"ANY(ARRAY(SELECT zoid FROM {TIMED} EXCEPT SELECT zoid FROM {CHANGED}))"
            )
    select = (
        f"SELECT {columns}, 1 AS sign FROM {ROWS} WHERE {where} AND (SELECT changed FROM {SINCE}) = '{ALL}'\n"
        f"UNION ALL\nSELECT {columns}, 1 FROM {ROWS} WHERE {where} AND object_state.zoid = ANY(ARRAY({changed}))\n"
        f"UNION ALL\nSELECT {columns}, -1 FROM ({gone}) AS object_state WHERE {where}"
    )
    return head, select, [*head_params, *now, *now, *was]
