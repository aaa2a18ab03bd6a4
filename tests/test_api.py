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


class CallersTest(BothSitesTestCase):
    """The rest of ZCatalog's API that Plone and add-ons call: every
    index's unique values and entries, the index objects and their
    classes, ``_catalog``'s mappings, clearing and rebuilding, interface
    objects as keywords, and partial reindexes naming no index."""

    maxDiff = None

    def setUp(self):
        super().setUp()
        for _site in self.built_sites():
            pass
        self.roots = {site: "/".join(site.getPhysicalPath()) for site in self.sites}

    def each(self, ask):
        """*ask*(site, catalog) on both sites: (ZCatalog's answer, ours),
        each an answer or the class name of what it raised."""
        answers = []
        for site in reversed(self.sites):
            setSite(site)
            try:
                answers.append(ask(site, site.portal_catalog))
            except Exception as exc:  # compared by class
                answers.append(("raised", type(exc).__name__))
        return answers

    def local(self, site, value):
        """*value* with the site's own path made relative (the site ids differ)."""
        root = self.roots[site]
        if isinstance(value, str):
            return "<site>" if value == site.getId() else value.replace(root, "<site>")
        if isinstance(value, (list, tuple)):
            return type(value)(self.local(site, v) for v in value)
        return value

    def test_unique_values_of_every_index(self):
        # values that differ between the sites: generated ids, and times of
        # a build seconds apart (compared by kind and order only)
        varying = {"UID", "sync_uid", "created", "modified", "effective", "expires", "Date"}
        names = self.each(lambda site, catalog: sorted(catalog.indexes()))
        self.assertEqual(names[0], names[1])
        outcomes = {}

        def ask_path_components(site, catalog):
            pairs = catalog.Indexes["path"].uniqueValues(withLengths=True)
            under = catalog.unrestrictedSearchResults(path=self.roots[site] + "/item-005")
            return {self.local(site, key): count for key, count in pairs}, len(under)

        for name in names[0]:
            for lengths in (False, True):

                def ask(site, catalog, name=name, lengths=lengths):
                    values = list(catalog.Indexes[name].uniqueValues(withLengths=lengths))
                    if name in varying:
                        keys = [v[0] if lengths else v for v in values]
                        return (keys == sorted(keys), {type(k).__name__ for k in keys})
                    return self.local(site, values)

                expected, got = self.each(ask)
                if lengths and name == "path":
                    # ExtendedPathIndex fails here (None is its first key);
                    # ours counts the records under each component
                    self.assertEqual(expected, ("raised", "TypeError"))
                    components, under = self.each(ask_path_components)[1]
                    self.assertEqual(components["item-005"], under)
                    self.assertGreater(components["<site>"], under)
                    continue
                self.assertEqual(expected, got, (name, lengths))
                outcomes[name] = expected
            expected, got = self.each(lambda site, catalog, name=name: len(catalog.uniqueValuesFor(name)))
            if name not in varying:
                self.assertEqual(expected, got, name)
        # every kind answers as its stock index: values, none, or its error
        self.assertEqual(outcomes["getObjPositionInParent"], ("raised", "AttributeError"))
        self.assertEqual(outcomes["SearchableText"], ("raised", "NotImplementedError"))
        self.assertEqual(outcomes["effectiveRange"], [])
        self.assertTrue(outcomes["start"] and outcomes["is_folderish"] and outcomes["Subject"])

        # a DateRangeIndex lists the values of one end, by its field's name
        # (the dates are build times: how many records each end counts
        # does not depend on the minute a build straddles, their values do)
        def ends(site, catalog):
            index = catalog.Indexes["effectiveRange"]
            return [
                (
                    sum(n for _, n in index.uniqueValues(name, withLengths=True)),
                    {type(key).__name__ for key in index.uniqueValues(name)},
                )
                for name in ("effective", "expires")
            ]

        expected, got = self.each(ends)
        self.assertEqual(expected, got)
        self.assertTrue(all(counted for counted, _ in expected))

    def test_index_objects_and_their_classes(self):
        """``getIndexObjects`` (GenericSetup's export) and the stock class of
        every index, by which plone.restapi finds its query parsers."""
        from zope.interface import implementedBy
        from zope.interface import providedBy

        expected, got = self.each(
            lambda site, catalog: sorted((i.getId(), i.meta_type) for i in catalog.getIndexObjects())
        )
        self.assertEqual(expected, got)
        setSite(self.sites[1])
        stock = {name: type(index) for name, index in self.sites[1].portal_catalog._catalog.indexes.items()}
        setSite(self.sites[0])
        ours = self.sites[0].portal_catalog._catalog.indexes
        for name, cls in stock.items():
            self.assertTrue(providedBy(ours[name]).isOrExtends(implementedBy(cls)), name)
            self.assertEqual(ours.get(name).getId(), name)
            # add-ons (and CMFPlone's tests) tell kinds by the class name
            self.assertEqual(type(ours[name]).__name__, cls.__name__, name)
            self.assertEqual(type(self.sites[0].portal_catalog.Indexes[name]).__name__, cls.__name__, name)
        self.assertEqual(sorted(ours), sorted(stock))

    def test_entries_for_objects(self):
        """``getEntryForObject`` of every index for every record, and a
        record id that is not there."""
        skip = {"UID", "sync_uid", "created", "modified", "effective", "expires", "Date", "cmf_uid"}
        skip.add("effectiveRange")  # ends at an expiry set at build time: minutes apart

        def entry(catalog, name, rid):
            value = catalog._catalog.getIndex(name).getEntryForObject(rid, "-")
            # an item's keywords: ZCatalog lists them in a set's order, which
            # changes with the process's hash seed (here sorted): as sets
            if catalog._catalog.getIndex(name).meta_type == "KeywordIndex" and isinstance(value, list):
                return sorted(value)
            return value

        def entries(site, catalog):
            found = {}
            for brain in catalog.unrestrictedSearchResults(path=self.roots[site], sort_on="path"):
                if brain.getPath() == self.roots[site]:
                    continue  # the sites themselves are made differently
                rid = brain.getRID()
                found[self.local(site, brain.getPath())] = {
                    name: self.local(site, entry(catalog, name, rid))
                    for name in catalog.indexes()
                    if name not in skip
                }
            missing = {name: catalog.Indexes[name].getEntryForObject(-42, "-") for name in catalog.indexes()}
            return found, missing

        expected, got = self.each(entries)
        self.assertEqual(sorted(expected[0]), sorted(got[0]))
        for path in expected[0]:
            self.assertEqual(expected[0][path], got[0][path], path)
        self.assertEqual(expected[1], got[1])

    def test_catalog_mappings(self):
        """``_catalog.uids`` (path → rid), ``paths`` (rid → path) and
        ``data`` (rid → metadata tuple), read-only here."""
        varying = {"UID", "created", "modified", "effective", "CreationDate", "ModificationDate"}
        varying |= {"EffectiveDate", "Date", "expires", "ExpirationDate", "sync_uid", "image_scales"}

        def mappings(site, catalog):
            internals = catalog._catalog
            uids, paths, data = internals.uids, internals.paths, internals.data
            by_path = {path: uids[path] for path in uids.keys()}
            names = internals.names  # the order of the tuples (not schema()'s)
            rows = {}
            for path, rid in by_path.items():
                if path == self.roots[site]:
                    continue  # the sites themselves are made differently
                record = dict(zip(names, data[rid], strict=True))
                rows[self.local(site, path)] = {
                    k: v for k, v in record.items() if k not in varying and k != "Title"
                }
            checks = {
                "as many as records": len(uids) == len(catalog),
                "paths mirror uids": {paths[rid]: rid for rid in paths} == by_path,
                "uids in path order": sorted(by_path) == list(uids.keys()),
                "no such path": uids.get(self.roots[site] + "/no-such-item") is None,
                "no such rid": -42 not in paths,
            }
            return checks, rows

        expected, got = self.each(mappings)
        self.assertEqual(got[0], dict.fromkeys(expected[0], True))
        self.assertEqual(expected[0], got[0])
        self.assertEqual(sorted(expected[1]), sorted(got[1]))
        for path in expected[1]:
            self.assertEqual(expected[1][path], got[1][path], path)
        with self.assertRaises(TypeError):
            self.sites[0].portal_catalog._catalog.uids["/x"] = 1

    def test_clear_and_rebuild(self):
        def ask(site, catalog):
            before = relpaths(site, catalog.unrestrictedSearchResults(path=self.roots[site], sort_on="path"))
            catalog.manage_catalogClear()
            cleared = len(catalog.unrestrictedSearchResults(path=self.roots[site]))
            transaction.commit()
            still = len(catalog.unrestrictedSearchResults(path=self.roots[site]))
            catalog.manage_catalogRebuild()
            rebuilt = relpaths(site, catalog.unrestrictedSearchResults(path=self.roots[site], sort_on="path"))
            transaction.commit()
            after = relpaths(site, catalog.unrestrictedSearchResults(path=self.roots[site], sort_on="path"))
            return before == rebuilt == after, cleared, still, len(after)

        expected, got = self.each(ask)
        self.assertEqual(expected, got)
        self.assertEqual(expected[:3], (True, 0, 0))

    def test_interfaces_as_keywords(self):
        """An interface object where a name is expected: ZCatalog's BTrees
        order it after every name, so it equals none."""
        from plone.app.contenttypes.interfaces import IEvent

        name = IEvent.__identifier__
        for query in (
            {"object_provides": IEvent},
            {"object_provides": [IEvent, name]},
            {"object_provides": {"query": [IEvent, name], "operator": "and"}},
            {"object_provides": {"not": IEvent}, "portal_type": "Event"},
            {"object_provides": {"query": IEvent, "range": "max"}, "portal_type": "Event"},
            {"object_provides": {"query": IEvent, "range": "min"}},
            {"portal_type": IEvent},
        ):
            expected, got = self.each(
                lambda site, catalog, query=query: relpaths(site, catalog(sort_on="path", **query))
            )
            self.assertEqual(expected, got, query)

    def test_reindex_naming_no_index(self):
        """CMFCore drops the names that are no index; none left means
        every index, with or without the metadata as asked."""

        def ask(site, catalog):
            page = catalog.unrestrictedSearchResults(portal_type="Document", sort_on="path")[0].getObject()
            found = []
            for n, reindex in enumerate(
                (
                    lambda: page.reindexObject(idxs=["no_such_index"]),
                    lambda: catalog.reindexObject(page, idxs=["no_such_index"], update_metadata=0),
                    lambda: catalog._reindexObject(page, idxs=["no_such_index"], update_metadata=0),
                    lambda: catalog.catalog_object(page, idxs=["no_such_index"]),
                )
            ):
                page.title = f"Renamed {n}"
                try:
                    reindex()
                except Exception as exc:
                    found.append(type(exc).__name__)
                    transaction.abort()
                    continue
                transaction.commit()
                brain = catalog.unrestrictedSearchResults(UID=page.UID())[0]
                found.append((len(catalog.unrestrictedSearchResults(Title=f"renamed {n}")), brain.Title))
            return found

        expected, got = self.each(ask)
        self.assertEqual(expected, got)
        # every index refreshed; the metadata only where asked
        self.assertEqual(expected[0], (1, "Renamed 0"))
        self.assertEqual(expected[1][0], 1)
        self.assertNotEqual(expected[1][1], "Renamed 1")
