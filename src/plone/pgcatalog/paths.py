"""ExtendedPathIndex queries as SQL over the ``path`` columns.

Each catalog row has ``path``, ``parent_path`` and ``path_depth`` (its number
of components).  ExtendedPathIndex answers from per-component maps; here
each of its cases becomes a condition on those columns that gives the same
set (``Products.ExtendedPathIndex.ExtendedPathIndex.search``):

- absolute paths at depth 0 or 1 (an object, a folder's contents, the
  breadcrumbs and navigation trees along a path) are equality tests that
  the B-tree indexes on ``path`` and ``(parent_path, path_depth)`` answer;
- other depths are a prefix range on ``path`` and bounds on ``path_depth``;
- relative paths (``level``) compare components with ``split_part``.

A level is a component's position counted from 0, so an object's own level
is ``path_depth - 1``.  Like ZCatalog the index assumes one root: it drops
the components a query path shares with the catalog's own path and counts
levels from there, which only matters for ``navtree`` with ``depth`` > 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.values import array_literal


__all__ = ["EVERYTHING", "NOTHING", "PathQueryError", "path_condition"]


class PathQueryError(ValueError):
    """A path query this catalog does not support."""


EVERYTHING = "TRUE"
NOTHING = "FALSE"

# ExtendedPathIndex refuses a navtree whose start lies below every indexed
# object (its ``_depth``): true when some object is at least that deep.
_DEEP_ENOUGH = f"EXISTS (SELECT 1 FROM {ROWS} WHERE idx IS NOT NULL AND path_depth > %s)"

# The deepest indexed level, for level < 0 searches of the root itself.
_DEEPEST = f"(SELECT max(path_depth) FROM {ROWS} WHERE idx IS NOT NULL)"


def _level_is(low: int, high: int | None = None) -> tuple[str, list]:
    """Rows whose own level is *low* (up to *high*)."""
    if high is None or high == low:
        return "path_depth = %s", [low + 1]
    return "path_depth BETWEEN %s AND %s", [low + 1, high + 1]


def _at_or_below(path: str) -> tuple[str, list]:
    """The object at absolute *path* and everything below it."""
    if path == "/":
        return EVERYTHING, []
    return "(path = %s OR (path >= %s AND path < %s))", [path, path + "/", path + "0"]


def _components_at(comps: Sequence[str], level: int) -> tuple[str, list]:
    """Rows with *comps* as their components from *level* on."""
    sql = " AND ".join(["split_part(path, '/', %s) = %s"] * len(comps))
    params = []
    for offset, comp in enumerate(comps):
        params.extend([level + offset + 2, comp])  # split_part counts from 1, before the leading '/'
    return sql or EVERYTHING, params


def _and(*parts: tuple[str, list]) -> tuple[str, list]:
    sqls = [sql for sql, _ in parts if sql != EVERYTHING]
    if NOTHING in sqls:
        return NOTHING, []
    if not sqls:
        return EVERYTHING, []
    return "(" + " AND ".join(sqls) + ")", [p for sql, params in parts if sql != EVERYTHING for p in params]


def _or(parts: list[tuple[str, list]]) -> tuple[str, list]:
    parts = [(sql, params) for sql, params in parts if sql != NOTHING]
    if any(sql == EVERYTHING for sql, _ in parts):
        return EVERYTHING, []
    if not parts:
        return NOTHING, []
    return "(" + " OR ".join(sql for sql, _ in parts) + ")", [p for _, params in parts for p in params]


# Levels and depths beyond any path's: all alike, and within SQL's integer
_FAR = 2**30


def _int(value, option: str) -> int:
    # ExtendedPathIndex compares these with integers: anything else is a TypeError
    if not isinstance(value, (int, float)):
        raise TypeError(f"index 'path': {option} {value!r} is not a number")
    return max(-_FAR, min(int(value), _FAR))


def search(
    path,
    level: int,
    depth: int,
    navtree: bool,
    navtree_start: int,
    catalog_path: Sequence[str],
) -> tuple[str, list]:
    """One path of a query: SQL and parameters (or EVERYTHING / NOTHING)."""
    if not isinstance(path, str):
        # ExtendedPathIndex reads the level of a (path, level) pair with int()
        path, level = path[0], max(-_FAR, min(int(path[1]), _FAR))
        if not isinstance(path, str):
            raise TypeError(f"index 'path': {path!r} is not a path")
    comps = [part for part in path.split("/") if part]
    within = comps == list(catalog_path[: len(comps)])  # the catalog's site or above
    if depth < -1 and not navtree and within:
        # ExtendedPathIndex leaves such a search with no set at all: the
        # result is empty, and the union over every level fails on it
        if level < 0:
            raise TypeError("'NoneType' object is not iterable")
        if level == 0:
            return NOTHING, []
    if level < 0:
        return _any_level(comps, depth, navtree)
    if navtree and depth == -1:
        depth = 1  # navtrees do not recurse
    if navtree:
        if navtree_start > level + len(comps) - 1 + depth:
            return NOTHING, []
        deep_enough = (_DEEP_ENOUGH, [navtree_start]) if navtree_start > 0 else (EVERYTHING, [])
    else:
        deep_enough = (EVERYTHING, [])

    if level == 0 and depth in (0, 1):
        if navtree:
            # breadcrumbs (depth 0): the objects along the path; navigation
            # trees (depth 1): the contents of each folder along it
            prefixes = ["/" + "/".join(comps[:i]) for i in range(len(comps), navtree_start - 1, -1)]
            column = "path" if depth == 0 else "parent_path"
            return _and((f"{column} = ANY(%s::text[])", [array_literal(prefixes)]), deep_enough)
        # as the index's own maps: the query's spelling, a leading / added
        key = path if path.startswith("/") else "/" + path
        return ("path = %s", [key]) if depth == 0 else ("parent_path = %s", [key])

    if level > 0:
        return _relative(comps, level, depth, navtree, navtree_start, deep_enough)

    # An absolute path: count the components shared with the catalog's path
    # as ExtendedPathIndex does; the level of the first other one is *shared*.
    shared = 0
    for mine, theirs in zip(catalog_path, comps, strict=False):
        if mine != theirs:
            break
        shared += 1
    if len(comps) == shared and depth == -1:
        return EVERYTHING, []
    full = "/" + "/".join(comps)
    own = len(comps) - 1  # the level of the object the path names
    if not navtree:
        if depth < 0:
            return _at_or_below(full)
        return _and(_at_or_below(full), _level_is(own, own + depth))
    parts = []
    if depth > 0:
        # every object between the start and the first unshared level
        parts.append(_level_is(min(navtree_start, shared), max(navtree_start, shared)))
    # the objects along the path, from navtree_start on
    along = ["/" + "/".join(comps[:k]) for k in range(max(shared, navtree_start) + 1, len(comps) + 1)]
    if along:
        parts.append(("path = ANY(%s::text[])", [array_literal(along)]))
    start = max(own, navtree_start)
    parts.append(_and(_at_or_below(full), _level_is(start, start + depth)))
    return _and(_or(parts), deep_enough)


def _relative(
    comps: list[str], level: int, depth: int, navtree: bool, navtree_start: int, deep_enough
) -> tuple[str, list]:
    """*comps* matched from component *level* on, wherever they lead."""
    if not comps and depth == -1:
        return EVERYTHING, []
    own = level + len(comps) - 1
    matched = _components_at(comps, level)
    if not navtree:
        if depth < 0:
            return matched
        return _and(matched, _level_is(own, own + depth))
    parts = []
    if depth > 0:
        parts.append(_level_is(min(navtree_start, level), max(navtree_start, level)))
    for i in range(len(comps)):
        if level + i >= navtree_start:
            parts.append(_and(_components_at(comps[: i + 1], level), _level_is(level + i)))
    start = max(len(comps) - 1, navtree_start - level) + level
    parts.append(_and(matched, _level_is(start, start + depth)))
    return _and(_or(parts), deep_enough)


def _any_level(comps: list[str], depth: int, navtree: bool) -> tuple[str, list]:
    """``level < 0``: the union of the search at every level."""
    if navtree:
        raise PathQueryError("index 'path': navtree with a negative level is not supported")
    if not comps:
        if depth == 0:
            # each level's search finds the level above it: all but the deepest
            return f"path_depth < {_DEEPEST}", []
        return EVERYTHING, []
    tests = " AND ".join(["split_part(path, '/', l + %s) = %s"] * len(comps))
    params: list = []
    for offset, comp in enumerate(comps):
        params.extend([offset + 2, comp])
    if depth >= 0:
        tests += " AND path_depth BETWEEN l + %s AND l + %s"
        params.extend([len(comps), len(comps) + depth])
    return f"EXISTS (SELECT 1 FROM generate_series(0, path_depth - 1) AS l WHERE {tests})", params


def path_condition(keys: list, options: dict, catalog_path: Sequence[str]) -> tuple[str, list, bool]:
    """``ExtendedPathIndex.query_index``: every key's search, combined by
    the query's operator; and whether the result is narrow (objects along
    the paths or their contents, found by equality on an index)."""
    level = _int(options.get("level", 0), "level")
    depth = _int(options.get("depth", -1), "depth")
    navtree = bool(options.get("navtree", 0))
    # ExtendedPathIndex reads navtree_start only for navigation trees
    navtree_start = _int(options.get("navtree_start", 0), "navtree_start") if navtree else 0
    catalog_path = [part for part in catalog_path if part]
    parts = [search(key, level, depth, navtree, navtree_start, catalog_path) for key in keys]
    sql, params = _and(*parts) if options.get("operator") == "and" else _or(parts)
    narrow = (
        level == 0 and all(isinstance(k, str) for k in keys) and (depth in (0, 1) or navtree and depth == -1)
    )
    return sql, params, narrow
