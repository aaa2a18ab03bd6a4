"""The same content and queries on stock ZCatalog and on plone.pgcatalog.

Ordered results, lengths and error classes must be identical, as Manager
and as Anonymous.  Where ZCatalog orders ties arbitrarily (by its random
record ids), ties are compared as sets, in order of their sort key.
"""

from datetime import timedelta
from DateTime import DateTime
from helpers import build_content
from helpers import relpaths
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.query import page as page_module
from plone.pgcatalog import rebuild
from plone.pgcatalog import search as search_module
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from plone.pgcatalog.tool import PGCatalogTool
from Products.CMFCore.indexing import processQueue
from Products.CMFPlone.CatalogTool import CatalogTool
from Products.ZCatalog.plan import PriorityMap

from zope.component.hooks import setSite

from unittest import mock

import transaction
import unittest


def queries(site):
    """Queries over every index kind of the core slice, for *site*."""
    root = "/".join(site.getPhysicalPath())
    some = sorted(
        site.portal_catalog.unrestrictedSearchResults(portal_type="Document"), key=lambda b: b.getPath()
    )
    uid = some[0].UID if some else "none"
    uids = [b.UID for b in some[:3]]
    now = DateTime()
    # the second occurrence of a daily event (the same on both sites)
    events = site.portal_catalog.unrestrictedSearchResults(portal_type="Event", sort_on="id")
    daily = next(o for o in (b._unrestrictedGetObject() for b in events) if "DAILY" in (o.recurrence or ""))
    second = DateTime(daily.start + timedelta(days=1))
    return [
        {"portal_type": "Document", "sort_on": "sortable_title"},
        {"portal_type": ["Document", "News Item"], "sort_on": "sortable_title", "sort_order": "reverse"},
        {"portal_type": "Folder", "sort_on": "sortable_title", "sort_order": "descending"},
        {"review_state": "published", "sort_on": "sortable_title"},
        {"review_state": ["private", "pending"], "sort_on": "id"},
        {"Subject": "alpha", "sort_on": "sortable_title"},
        {"Subject": ["alpha", "beta"], "sort_on": "sortable_title"},
        {"Subject": {"query": ["alpha", "beta"], "operator": "and"}, "sort_on": "sortable_title"},
        {"Subject": "Ümlaut", "sort_on": "sortable_title"},
        {"Subject": {"query": ["beta", "gamma"], "range": "min:max"}, "sort_on": "sortable_title"},
        {"Subject": {"query": "b", "range": "min"}, "sort_on": "sortable_title"},
        {"Subject": {"query": ["m", "b"], "range": "max"}, "sort_on": "sortable_title"},
        {"Subject": {"query": "", "range": "max"}, "sort_on": "sortable_title"},
        {"Subject": {"query": "f", "range": "min", "not": "news"}, "sort_on": "sortable_title"},
        # a not alone: every record but the excluded when some record holds
        # an excluded key (here the site, with no state, is one), else every
        # record with a value
        {"review_state": {"not": "private"}, "sort_on": "path"},
        {"review_state": {"not": ["no-such-state", ""]}, "sort_on": "path"},
        {"review_state": {"not": "no-such-state"}, "portal_type": "Document", "sort_on": "path"},
        {"Subject": {"not": "news"}, "sort_on": "path"},
        {"Subject": {"not": "no-such-subject"}, "sort_on": "path"},
        {"start": {"not": second}, "sort_on": "path"},
        {"start": {"not": now + 1000}, "sort_on": "path"},
        # beside a query, a date index's not excludes nothing: UnIndex looks
        # the dates up unconverted
        {"start": {"query": now - 100, "range": "min", "not": second}, "sort_on": "path"},
        {"effective": {"query": now - 100, "range": "min", "not": [now, "2001/01/01"]}, "sort_on": "path"},
        {"Subject": {"query": ["alpha", "beta"], "range": "min:max", "operator": "and"}, "sort_on": "id"},
        {"Subject": {"query": ["n", "o"], "range": "min:max", "operator": "and"}, "sort_on": "id"},
        {"Subject": {"query": [], "range": "min"}},
        {"UID": uid},
        {"UID": uids, "sort_on": "sortable_title"},
        {"is_folderish": True, "sort_on": "sortable_title"},
        # plone.app.querystring turns a row without an index into a None key (trap 31)
        {None: {"query": "x"}, "portal_type": "Document", "sort_on": "sortable_title"},
        {None: None, 1: "x"},
        {"is_folderish": False, "portal_type": "Event", "sort_on": "sortable_title"},
        {"exclude_from_nav": True, "sort_on": "sortable_title"},
        {"path": root, "sort_on": "sortable_title"},
        {"path": {"query": root, "depth": 1}, "sort_on": "getObjPositionInParent"},
        {"path": {"query": root, "depth": 0}},
        {"path": {"query": root, "depth": 2}, "sort_on": "sortable_title"},
        {
            "path": {"query": [root + "/item-000", root + "/item-001"], "depth": -1},
            "sort_on": "sortable_title",
        },
        {"path": root + "/nonexistent"},
        {"path": root, "sort_on": "path", "sort_order": "reverse"},
        {"object_provides": "plone.app.contenttypes.interfaces.IDocument", "sort_on": "sortable_title"},
        {
            "object_provides": {
                "query": [
                    "plone.app.contenttypes.interfaces.IFolder",
                    "plone.app.contenttypes.interfaces.IEvent",
                ]
            },
            "sort_on": "sortable_title",
        },
        {
            "object_provides": {
                "query": [
                    "plone.dexterity.interfaces.IDexterityContainer",
                    "plone.app.contenttypes.interfaces.IFolder",
                ],
                "operator": "and",
            },
            "sort_on": "sortable_title",
        },
        {
            "object_provides": {"not": "plone.app.contenttypes.interfaces.IDocument"},
            "path": root,
            "sort_on": "path",
        },
        {"created": {"query": now - 1, "range": "min"}, "sort_on": "sortable_title"},
        {"created": {"query": [now + 1, now - 1], "range": "min:max"}, "sort_on": "sortable_title"},
        {"modified": {"query": now + 1, "range": "max"}, "sort_on": "sortable_title"},
        {"effective": {"query": now, "range": "min"}, "sort_on": "sortable_title"},
        {"expires": {"query": now, "range": "max"}, "sort_on": "sortable_title"},
        {"sort_on": "sortable_title", "sort_limit": 5, "portal_type": ["Document", "Folder"]},
        {"sort_on": "sortable_title", "b_start": 5, "b_size": 5, "path": root},
        {"sort_on": "sortable_title", "b_start": 500, "b_size": 5, "path": root},
        {"sort_on": "sortable_title", "sort_order": "reverse", "b_start": 0, "b_size": 7, "path": root},
        {
            "sort_on": ["portal_type", "sortable_title"],
            "sort_order": ["descending", "ascending"],
            "path": root,
        },
        {"sort_on": "sortable_title", "sort_limit": 2, "Subject": "alpha"},
        {
            "sort_on": "sortable_title",
            "sort_order": "reverse",
            "b_start": 3,
            "b_size": 4,
            "review_state": "published",
        },
        {"sort_on": "getObjPositionInParent", "b_start": 0, "b_size": 4, "path": {"query": root, "depth": 1}},
        {"sort_on": "path", "sort_limit": 6, "portal_type": "Folder"},
        # pages of one type by date walk the type-led index
        {"portal_type": "Event", "sort_on": "start", "b_start": 0, "b_size": 3},
        {"portal_type": "Event", "sort_on": "start", "sort_order": "reverse", "b_start": 2, "b_size": 2},
        {"portal_type": ["Event"], "sort_on": "end", "sort_order": "reverse", "sort_limit": 2},
        {"portal_type": "Event", "review_state": "published", "sort_on": "start", "b_size": 2},
        # a batch past the middle when most matches have no sort key: ZCatalog
        # counts it from the end of all matches (docs/reference.md)
        {"sort_on": "start", "b_start": 30, "b_size": 5, "path": root},
        {"sort_on": "start", "sort_order": "reverse", "b_start": 24, "b_size": 10, "path": root},
        {"sort_on": "start", "b_start": 38, "b_size": 10, "path": root},
        {"sort_on": "start", "b_start": 20, "sort_limit": 30, "path": root},
        # an unknown sort index fails even when nothing is asked or matches
        {"sort_on": "nonexistent"},
        {"sort_on": "nonexistent", "portal_type": "NoSuchType"},
        {"sort_on": "sortable_title", "b_start": 0, "b_size": 3, "UID": uids},
        {"SearchableText": "river", "sort_on": "sortable_title"},
        {"SearchableText": "riv*", "sort_on": "sortable_title"},
        {"SearchableText": "river AND stone", "sort_on": "sortable_title"},
        {"SearchableText": "river OR stone", "sort_on": "sortable_title"},
        {"SearchableText": "river -stone", "sort_on": "sortable_title"},
        {"SearchableText": '"copper willow"', "sort_on": "sortable_title"},
        {"SearchableText": "", "sort_on": "sortable_title"},
        {"Title": "forest", "sort_on": "sortable_title"},
        {"Description": "meadow lantern", "sort_on": "sortable_title"},
        {"portal_type": None},
        {"no_such_index": "x", "sort_on": "sortable_title"},
        {"sort_on": "sortable_title"},
        {"portal_type": "Document", "sort_on": "no_such_index"},
        {"portal_type": "Document'; DROP TABLE object_state; --"},
        {"SearchableText": "river AND", "sort_on": "sortable_title"},
        {"portal_type": {"query": "Document", "bogus": 1}},
        {"Subject": {"query": "alpha", "operator": "xor"}},
        {"sort_on": "SearchableText", "portal_type": "Document"},
    ]


def path_queries(site):
    """Every form of ExtendedPathIndex query over the content of *site*:
    absolute and relative paths, depths, levels, navigation trees and
    breadcrumbs, several paths with either operator."""
    root = "/".join(site.getPhysicalPath())
    folders = sorted(b.getPath() for b in site.portal_catalog.unrestrictedSearchResults(portal_type="Folder"))
    deep = max(folders, key=lambda p: p.count("/"))
    everything = sorted(b.getPath() for b in site.portal_catalog.unrestrictedSearchResults(path=root))
    deepest = max(everything, key=lambda p: p.count("/"))  # ZCatalog's navtree_start limit
    absolute = [root, folders[0], deep, deep + "/missing/tail", deepest + "/missing", root + "/missing"]
    absolute += ["/", "", deep + "/"]
    relative = [deep.split("/")[-1], "/".join(deep.split("/")[-2:]), "missing"]
    queries = []
    for path in absolute:
        for depth in (-1, 0, 1, 2, 3):
            queries.append({"query": path, "depth": depth})
            for start in range(9):
                queries.append({"query": path, "depth": depth, "navtree": 1, "navtree_start": start})
    for path in relative:
        for level in (-1, 1, 2, 3):
            for depth in (-1, 0, 1, 2):
                queries.append({"query": path, "level": level, "depth": depth})
                if level >= 0:
                    queries.append({"query": path, "level": level, "depth": depth, "navtree": 1})
                    queries.append(
                        {"query": path, "level": level, "depth": depth, "navtree": 1, "navtree_start": 3}
                    )
    queries.append({"query": ["/", 0]})  # a list of paths, not a (path, level) pair
    queries.append({"query": [(relative[0], 2), (relative[0], 3)]})
    queries.append({"query": [(relative[0], 2), root], "depth": 1})
    for operator in ("or", "and"):
        queries.append({"query": [root, deep], "operator": operator})
        queries.append({"query": [folders[0], deep], "depth": 1, "operator": operator})
        queries.append({"query": [deep, root + "/missing"], "navtree": 1, "operator": operator})
    queries.append({"query": root, "depth": "x"})
    return [{"path": q} for q in queries]


def outcome(site, query, unrestricted=False):
    setSite(site)
    catalog = site.portal_catalog
    try:
        results = (catalog.unrestrictedSearchResults if unrestricted else catalog.searchResults)(dict(query))
        paths = relpaths(site, results)
        return ("ok", paths, len(results), results.actual_result_count)
    except Exception as exc:  # compared by class
        transaction.abort()
        return ("error", type(exc).__name__)


class DifferentialTest(unittest.TestCase):
    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.pg = app["plone"]
        self.z = app["zplone"]
        self.assertIsInstance(self.pg.portal_catalog.aq_base, PGCatalogTool)
        self.assertIsInstance(self.z.portal_catalog.aq_base, CatalogTool)
        for site in (self.pg, self.z):
            build_content(site)

    def compare(self, label, unrestricted=False):
        zqueries, pqueries = queries(self.z), queries(self.pg)
        self.assertGreater(len(zqueries), 40)
        self.compare_all(label, zqueries, pqueries, unrestricted)

    def compare_all(self, label, zqueries, pqueries, unrestricted=False):
        self.assertEqual(len(zqueries), len(pqueries))
        for zq, pq in zip(zqueries, pqueries, strict=True):
            expected = outcome(self.z, zq, unrestricted)
            got = outcome(self.pg, pq, unrestricted)
            if expected[0] == "ok" and "sort_on" not in zq and got[0] == "ok":
                # no sort: ZCatalog's order is its random record ids
                expected = (expected[0], sorted(expected[1]), *expected[2:])
                got = (got[0], sorted(got[1]), *got[2:])
            self.assertEqual(expected, got, f"{label}: {zq!r}")

    def test_path_queries(self):
        """ExtendedPathIndex: depth, level, navtree and navtree_start, as
        ZCatalog answers them, including its corner cases."""
        login(self.layer["app"], SITE_OWNER_NAME)
        zqueries, pqueries = path_queries(self.z), path_queries(self.pg)
        self.assertGreater(len(zqueries), 300)
        self.compare_all("path", zqueries, pqueries, unrestricted=True)

    def test_depth_and_keyword_ranges_see_their_own_transaction(self):
        """The subqueries of an ``and`` keyword range (every keyword in the
        range) and of a navigation tree (how deep the catalog goes) read the
        catalog as the transaction sees it, as ZCatalog's indexes do."""
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            folders = site.portal_catalog.unrestrictedSearchResults(portal_type="Folder")
            deep = max(folders, key=lambda b: b.getPath().count("/")).getObject()
            deeper = api.content.create(container=deep, type="Folder", id="deeper", title="Deeper")
            api.content.create(
                container=deeper,
                type="Document",
                id="bottom",
                title="Bottom",
                subject=("nova", "nu", "alpha"),
            )
            processQueue()
        keyword_ranges = [
            {"Subject": {"query": ["n", "o"], "range": "min:max", "operator": "and"}, "sort_on": "id"},
            {"Subject": {"query": ["alpha", "beta"], "range": "min:max", "operator": "and"}, "sort_on": "id"},
            {"Subject": {"query": "nu", "range": "min", "operator": "and"}, "sort_on": "id"},
        ]
        zqueries = keyword_ranges + path_queries(self.z)
        pqueries = keyword_ranges + path_queries(self.pg)
        self.compare_all("in the transaction", zqueries, pqueries, unrestricted=True)

    def test_navtree_at_any_level_is_refused(self):
        """A documented difference: ZCatalog unions a navigation tree at every
        level; this catalog says it does not support that."""
        query = {"path": {"query": "item-000", "level": -1, "navtree": 1}}
        self.assertEqual(outcome(self.z, query, unrestricted=True)[0], "ok")
        self.assertEqual(outcome(self.pg, query, unrestricted=True), ("error", "PathQueryError"))

    def test_keyword_and_range_without_keywords(self):
        """A documented difference: ZCatalog's ``and`` over a keyword range
        that holds no keyword hands on what the indexes applied before it
        found (here ``Creator``, by name order); this catalog finds nothing."""
        query = {
            "Creator": SITE_OWNER_NAME,
            "Subject": {"query": ["h", "m"], "range": "min:max", "operator": "and"},
        }
        PriorityMap.clear()
        found = outcome(self.z, query, unrestricted=True)
        self.assertEqual(found[0], "ok")
        self.assertGreater(found[2], 0)
        self.assertEqual(outcome(self.pg, query, unrestricted=True), ("ok", [], 0, 0))

    def test_navtree_start_below_everything_indexed(self):
        """A documented difference: ExtendedPathIndex keeps the deepest level
        it ever indexed, so after the deepest objects are gone a navigation
        tree starting below every object left is not cut short there: with
        ``depth`` 2 it lists what lies above.  This catalog knows how deep
        the catalog goes now and finds nothing."""
        login(self.layer["app"], SITE_OWNER_NAME)
        found = {}
        for site in (self.pg, self.z):
            setSite(site)
            root = "/".join(site.getPhysicalPath())
            catalog = site.portal_catalog
            folders = [
                b.getPath() for b in catalog.unrestrictedSearchResults(path=root, portal_type="Folder")
            ]
            deepest = max(folders, key=lambda p: p.count("/"))
            deeper = api.content.create(
                container=site.unrestrictedTraverse(deepest), type="Folder", id="deeper"
            )
            api.content.create(container=deeper, type="Folder", id="deepest")
            transaction.commit()
            api.content.delete(obj=deeper)
            transaction.commit()
            # one level below every object left (levels count from the Zope root)
            start = max(b.getPath().count("/") for b in catalog.unrestrictedSearchResults(path=root))
            path = deepest + "/deeper/deepest"
            query = {"path": {"query": path, "navtree": 1, "depth": 2, "navtree_start": start}}
            found[site] = outcome(site, query, unrestricted=True)
        self.assertEqual(found[self.z][0], "ok")
        self.assertGreater(found[self.z][2], 0)
        self.assertEqual(found[self.pg], ("ok", [], 0, 0))

    def test_as_manager(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        self.compare("Manager")

    def test_as_anonymous(self):
        logout()
        self.compare("Anonymous")

    def test_unrestricted(self):
        self.compare("unrestricted", unrestricted=True)

    def test_pages_by_walk_and_by_fallback(self):
        """A sorted page is read off the sort index, or, when the walk finds
        too few matches, by the plain query: both give ZCatalog's page.
        Unbatched searches here select 3 rows at first, so that their later
        windows and counts run too."""
        login(self.layer["app"], SITE_OWNER_NAME)
        for label, walk in (("walk finds all", 10**6), ("walk finds none", 0)):
            with (
                mock.patch.object(page_module, "walk_rows", lambda needed, walk=walk: walk),
                mock.patch.object(search_module, "MIN_ROWS", 3),
            ):
                self.compare(label)

    def test_rebuild(self):
        """clearFindAndRebuild finds what the catalog lost and keeps the rest
        as it was, in the transaction and after the commit (the walk loads
        children in batches: small ones here, so that folders span several)."""
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            catalog = site.portal_catalog
            catalog.uncatalog_object("/".join(site["item-005"].getPhysicalPath()))
            with mock.patch.object(rebuild, "BATCH", 3):
                catalog.clearFindAndRebuild()
        self.compare("rebuilt, in the transaction")
        transaction.commit()
        self.compare("rebuilt, committed")
        for site in (self.pg, self.z):
            setSite(site)
            self.assertEqual(len(site.portal_catalog(id="item-005")), 1)

    def edit_both(self):
        """The same creations, edits, moves, transitions and deletions on
        both sites, in the current transaction."""
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            folder = api.content.create(container=site, type="Folder", id="target", title="Target")
            api.content.create(
                container=folder, type="Document", id="fresh", title="Fresh copper", subject=("new",)
            )
            doc = site["item-002"]
            doc.title = "Renamed river stone"
            doc.reindexObject()
            api.content.move(source=site["item-003"], target=folder)
            api.content.delete(obj=site["item-004"])
            api.content.transition(obj=folder, transition="publish")
            api.content.transition(obj=folder["fresh"], transition="publish")
            # CMFCore's queue finds the catalog of the current site: process
            # it before the other site becomes current
            processQueue()

    def fresh_uids(self):
        return [
            api.content.get(path="/target/fresh").UID() for site in (self.z, self.pg) if setSite(site) is None
        ]

    def compare_finds(self, label, uids):
        for query in (
            {"portal_type": "Folder", "sort_on": "sortable_title"},
            {"SearchableText": "renamed", "sort_on": "sortable_title"},
            {"SearchableText": "copper", "sort_on": "sortable_title"},
            {"Title": "river", "sort_on": "sortable_title"},
            {"path": {"query": "/target", "depth": 1}, "sort_on": "sortable_title"},
            {"path": {"query": "/target"}, "sort_on": "sortable_title"},
            {"review_state": "published", "sort_on": "sortable_title"},
            {
                "review_state": "published",
                "sort_on": "sortable_title",
                "sort_order": "reverse",
                "sort_limit": 3,
            },
            {"path": {"query": "/target"}, "sort_on": "sortable_title", "b_start": 0, "b_size": 1},
            {"Subject": "new"},
            {"id": "item-004"},
            {"id": "item-003"},
            {"UID": "uid"},
        ):
            found = []
            for site, uid in zip((self.z, self.pg), uids, strict=True):
                setSite(site)
                q = dict(query)
                if "path" in q:
                    q["path"] = {**q["path"], "query": "/".join(site.getPhysicalPath()) + q["path"]["query"]}
                if "UID" in q:
                    q["UID"] = uid
                brains = api.content.find(context=site, **q)
                found.append(
                    [
                        (path, brain.Title, brain.review_state)
                        for path, brain in zip(relpaths(site, brains), brains, strict=True)
                    ]
                )
            self.assertEqual(found[0], found[1], f"{label}: {query}")
            self.assertTrue(found[0] or "id" in query or "deletion" in label, query)

    def test_api_find_after_edit_move_and_delete(self):
        self.edit_both()
        transaction.commit()
        self.compare_finds("committed", self.fresh_uids())

    def test_search_sees_its_own_transaction(self):
        """Read-your-writes, as ZCatalog: before the commit, searches see the
        transaction's creations, edits, moves, transitions and deletions."""
        self.edit_both()
        uids = self.fresh_uids()
        self.compare_finds("in the transaction", uids)
        savepoint = transaction.savepoint()
        for site in (self.pg, self.z):
            setSite(site)
            api.content.delete(obj=site["target"]["fresh"])
            processQueue()
        self.compare_finds("after a deletion", uids)
        savepoint.rollback()
        self.compare_finds("after a rollback", uids)
        transaction.commit()
        self.compare_finds("committed", uids)
