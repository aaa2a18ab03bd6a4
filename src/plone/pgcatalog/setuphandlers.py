"""GenericSetup install: swap ZCatalog for the PostgreSQL tool.

Every index and metadata definition of the old catalog is carried over
(add-on indexes included), the ZCTextIndex lexicons' pipelines are kept
without their vocabularies, the schema is built and the existing content is
cataloged again.  The columns, tables and functions come first, in the
install's own transaction (``connection.change_schema``): everything after
reads them.  The SQL indexes are built by the commit.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from plone.pgcatalog import registry as r
from plone.pgcatalog import rebuild
from plone.pgcatalog.connection import change_schema
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.database import cataloged_rows
from plone.pgcatalog.database import site_path
from plone.pgcatalog.lexicon import Lexicon
from plone.pgcatalog.lexicon import META_TYPE as LEXICON_META_TYPE
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.row import column_ddl
from plone.pgcatalog.row import fill_typed_sql
from plone.pgcatalog.schema import drop_index_ddl
from plone.pgcatalog.schema import HAS_CATALOG_COLUMNS
from plone.pgcatalog.schema import HOT_KEYS_INDEX
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.schema import RECORD_SCHEMA_VERSION
from plone.pgcatalog.schema import SCHEMA_VERSION
from plone.pgcatalog.schema import schema_sql
from plone.pgcatalog.privileges import require_schema_owner
from plone.pgcatalog.processor import ensure_processor
from plone.pgcatalog.relevance import compact_word_counts_sql
from plone.pgcatalog.tool import PGCatalogTool
from plone.pgcatalog.toolset import register_required_tool
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import getToolByName
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from zope.component import getSiteManager

import logging
import transaction


logger = logging.getLogger("plone.pgcatalog")


class InstallError(RuntimeError):
    """The site cannot run plone.pgcatalog as it is."""


def upgrade_lexicons(tool: PGCatalogTool) -> int:
    """Replace the ``PLexicon`` objects an older release kept in the tool
    by lexicons stored within it; returns how many were replaced."""
    old = [obj for obj in tool.objectValues() if isinstance(aq_base(obj), PLexicon)]
    for lexicon in old:
        tool._delObject(lexicon.getId(), suppress_events=True)
        tool._setObject(lexicon.getId(), Lexicon.like(lexicon), suppress_events=True)
    return len(old)


def _own_schema(context: Any, instance: Any) -> None:
    """The catalog's columns, tables and functions, before anything reads
    them, and its processor on the storage *instance* (a Zope started
    before they were there has none) to write the rows at commit."""
    change_schema(context, schema_sql())
    ensure_processor(instance)


def upgrade(tool: PGCatalogTool) -> PGCatalogTool:
    """Bring an installed catalog up to this release: its lexicons within
    the tool, any SQL index this release adds, its rows' word counts, and
    the schema version recorded in the database (at commit)."""
    require_schema_owner(tool, "Upgrading plone.pgcatalog")
    _own_schema(tool, storage_instance(tool))
    if upgrade_lexicons(tool):
        logger.info("plone.pgcatalog: lexicons now stored within portal_catalog")
    pending = changes_for(tool)
    if RECORD_SCHEMA_VERSION in pending.ddl:
        return tool  # an earlier step of this upgrade queued it all
    if not tool._pgc_typed:
        # the hot keys' typed columns, filled from idx in the commit, are
        # what searches read from then on; their expression indexes go
        pending.ddl.extend([f"ALTER TABLE object_state\n{column_ddl()}", HOT_KEYS_INDEX, fill_typed_sql()])
        untyped = r.index_defs(tool)
        tool._pgc_typed = True
        for name, index in r.index_defs(tool).items():
            pending.ddl.extend(drop_index_ddl(untyped[name], keep=index))
    defs = r.index_defs(tool).values()
    for index in defs:
        pending.ddl.extend(index_ddl(index))
    # word frequencies the tsvectors tell go from the rows (schema version 5)
    pending.ddl.append(compact_word_counts_sql(index for index in defs if index.kind == r.TEXT))
    pending.ddl.append(RECORD_SCHEMA_VERSION)
    return tool


def upgrade_step(setup_tool: Any) -> None:
    """GenericSetup upgrade step of ``plone.pgcatalog:default`` (the
    Add-ons panel's "Upgrade"): :func:`upgrade` the site's catalog, and
    catalog its content again where the database had lost the rows."""
    site = getToolByName(setup_tool, "portal_url").getPortalObject()
    tool = getattr(aq_base(site), "portal_catalog", None)
    if not isinstance(tool, PGCatalogTool):
        raise InstallError("plone.pgcatalog is not installed in this site: nothing to upgrade")
    replace_catalog(site)
    logger.info("plone.pgcatalog: upgraded to schema version %d", SCHEMA_VERSION)


def upgrade_to_8(setup_tool: Any) -> None:
    """Upgrade to schema version 8, with the sort order by relevance in the
    registry and the browser layer of the search page (``profiles/default``)."""
    upgrade_step(setup_tool)
    for step in ("plone.app.registry", "browserlayer"):
        setup_tool.runImportStepFromProfile("profile-plone.pgcatalog:default", step, run_dependencies=False)


def replace_catalog(site: Any) -> PGCatalogTool:
    """Install the PostgreSQL catalog in *site* and catalog its content.

    A site of more than :data:`~plone.pgcatalog.rebuild.COMMIT_EVERY`
    items is cataloged in batches, each committed (the tool, the schema and
    the still empty SQL indexes first); an install that was interrupted
    goes on where it stopped when the profile is imported again."""
    old = getattr(aq_base(site), "portal_catalog", None)
    if isinstance(old, PGCatalogTool):
        if not fetch(old, HAS_CATALOG_COLUMNS, [])[0][0]:
            # the database lost the catalog's columns (restored without
            # them, dropped): upgrade makes them, the content comes again
            logger.warning("plone.pgcatalog: the catalog's columns were missing; cataloging the site again")
            old._pgc_complete, old._pgc_expected = False, None
        tool = upgrade(site.portal_catalog)
        if not tool._pgc_complete:
            done = dict(cataloged_rows(tool, "zoid"))
            logger.info("plone.pgcatalog: resuming the install, %d items cataloged before", len(done))
            _fill(site, tool, tool._pgc_expected, done)
        return tool
    instance = storage_instance(site)
    if instance is None:
        raise InstallError(
            "plone.pgcatalog needs the site's ZODB on zodb-pgjsonb (PGJsonbStorage); "
            f"this site is stored in {type(getattr(site._p_jar, '_storage', None)).__name__}"
        )
    require_schema_owner(site, "Installing plone.pgcatalog")
    _own_schema(site, instance)
    old = site.portal_catalog
    defs, unserved = [], {}
    for name in old.indexes():
        index = old._catalog.getIndex(name)
        found = r.index_def_from_zcatalog(index)
        if found is None:
            getter = getattr(index, "getIndexSourceNames", None)
            unserved[name] = (index.meta_type, tuple(getter()) if getter is not None else ())
        else:
            defs.append(found)
    if unserved:
        logger.error(
            "plone.pgcatalog has no SQL for these indexes; queries on them raise UnservedIndex "
            "(delete them, or add them again once an IIndexKind utility serves their kind): %s",
            ", ".join(f"{name} ({kind})" for name, (kind, _) in unserved.items()),
        )
    lexicons = [
        Lexicon.like(obj)
        for obj in old.objectValues()
        if getattr(obj, "meta_type", None) == LEXICON_META_TYPE
    ]
    columns = tuple(old.schema())

    tool = PGCatalogTool()
    tool._pgc_typed = True
    r.set_index_defs(tool, defs)
    r.set_metadata_columns(tool, columns)
    r.set_unserved(tool, unserved)
    site._delObject("portal_catalog", suppress_events=True)
    site._setObject("portal_catalog", tool, suppress_events=True)
    tool = site.portal_catalog
    for lexicon in lexicons:
        tool._setObject(lexicon.getId(), lexicon, suppress_events=True)
    getSiteManager(site).registerUtility(aq_base(tool), ICatalogTool)
    register_required_tool(site.portal_setup)

    pending = changes_for(tool)
    for index in r.index_defs(tool).values():
        pending.ddl.extend(index_ddl(index))
    pending.ddl.append(RECORD_SCHEMA_VERSION)
    expected = len(old)
    if expected <= rebuild.COMMIT_EVERY:
        tool.clearFindAndRebuild()  # all in the install's transaction
    else:
        # the swap, the schema and the SQL indexes (partial, so built at
        # once while this site has no rows), then the content in batches
        tool._pgc_complete, tool._pgc_expected = False, expected
        pending.clear(site_path(tool))
        transaction.commit()
        _fill(site, tool, expected, {})
    logger.info("plone.pgcatalog installed: %d indexes, %d columns", len(defs), len(columns))
    return tool


def _fill(site: Any, tool: PGCatalogTool, expected: int | None, done: dict[int, str]) -> None:
    """Catalog the site's content in committed batches, then mark the
    install complete."""
    rebuild.catalog_in_batches(tool, site, done, expected)
    tool._pgc_complete = True
    transaction.commit()


def import_catalog(context: Any) -> None:
    """The ``plone.pgcatalog`` import step."""
    if context.readDataFile("plone.pgcatalog.txt") is None:
        return
    replace_catalog(context.getSite())


__all__ = ["InstallError", "import_catalog", "replace_catalog", "upgrade", "upgrade_lexicons", "upgrade_step"]
