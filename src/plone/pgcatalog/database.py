"""Catalog reads: SQL over the catalog rows as this transaction sees them.

Every read of catalog rows, by a search, an index view, the undo repair or
the ZCatalog API, goes through :func:`read`.  Its statement names the rows
:data:`~plone.pgcatalog.schema.ROWS`; they are the committed rows, with
this transaction's pending changes laid over them (see
:mod:`~plone.pgcatalog.overlay`), and with the positions of folders
reordered in this transaction brought up to date first (see
:mod:`~plone.pgcatalog.positions`).  *context* is the catalog tool: its
storage serves the read (:func:`~plone.pgcatalog.connection.fetch`).
"""

from __future__ import annotations

from typing import Any
from zope.component.hooks import getSite

import time

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from collections.abc import Iterator
from collections.abc import Sequence
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.overlay import catalog_sql
from plone.pgcatalog.overlay import pending_metadata
from plone.pgcatalog.overlay import pending_texts
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.positions import refresh_positions
from plone.pgcatalog.report import note_statement
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.values import array_literal


__all__ = ["cataloged_rows", "load_metadata", "load_texts", "read", "select", "site_path"]


def read(context: Any, sql: str, params: list, site: str | None = None, **options) -> list[tuple]:
    """Rows of *sql*, which reads the catalog rows as ``ROWS`` (of the site
    at path *site*: by default, :func:`site_path` of *context*); *options*
    as for :func:`~plone.pgcatalog.connection.fetch`."""
    pending = get_pending()
    if pending is not None and pending.reordered:
        refresh_positions(context)  # folders reordered since: positions first
    sql, head = catalog_sql(sql, pending, site_path(context) if site is None else site)
    started = time.perf_counter()
    rows = fetch(context, sql, [*head, *params], **options)
    note_statement(sql, [*head, *params], time.perf_counter() - started)
    return rows


def site_path(catalog: Any, catalog_path: Sequence[str] | None = None) -> str:
    """The path of the site *catalog* (at *catalog_path*, if known) serves:
    its rows are those at and below it (other sites may share the
    database).  A catalog without acquisition context
    (``getUtility(ICatalogTool)``) is found from the current site up."""
    site = aq_parent(aq_inner(catalog))
    if site is not None and catalog_path is not None:
        return "/".join(catalog_path[:-1])  # the site holds it
    if site is None:
        tool = aq_base(catalog)
        site = getSite()
        while site is not None and aq_base(getattr(aq_base(site), "portal_catalog", None)) is not tool:
            site = aq_parent(aq_inner(site))
    return "" if site is None else "/".join(site.getPhysicalPath())


def select(context: Any, columns: str, where: str, params: list) -> list[tuple]:
    """``SELECT columns FROM <catalog rows> WHERE where`` (see :func:`read`)."""
    return read(context, f"SELECT {columns} FROM {ROWS} WHERE {where}", params)


def cataloged_rows(context: Any, order: str = "path", batch: int = 1000) -> Iterator[tuple[int, str]]:
    """``(zoid, path)`` of every catalog row in *order* (``"path"`` or
    ``"zoid"``), read a batch at a time."""
    column = {"path": "path", "zoid": "zoid"}[order]
    after = None
    while True:
        where = CATALOGED if after is None else f"{CATALOGED} AND {column} > %s"
        rows = select(
            context,
            "zoid, path",
            f"{where} ORDER BY {column} LIMIT {int(batch)}",
            [] if after is None else [after],
        )
        yield from rows
        if len(rows) < batch:
            return
        after = rows[-1][1 if column == "path" else 0]


def load_texts(context: Any, zoids: list[int]) -> dict:
    """``{zoid: indexed text}`` (see :mod:`~plone.pgcatalog.snippets`), this
    transaction's pending text where it has one."""
    rows = fetch(
        context,
        "SELECT zoid, indexed_text FROM object_state WHERE zoid = ANY(%s::bigint[])",
        [array_literal(zoids)],
        guarded=False,
    )
    found = dict(rows)
    found.update(pending_texts(get_pending(), zoids))
    return found


def load_metadata(context: Any, zoids: list[int]) -> dict:
    """``{zoid: metadata}``: as stored, JSON text (a brain parses its own
    when first touched), or this transaction's pending dict."""
    rows = fetch(
        context,
        "SELECT zoid, meta FROM object_state WHERE zoid = ANY(%s::bigint[])",
        [array_literal(zoids)],
        guarded=False,
    )
    found = {zoid: meta for zoid, meta in rows if meta is not None}
    found.update(pending_metadata(get_pending(), zoids))
    return found
