"""Folder order against ZCatalog: ``getObjPositionInParent`` after moves.

ZCatalog's GopipIndex asks the containers for positions when it sorts, so
every reorder shows at once.  Each step below reorders folders on both
sites the same way (what folder contents' drag and drop, "move to top"
and "sort by" call) and compares sorted searches before and after the
commit, within one folder and across folders.
"""

from helpers import BothSitesTestCase
from itertools import groupby
from plone import api
from plone.app.testing import login
from plone.app.testing import SITE_OWNER_NAME
from zope.component.hooks import setSite

import transaction


def folder_order(site, folder):
    """The folder's contents sorted on their position, as ids."""
    catalog = site.portal_catalog
    path = "/".join(folder.getPhysicalPath())
    brains = catalog.unrestrictedSearchResults(
        path={"query": path, "depth": 1}, sort_on="getObjPositionInParent"
    )
    return [brain.getPath().rsplit("/", 1)[1] for brain in brains]


def position(obj):
    """Where *obj* stands in its container (0 where it has no order)."""
    container = obj.aq_parent
    if getattr(container, "getObjectPosition", None) is None:
        return 0
    return container.getObjectPosition(obj.getId())


def site_order(site):
    """Everything sorted on position: ids grouped by position (ZCatalog
    orders equal positions by its random record ids), with the reverse."""
    catalog = site.portal_catalog
    root = "/".join(site.getPhysicalPath())
    groups = []
    for reverse in ("", "reverse"):
        brains = catalog.unrestrictedSearchResults(
            path=root, sort_on="getObjPositionInParent", sort_order=reverse
        )
        positions = [(position(brain.getObject()), brain.getPath()) for brain in brains]
        groups.append(
            [
                (position, sorted(p[len(root) :] for _, p in group))
                for position, group in groupby(positions, key=lambda x: x[0])
            ]
        )
    return groups


class FolderOrderTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.built_sites():
            folder = api.content.create(container=site, type="Folder", id="ordered", title="Ordered")
            for i in range(8):
                api.content.create(container=folder, type="Document", id=f"doc-{i}", title=f"Page {7 - i}")
            transaction.commit()

    def each(self, step):
        """Run *step(site, folder)* on both sites; compare the orders in the
        same transaction and after the commit."""
        seen = []
        for site in self.sites:
            setSite(site)
            folder = site["ordered"]
            step(site, folder)
            seen.append((folder_order(site, folder), list(folder.objectIds()), site_order(site)))
        self.assertEqual(seen[0], seen[1])
        self.assertEqual(seen[0][0], seen[0][1])  # the catalog follows the folder
        transaction.commit()
        for site, before in zip(self.sites, seen, strict=True):
            setSite(site)
            self.assertEqual(folder_order(site, site["ordered"]), before[0])
        return seen[0][0]

    def test_moves(self):
        self.assertEqual(self.each(lambda site, folder: None), [f"doc-{i}" for i in range(8)])
        self.assertEqual(self.each(lambda site, folder: folder.moveObjectsToTop(["doc-5"]))[0], "doc-5")
        self.each(lambda site, folder: folder.moveObjectsUp(["doc-3"]))
        self.each(lambda site, folder: folder.moveObjectsDown(["doc-0"], 2))
        self.each(lambda site, folder: folder.moveObjectsByDelta(["doc-1", "doc-6"], -3))
        self.each(lambda site, folder: folder.moveObjectToPosition("doc-7", 2))
        self.assertEqual(self.each(lambda site, folder: folder.moveObjectsToBottom(["doc-5"]))[-1], "doc-5")
        # folder contents' drag and drop: the ordering adapter, with the shown subset
        self.each(
            lambda site, folder: folder.getOrdering().moveObjectsByDelta(["doc-2"], -1, ["doc-4", "doc-2"])
        )

    def test_order_objects(self):
        """``orderObjects`` (folder contents' "sort by") sends no event."""
        titles = self.each(lambda site, folder: folder.orderObjects("title"))
        self.assertEqual(titles, [f"doc-{i}" for i in reversed(range(8))])
        self.each(lambda site, folder: folder.orderObjects(reverse=True))

    def test_site_root_and_removal(self):
        """The site root orders its items too; removing an item moves the
        ones after it up, which sorts across folders by the new numbers."""
        self.each(lambda site, folder: site.moveObjectsToTop(["ordered"]))
        self.each(lambda site, folder: api.content.delete(obj=folder["doc-2"]))
        self.each(
            lambda site, folder: api.content.create(container=folder, type="Document", id="new", title="New")
        )
        self.each(lambda site, folder: folder.moveObjectsToTop(["new"]))

    def test_rename_keeps_the_place(self):
        self.each(lambda site, folder: api.content.rename(obj=folder["doc-4"], new_id="renamed"))

    def test_moves_undone_by_a_savepoint(self):
        def step(site, folder):
            savepoint = transaction.savepoint()
            folder.moveObjectsToTop(["doc-6"])
            self.assertEqual(folder_order(site, folder)[0], "doc-6")
            savepoint.rollback()

        self.assertEqual(self.each(step), [f"doc-{i}" for i in range(8)])

    def test_position_as_a_filter(self):
        """GopipIndex only sorts: a query on it finds nothing on ZCatalog."""
        for query in (
            {"getObjPositionInParent": 1},
            {"getObjPositionInParent": {"query": 3, "range": "max"}, "portal_type": "Document"},
            {"getObjPositionInParent": "abc", "sort_on": "getObjPositionInParent"},
            {"getObjPositionInParent": 2**70},
        ):
            answers = []
            for site in self.sites:
                setSite(site)
                answers.append(len(site.portal_catalog(**query)))
            self.assertEqual(answers, [0, 0], query)


class UnorderedFolderTest(BothSitesTestCase):
    """The children of an unordered folder (plone.folder's ``unordered``
    ordering: Plone's Members, news and events folders) have no position:
    ZCatalog keeps them in a sort on ``getObjPositionInParent``, before
    every position."""

    def setUp(self):
        super().setUp()
        for site in self.sites:
            setSite(site)
            login(self.layer["app"], SITE_OWNER_NAME)
            for id in ("bag", "shelf"):
                api.content.create(container=site, type="Folder", id=id, title=id)
            site["bag"].setOrdering("unordered")
            for id in ("c", "a", "b"):
                api.content.create(container=site["bag"], type="Document", id=id, title=id)
                api.content.create(container=site["shelf"], type="Document", id=id, title=id)
            transaction.commit()

    def found(self, site, **query):
        setSite(site)
        root = "/".join(site.getPhysicalPath())
        brains = site.portal_catalog.unrestrictedSearchResults(path=root, **query)
        return [brain.getPath()[len(root) :] for brain in brains]

    def test_kept_and_first(self):
        for site in self.sites:
            self.assertIsNone(site["bag"].getObjectPosition("a"))
        for query in ({"portal_type": "Document"}, {}):
            everything = [sorted(self.found(site, **query)) for site in self.sites]
            self.assertEqual(everything[0], everything[1])
            ours, stock = (self.found(site, sort_on="getObjPositionInParent", **query) for site in self.sites)
            self.assertEqual(sorted(ours), everything[0])
            self.assertEqual(ours, stock)
            # reversed, ZCatalog keeps its unpositioned ones in record id
            # order (ours: reversed too); the others as ever
            ours, stock = (
                self.found(site, sort_on="getObjPositionInParent", sort_order="reverse", **query)
                for site in self.sites
            )
            unpositioned = {"/bag/a", "/bag/b", "/bag/c"}
            self.assertEqual(ours[: -len(unpositioned)], stock[: -len(unpositioned)])
            self.assertEqual(set(ours[-len(unpositioned) :]), unpositioned)
            self.assertEqual(set(stock[-len(unpositioned) :]), unpositioned)

    def test_after_the_folder_changes(self):
        during = []
        for site in self.sites:  # (one site a transaction: CMFCore's queue catalogs in the current site's)
            setSite(site)
            api.content.create(container=site["bag"], type="Document", id="d", title="d")
            api.content.delete(obj=site["bag"]["a"])
            site["shelf"].moveObjectsToTop(["c"])
            during.append(self.found(site, sort_on="getObjPositionInParent"))
            transaction.commit()
        self.assertEqual(during[0], during[1])
        after = [self.found(site, sort_on="getObjPositionInParent") for site in self.sites]
        self.assertEqual(after, during)
        self.assertEqual(sorted(after[0]), sorted(self.found(self.sites[0])))
