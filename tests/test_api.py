"""The ZCatalog API that Plone code calls, against ZCatalog's answers.

Record ids differ between the catalogs, so they are compared through the
paths they stand for.
"""

from helpers import BothSitesTestCase
from helpers import Extra
from helpers import relpaths
from plone import api
from zope.component.hooks import setSite

import transaction


class APITest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.built_sites():
            # values whose order differs between code points and a locale
            api.content.create(
                container=site, type="Document", id="zebra", title="Zebra", subject=("Zebra", "éclair")
            )
            transaction.commit()

    def each(self, ask):
        """*ask*(site, catalog) on both sites: (ZCatalog's answer, ours)."""
        answers = []
        for site in reversed(self.sites):
            setSite(site)
            answers.append(ask(site, site.portal_catalog))
        return answers

    def assertSame(self, ask, label=""):
        expected, got = self.each(ask)
        self.assertEqual(expected, got, label)
        return expected

    def test_unique_values(self):
        for name in ("Subject", "portal_type", "review_state", "Creator"):
            values = self.assertSame(
                lambda site, catalog, name=name: list(catalog.uniqueValuesFor(name)), name
            )
            self.assertTrue(values, name)
            self.assertSame(lambda site, catalog, name=name: list(catalog.Indexes[name].uniqueValues()), name)
            self.assertSame(
                lambda site, catalog, name=name: list(catalog.Indexes[name].uniqueValues(withLengths=True)),
                name,
            )
        self.assertSame(lambda site, catalog: list(catalog._catalog.getIndex("portal_type").uniqueValues()))
        self.assertSame(lambda site, catalog: list(catalog._catalog.indexes["review_state"].uniqueValues()))
        # in code point order, as BTree keys: "Zebra" before "alpha", "éclair" last
        subjects = self.assertSame(lambda site, catalog: list(catalog.uniqueValuesFor("Subject")))
        self.assertEqual((subjects[0], subjects[-1]), ("Zebra", "éclair"))
        # UIDs differ between the sites: as many, each in order
        uids = self.each(lambda site, catalog: list(catalog.uniqueValuesFor("UID")))
        self.assertEqual(len(uids[0]), len(uids[1]))
        self.assertEqual(uids[1], sorted(uids[1]))

    def test_unique_values_of_an_unknown_index(self):
        for site, catalog in ((s, s.portal_catalog) for s in self.sites):
            setSite(site)
            with self.assertRaises(KeyError):
                catalog.uniqueValuesFor("no_such_index")

    def test_index_sizes(self):
        for name in ("Subject", "portal_type", "UID", "review_state"):
            self.assertSame(lambda site, catalog, name=name: catalog.Indexes[name].numObjects(), name)
            self.assertSame(lambda site, catalog, name=name: catalog.Indexes[name].indexSize(), name)

    def test_apply_index(self):
        def apply(site, catalog, name, query):
            # the index in its catalog, as Catalog.search applies it (a
            # ``not`` then starts from every record, values or not)
            found = catalog._catalog.getIndex(name)._apply_index({name: query})
            if found is None:
                return None
            rids, used = found
            return sorted(catalog.getpath(rid)[len("/".join(site.getPhysicalPath())) :] for rid in rids), used

        for name, query in (
            ("portal_type", "Document"),
            ("portal_type", ["Folder", "Event"]),
            ("Subject", {"query": ["alpha", "beta"], "operator": "and"}),
            ("review_state", {"not": "published"}),
        ):
            answer = self.assertSame(lambda site, catalog, n=name, q=query: apply(site, catalog, n, q), name)
            self.assertTrue(answer[0], (name, query))
        # no value for the index: it does not take part
        self.assertSame(
            lambda site, catalog: catalog._catalog.getIndex("portal_type")._apply_index({"other": 1})
        )

    def test_uid_lookup(self):
        def by_uid(site, catalog):
            uid = api.content.get_uuid(site["zebra"])
            rid = catalog.Indexes["UID"]._index.get(uid)
            return catalog.getpath(rid)[len("/".join(site.getPhysicalPath())) :], catalog.Indexes[
                "UID"
            ]._index.get("no-such-uid")

        self.assertEqual(self.assertSame(by_uid), ("/zebra", None))

    def test_call_search_and_getobject(self):
        def ask(site, catalog):
            called = relpaths(site, catalog(portal_type="Document", sort_on="id"))
            searched = relpaths(site, catalog.search({"portal_type": "Document", "sort_on": "id"}))
            brain = catalog(id="zebra")[0]
            obj = catalog.getobject(brain.getRID())
            return called, searched, obj.getId(), brain.getObject().getId()

        called, searched, *ids = self.assertSame(ask)
        self.assertTrue(called)
        self.assertEqual(called, searched)
        self.assertEqual(ids, ["zebra", "zebra"])

    def test_columns_follow(self):
        def ask(site, catalog):
            catalog.addColumn("remoteUrl")
            transaction.commit()
            catalog.refreshCatalog()
            transaction.commit()
            first = catalog(portal_type="Link", sort_on="id")[0]
            with_column = (first.remoteUrl, "remoteUrl" in catalog.schema())
            catalog.delColumn("remoteUrl")
            transaction.commit()
            brain = catalog(portal_type="Link", sort_on="id")[0]
            return with_column, "remoteUrl" in catalog.schema(), hasattr(brain, "remoteUrl")

        (url, listed), *after = self.assertSame(ask)
        self.assertTrue(url.startswith("https://example.org/"))
        self.assertEqual((listed, *after), (True, False, False))

    def test_metadata_types_and_values(self):
        """Every metadata column of every record, by type (a tuple stays a
        tuple, a DateTime a DateTime, a translatable message a message) and,
        where the two sites cannot differ, by value."""
        from zope.i18nmessageid import Message

        # times (the sites are built seconds apart) and generated ids
        varying = {
            "UID",
            "created",
            "modified",
            "effective",
            "CreationDate",
            "ModificationDate",
            "EffectiveDate",
            "Date",
            "expires",
            "ExpirationDate",
            "sync_uid",
            "image_scales",  # download URLs hash the modification time
        }

        def records(site, catalog):
            root = "/".join(site.getPhysicalPath())
            found = {}
            for brain in catalog.unrestrictedSearchResults(path=root, sort_on="path"):
                if brain.getPath() == root:
                    continue  # the sites' own ids and titles
                meta = catalog.getMetadataForRID(brain.getRID())
                found[brain.getPath()[len(root) :]] = {
                    column: (type(getattr(brain, column)).__name__, type(meta[column]).__name__,
                             None if column in varying else getattr(brain, column))
                    for column in catalog.schema()
                }  # fmt: skip
            return found

        expected, got = self.each(records)
        self.assertEqual(sorted(expected), sorted(got))
        differences = [
            (path, column, want, got[path][column])
            for path, columns in expected.items()
            for column, want in columns.items()
            if got[path][column] != want
        ]
        self.assertEqual(differences, [])
        kinds = {(column, kind) for columns in expected.values() for column, (kind, _, _) in columns.items()}
        self.assertIn(("Type", Message.__name__), kinds)
        self.assertIn(("Subject", "tuple"), kinds)
        self.assertIn(("modified", "DateTime"), kinds)

    def test_indexes_follow(self):
        """An index added, filled, searched and deleted; the catalog's length."""

        def ask(site, catalog):
            root = "/".join(site.getPhysicalPath())
            before = len(catalog)
            catalog.addIndex("my_type", "FieldIndex", extra=Extra(indexed_attrs="portal_type"))
            transaction.commit()
            empty = len(catalog.unrestrictedSearchResults(my_type="Folder"))
            catalog.manage_reindexIndex(ids=["my_type"])
            transaction.commit()
            folders = relpaths(site, catalog.unrestrictedSearchResults(my_type="Folder", sort_on="path"))
            listed = "my_type" in catalog.indexes()
            catalog.delIndex("my_type")
            transaction.commit()
            # a query on an index that is gone: the key is ignored
            gone = len(catalog.unrestrictedSearchResults(my_type="Folder", path=root))
            return before, empty, folders, listed, "my_type" in catalog.indexes(), gone

        before, empty, folders, listed, still, gone = self.assertSame(ask)
        self.assertGreater(before, 40)
        self.assertEqual((empty, listed, still), (0, True, False))
        self.assertTrue(folders)
        self.assertEqual(gone, before)
