"""What a ZCatalog query asks, read by ZCatalog's own rules.

The keys of a query dict, each index's ``IndexQuery`` (keys and options),
and ``sort_on`` / ``sort_order``: read here once, so that the clause
builders (:mod:`.kinds`) and the page (:mod:`.page`) see validated values
and the errors are the ones ZCatalog gives.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from plone.pgcatalog import registry as r
from Products.ZCatalog.ZCatalog import CatalogError
from ZPublisher.HTTPRequest import record


__all__ = ["RELEVANCE", "IndexQuery", "canonical", "index_query", "merge_query", "sort_names", "sort_spec"]

RELEVANCE = "relevance"
"""The ``sort_on`` of the order by relevance, which ZCatalog gives a text
query without ``sort_on`` and has no name for (Volto's search block asks
for it by name).  An index called so keeps its meaning."""


@dataclass
class IndexQuery:
    """ZCatalog's ``IndexQuery``: keys plus validated options for one index."""

    keys: list
    options: dict = field(default_factory=dict)

    def get(self, name, default=None):
        return self.options.get(name, default)


def merge_query(query: Any = None, **kw) -> dict:
    """``Catalog.merge_query_args``: a new dict; a non-dict first argument
    (such as a REQUEST) is ignored, keywords win."""
    merged = {}
    if isinstance(query, (dict, record)) or (isinstance(query, Mapping) and not hasattr(query, "form")):
        merged.update(query)
    merged.update(kw)
    return merged


def canonical(query: dict) -> dict:
    """*query* as ``Catalog.make_query`` canonicalises it: every list or
    tuple value sorted (a ``TypeError`` if its items cannot be ordered:
    ``None`` or an interface among names, names among numbers)."""
    return {key: sorted(v) if isinstance(v, (list, tuple)) else v for key, v in query.items()}


def index_query(query: dict, index: r.IndexDef) -> IndexQuery:
    """Parse one index's part of *query* (which names it) as ZCatalog's
    ``IndexQuery`` does."""
    name = index.name
    param = query[name]
    options = {}
    if isinstance(param, (dict, record)):
        value = param.get("query", ())
        keys = list(value) if isinstance(value, (tuple, list)) else [value]
        for option in param.keys():
            if option == "query":
                continue
            options[option] = param[option]
    else:
        keys = list(param) if isinstance(param, (tuple, list)) else [param]
        prefix = name + "_"
        for key in query:
            if isinstance(key, str) and key.startswith(prefix):
                options[key[len(prefix) :]] = query[key]
    for option in options:
        if option not in index.query_options:
            raise ValueError(f"index {name!r}: option {option!r} is not valid")
    operator = options.get("operator", "or")
    if not isinstance(operator, str) or operator.lower() not in ("or", "and"):
        raise ValueError(f"index {name!r}: operator {operator!r} is not valid")
    options["operator"] = operator.lower()
    not_value = options.get("not")
    if not_value is not None and not isinstance(not_value, (tuple, list)):
        options["not"] = [not_value]
    return IndexQuery(keys, options)


def criterion_keys(query: dict, index: r.IndexDef) -> tuple[str, ...]:
    """The keys of *query* that are *index*'s criterion: its name and its
    flat options (``Subject_operator``)."""
    prefix = index.name + "_"
    return tuple(
        key
        for key in query
        if key == index.name or (key.startswith(prefix) and key[len(prefix) :] in index.query_options)
    )


def sort_spec(query: dict, indexes: Mapping[str, r.IndexDef]) -> list[tuple[r.IndexDef, bool]]:
    """``sort_on`` / ``sort_order`` as (index, descending) pairs.

    Unknown and unsortable names raise ``CatalogError`` as ZCatalog does;
    :data:`RELEVANCE` gives no keys (the order without ``sort_on``);
    ``reverse`` or ``descending`` (any case) mean descending, anything else
    ascending; a single order applies to every key.
    """
    if _sort_attr(query, "on") is None:
        return []
    names = sort_names(query)
    if RELEVANCE in names and RELEVANCE not in indexes:
        if len(names) > 1:
            raise CatalogError(f"sort_on {RELEVANCE!r} orders alone, not with other keys: {names!r}")
        return []  # sort_order too is left aside, as without sort_on
    chosen = []
    for name in names:
        index = indexes.get(name) if isinstance(name, str) else None
        if index is None:
            raise CatalogError(f"Unknown sort_on index: {name!r}")
        if not index.sortable:
            raise CatalogError(
                f"The index chosen for sort_on is not capable of being used as a sort index: {name!r}"
            )
        chosen.append(index)
    orders = _sort_attr(query, "order")
    if orders is None:
        orders = [""]
    elif isinstance(orders, str):
        orders = [orders]
    elif not isinstance(orders, Iterable):
        raise TypeError(f"sort_order must be text or a list of it, not {orders!r}")
    # ZCatalog walks any iterable (a dict's keys) and fails on what is not text
    orders = list(orders)
    if not all(isinstance(o, str) for o in orders):
        raise AttributeError(f"sort_order must be text or a list of it, not {orders!r}")
    reverse = [o.lower() in ("reverse", "descending") for o in orders]
    if len(chosen) == 1 and len(reverse) > 1:
        # ZCatalog hands the list itself to its sort of one key, which
        # takes it for true (docs/reference.md)
        return [(chosen[0], True)]
    result = []
    for i, index in enumerate(chosen):
        if len(reverse) == 1:
            descending = reverse[0]
        elif i < len(reverse):
            descending = reverse[i]
        else:
            descending = False
        result.append((index, descending))
    return result


def sort_names(query: dict) -> list:
    """The names ``sort_on`` (or ``sort-on``) gives, as a list, unchecked."""
    names = _sort_attr(query, "on")
    if names is None:
        return []
    return list(names) if isinstance(names, (list, tuple)) else [names]


def _sort_attr(query: dict, attr: str):
    value = query.get(f"sort-{attr}")
    if value is None:
        value = query.get(f"sort_{attr}")
    return value
