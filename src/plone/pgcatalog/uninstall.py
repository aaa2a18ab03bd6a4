"""Uninstall: a stock ZCatalog back in the site, rebuilt, and the catalog's
SQL gone from the database.

:func:`restore_zcatalog` puts CMFPlone's ``CatalogTool`` back with the
indexes, lexicons and metadata columns the registry holds (add-on indexes
included, each with its settings), catalogs the site's content in it, and
clears this site's catalog rows.  Once that has committed, the catalog
columns, SQL indexes, functions and tables are dropped from
``object_state``'s database (:func:`drop_catalog_schema`), unless another
site there still keeps its catalog in them; the storage's own columns stay.
"""

from __future__ import annotations

from Acquisition import aq_base
from plone.pgcatalog import registry as r
from plone.pgcatalog import rebuild
from plone.pgcatalog import row
from plone.pgcatalog.connection import change_schema
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.lexicon import lexicons
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.processor import retire_processor
from plone.pgcatalog.privileges import require_schema_owner
from plone.pgcatalog.schema import HAS_CATALOG_COLUMNS
from plone.pgcatalog.schema import CHANGE_TRIGGERS
from plone.pgcatalog.schema import LEXICON_TRIGGERS
from plone.pgcatalog.schema import WORD_TRIGGERS
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import getToolByName
from Products.CMFPlone.CatalogTool import CatalogTool
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from collections.abc import Callable
from Products.ZCatalog.ZCatalog import CatalogError
from typing import Any
from zope.component import getSiteManager

import logging
import psycopg
import transaction


__all__ = ["drop_catalog_schema", "restore_zcatalog", "uninstall", "zcatalog_extra"]

logger = logging.getLogger("plone.pgcatalog")

STOCK_TOOL_CLASS = "Products.CMFPlone.CatalogTool.CatalogTool"


class Extra:
    """ZCatalog's ``extra`` record for ``addIndex``."""

    def __init__(self, **settings: Any) -> None:
        self.__dict__.update(settings)


def zcatalog_extra(index: r.IndexDef) -> Extra | None:
    """The ``extra`` that makes ZCatalog's ``addIndex`` build *index* as
    it was before the install (the inverse of ``index_def_from_zcatalog``)."""
    options = index.options
    if index.kind == r.DATE_RANGE:
        return Extra(
            since_field=options.get("since_field"),
            until_field=options.get("until_field"),
            precision_value=options.get("precision") or None,
        )
    if index.kind == r.DATE_RECURRING:
        return Extra(recurdef=options.get("recurdef"), until=options.get("until"))
    if index.kind == r.TEXT:
        return Extra(
            doc_attr=",".join(index.source_names),
            lexicon_id=options.get("lexicon_id"),
            index_type=options.get("index_type") or "Okapi BM25 Rank",
        )
    if index.kind in (r.FIELD, r.KEYWORD, r.UUID, r.BOOLEAN) and index.attrs:
        return Extra(indexed_attrs=list(index.attrs))
    return None


def restore_zcatalog(site: Any) -> CatalogTool:
    """Replace the site's PostgreSQL catalog by a stock ZCatalog holding
    the same definitions, and catalog the site's content in it."""
    old = site.portal_catalog
    if not IPGCatalogTool.providedBy(aq_base(old)):
        raise ValueError("the site's portal_catalog is not plone.pgcatalog's: nothing to uninstall")
    defs, columns, lexica = r.index_defs(old), r.metadata_columns(old), lexicons(old)
    site_path = "/".join(site.getPhysicalPath())
    changes_for(old).clear(site_path)  # this site's rows go (other sites' stay)

    stock = CatalogTool()
    site._delObject("portal_catalog", suppress_events=True)
    site._setObject("portal_catalog", stock, suppress_events=True)
    stock = site.portal_catalog
    for lexicon in lexica.values():
        stock._setObject(lexicon.getId(), PLexicon(lexicon.getId(), lexicon.title, *lexicon._pipeline))
    skipped = []
    for index in defs.values():
        if index.custom:
            skipped.append(f"{index.name} ({index.kind})")
            continue
        stock.addIndex(index.name, index.kind, zcatalog_extra(index))
        if index.kind == r.DATE:
            made = stock._catalog.getIndex(index.name)
            made.index_naive_time_as_local = bool(index.options.get("naive_as_local", True))
            made.precision = int(index.options.get("precision", 0))
    for name, (kind, attrs) in r.unserved(old).items():
        try:  # as it was before the install
            stock.addIndex(name, kind, Extra(indexed_attrs=list(attrs)) if attrs else None)
        except Exception:
            skipped.append(f"{name} ({kind})")
    if skipped:
        logger.error(
            "plone.pgcatalog uninstall: no ZCatalog index for these add-on kinds: %s", ", ".join(skipped)
        )
    for name in columns:
        stock.addColumn(name)
    getSiteManager(site).registerUtility(aq_base(stock), ICatalogTool)
    site.portal_setup.getToolsetRegistry().addRequiredTool("portal_catalog", STOCK_TOOL_CLASS)
    site.portal_setup._p_changed = True
    jar = getattr(aq_base(site), "_p_jar", None)
    if jar is not None and aq_base(stock)._p_jar is None:
        # ZCatalog collects the cache through its own jar after every
        # 10,000 items it catalogs (maintain_zodb_cache): a new tool has
        # none until the commit, and a larger site would fail here
        jar.add(aq_base(stock))
    _fill_zcatalog(site, stock)
    logger.info(
        "plone.pgcatalog uninstalled: ZCatalog back with %d indexes, rebuilt: %d items", len(defs), len(stock)
    )
    return stock


def _fill_zcatalog(site: Any, stock: CatalogTool) -> None:
    """Catalog the content of *site* in the empty ZCatalog *stock*: the
    items CMFPlone's ``clearFindAndRebuild`` catalogs, in its order, but
    each at once instead of queued for the commit.  Queued, ZCatalog's
    work on all of them came after the last object load, and on a large
    site the storage's connection sat idle in its transaction for more
    than a minute, which zodb-pgjsonb's sessions do not survive (a site
    of 30,000 items failed to uninstall)."""
    tool = aq_base(stock)
    for path, item in rebuild.content(site):
        if aq_base(item) is not tool:
            stock.catalog_object(item, path)


_LEFT = "SELECT EXISTS (SELECT 1 FROM object_state WHERE idx IS NOT NULL)"

_OBJECTS = """
SELECT 'INDEX ' || quote_ident(indexname) FROM pg_indexes
 WHERE schemaname = current_schema() AND tablename = 'object_state' AND starts_with(indexname, 'pgcatalog_')
UNION ALL
SELECT 'STATISTICS ' || quote_ident(stxname) FROM pg_statistic_ext
 WHERE stxrelid = 'object_state'::regclass AND starts_with(stxname, 'pgcatalog_')
"""


def _droppable(read: Callable[[str], list[tuple]]) -> list[str] | None:
    """The catalog's SQL indexes and statistics, read by *read*; None
    where nothing is to be dropped: the columns are gone already, or a
    site still keeps catalog rows in them."""
    if not read(HAS_CATALOG_COLUMNS)[0][0]:
        return None  # no table, or dropped before
    if read(_LEFT)[0][0]:
        logger.info("plone.pgcatalog: other sites keep their catalog in this database: its columns stay")
        return None
    return [what for (what,) in read(_OBJECTS)]


def _drop_sql(objects: list[str]) -> str:
    """DDL that drops *objects*, the word triggers, the catalog's columns,
    functions and tables."""
    columns = ", ".join(f"DROP COLUMN IF EXISTS {name}" for name in row.column_names())
    return ";\n".join(
        [
            *(f"DROP {what}" for what in objects),
            *(
                f"DROP TRIGGER IF EXISTS {trigger} ON object_state"
                for trigger in (*WORD_TRIGGERS, *LEXICON_TRIGGERS, *CHANGE_TRIGGERS)
            ),
            f"ALTER TABLE object_state {columns}",
            "DROP FUNCTION IF EXISTS pgcatalog_count_words(), pgcatalog_fold_words(), pgcatalog_add_words(), "
            "pgcatalog_note_changes(), pgcatalog_stamp_noted(), pgcatalog_stamp(), "
            "pgcatalog_okapi(float8, float8, float8, float8), pgcatalog_frequency(tsvector, text), "
            "pgcatalog_occurrences(tsvector, text, tsquery), pgcatalog_cells(tsvector, jsonb)",
            "DROP TABLE IF EXISTS pgcatalog_counter, pgcatalog_text_stats, pgcatalog_words, pgcatalog_schema, "
            "pgcatalog_changes, pgcatalog_commits, pgcatalog_shared",
        ]
    )


def drop_catalog_schema(dsn: str, lock_timeout: str = "10s") -> bool:
    """Drop the catalog's columns, SQL indexes, statistics, triggers,
    functions and tables, unless a site still keeps catalog rows there.
    Returns whether it dropped them.  Runs on a connection of its own
    (by hand, after an uninstall could not): dropping columns waits for
    the transactions that read the table, for at most *lock_timeout*."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        objects = _droppable(lambda sql: conn.execute(sql).fetchall())
        if objects is None:
            return False
        with conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = '{lock_timeout}'")
            conn.execute(_drop_sql(objects))
    logger.info("plone.pgcatalog: catalog columns, indexes and tables dropped")
    return True


def uninstall(setup_tool: Any) -> None:
    """The ``plone.pgcatalog:uninstall`` profile's post handler (the Add-ons
    panel's "Uninstall"), called with ``portal_setup``."""
    site = getToolByName(setup_tool, "portal_url").getPortalObject()
    if not IPGCatalogTool.providedBy(aq_base(getattr(aq_base(site), "portal_catalog", None))):
        return
    require_schema_owner(site, "Uninstalling plone.pgcatalog")  # it drops columns
    instance = storage_instance(site)
    restore_zcatalog(site)

    def after_commit(committed: bool) -> None:
        # the request's ZODB connection has begun its next snapshot: the
        # drop runs in it (a connection of its own would wait for it)
        if not committed:
            return
        try:
            objects = _droppable(lambda sql: fetch(site, sql, []))
            if objects is None:
                return
            change_schema(site, _drop_sql(objects))
        except psycopg.errors.InsufficientPrivilege:
            logger.exception(
                "plone.pgcatalog: the catalog's columns could not be dropped: only the tables' owner may; "
                "run plone.pgcatalog.uninstall.drop_catalog_schema(dsn) with the owner's DSN"
            )
        except (psycopg.Error, CatalogError):
            logger.exception(
                "plone.pgcatalog: the catalog's columns could not be dropped now (tables busy?); "
                "run plone.pgcatalog.uninstall.drop_catalog_schema(dsn) when the site is idle"
            )
        else:
            logger.info("plone.pgcatalog: catalog columns, indexes and tables dropped")
            if instance is not None:
                retire_processor(instance)

    transaction.get().addAfterCommitHook(after_commit)
