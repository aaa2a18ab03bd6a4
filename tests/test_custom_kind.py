"""An add-on's own index kind, through the IIndexKind extension point."""

from helpers import CatalogTestCase
from helpers import pages_not_kept
from helpers import relpaths
from plone import api
from plone.pgcatalog import counts
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.interfaces import IIndexKind
from plone.pgcatalog.registry import index_def_from_zcatalog
from Products.ZCatalog.ZCatalog import CatalogError
from zope.component import getGlobalSiteManager
from zope.interface import implementer

import psycopg
import transaction


@implementer(IIndexKind)
class TitleLengthKind:
    """Indexes the length of an object's title; finds lengths or a minimum."""

    query_options = ("query", "range")

    def options(self, index):
        return {}

    def value(self, obj, index):
        title = getattr(obj, "Title", None)
        title = title() if callable(title) else title
        return len(title) if title else None

    def where(self, index, keys, options):
        keys = [int(k) for k in keys if k is not None]
        if not keys:
            return None
        length = f"((idx->>{index.key})::int)"
        if options.get("range") == "min":
            return f"{length} >= %s", [min(keys)]
        return f"{length} = ANY(%s)", [keys]

    def ddl(self, index):
        return [
            f"CREATE INDEX IF NOT EXISTS pgcatalog_test_{index.name} "
            f"ON object_state (((idx->>{index.key})::int)) WHERE idx ? {index.key}"
        ]


class CustomKindTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.kind = TitleLengthKind()
        getGlobalSiteManager().registerUtility(self.kind, IIndexKind, name="TitleLengthIndex")

    def tearDown(self):
        getGlobalSiteManager().unregisterUtility(self.kind, IIndexKind, name="TitleLengthIndex")

    def find(self, **query):
        return relpaths(self.portal, self.catalog.unrestrictedSearchResults(sort_on="id", **query))

    def test_add_index_and_search(self):
        self.catalog.addIndex("title_length", "TitleLengthIndex")
        for name, title in (("short", "Abc"), ("five", "Fives"), ("long", "A longer title")):
            api.content.create(container=self.portal, type="Document", id=name, title=title)
        transaction.commit()
        self.assertEqual(self.find(title_length=5), ["/five"])
        self.assertEqual(self.find(title_length=[3, 5]), ["/five", "/short"])
        # the site root has a title too (sorted by id: "plone" comes last)
        self.assertEqual(self.find(title_length={"query": 5, "range": "min"}), ["/five", "/long", ""])
        self.assertEqual(
            self.find(title_length={"query": 5, "range": "min"}, portal_type="Document"), ["/five", "/long"]
        )
        with self.assertRaises(ValueError):  # an option the kind does not take
            self.find(title_length={"query": 5, "operator": "and"})
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            names = [
                n
                for (n,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'object_state'")
            ]
        self.assertIn("pgcatalog_test_title_length", names)
        # a changed title is reindexed through the kind
        self.portal["short"].title = "Abcdefghi"
        self.portal["short"].reindexObject()
        self.assertEqual(self.find(title_length=9), ["/short"])  # in the transaction
        transaction.commit()
        self.assertEqual(self.find(title_length=9), ["/short"])

    def test_a_count_over_a_custom_kind_is_made_after_any_change(self):
        # its SQL may read anything: no change leaves its count standing
        pages_not_kept(self)  # (a kept page would answer before any count)
        self.catalog.addIndex("title_length", "TitleLengthIndex")
        for name, title in (("short", "Abc"), ("five", "Fives")):
            doc = api.content.create(container=self.portal, type="Document", id=name, title=title)
            doc.setSubject(["one"])  # (a first value decides a new index's kind: a schema change)
            doc.reindexObject(idxs=["Subject"])
        transaction.commit()
        counts._counts.clear()
        custom = {"title_length": {"query": 3, "range": "min"}, "portal_type": "Document"}
        self.assertEqual([len(self.catalog(**custom)), len(self.catalog(portal_type="Document"))], [2, 2])
        for key, (generation, (_, stamp)) in counts._counts.items():
            counts._counts.put(key, generation, (999, stamp))
        self.portal["five"].setSubject(["other"])
        self.portal["five"].reindexObject(idxs=["Subject"])
        transaction.commit()
        self.assertEqual([len(self.catalog(**custom)), len(self.catalog(portal_type="Document"))], [2, 999])
        counts._counts.clear()

    def test_facet_counts_with_a_custom_criterion_are_made_again_after_a_change(self):
        """An add-on's SQL may read what the change log does not keep (here
        the metadata column): its counts are made again, never brought up
        to date from the log."""
        self.kind.where = lambda index, keys, options: ("object_state.meta IS NOT NULL AND %s", [True])
        self.catalog.addIndex("title_length", "TitleLengthIndex")
        api.content.create(container=self.portal, type="Document", id="short", title="Hi", subject=["one"])
        transaction.commit()
        counted = lambda: self.catalog.facetCounts(["Subject"], title_length=2)["Subject"].counts  # noqa: E731
        self.assertEqual(counted(), {"one": 1})
        api.content.create(container=self.portal, type="Document", id="other", title="Yo", subject=["two"])
        transaction.commit()
        self.assertEqual(counted(), {"one": 1, "two": 1})
        self.portal["short"].setSubject(["three"])
        self.portal["short"].reindexObject()
        transaction.commit()
        self.assertEqual(counted(), {"three": 1, "two": 1})

    def test_install_carries_a_custom_index_over(self):
        class StockIndex:  # what install reads from a ZCatalog index object
            meta_type = "TitleLengthIndex"

            def getId(self):
                return "title_length"

            def getIndexSourceNames(self):
                return ("Title",)

        index = index_def_from_zcatalog(StockIndex())
        self.assertEqual(
            (index.name, index.kind, index.attrs), ("title_length", "TitleLengthIndex", ("Title",))
        )
        self.assertTrue(index.custom)
        StockIndex.meta_type = "NoSuchIndex"
        self.assertIsNone(index_def_from_zcatalog(StockIndex()))  # install logs and leaves it out

    def test_unknown_kind_is_a_logged_error(self):
        with self.assertLogs("plone.pgcatalog", "ERROR") as logged, self.assertRaises(CatalogError) as raised:
            self.catalog.addIndex("mystery", "NoSuchIndex")
        self.assertIn("IIndexKind", str(raised.exception))
        self.assertIn("NoSuchIndex", logged.output[0])
        self.assertNotIn("mystery", self.catalog.indexes())
