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
