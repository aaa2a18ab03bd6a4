"""Field and keyword indexes added after the install (an add-on's
catalog.xml, ``addIndex``) learn from their first value what they hold:
numbers range and sort as numbers, text in code point order, as ZCatalog's
BTree of the first key's type does.  Compared with the stock site."""

from helpers import BothSitesTestCase
from helpers import relpaths
from plone.indexer import indexer
from plone.pgcatalog.registry import index_defs
from plone.pgcatalog.registry import JSON_VALUE
from plone.pgcatalog.registry import TEXT_VALUE
from Products.CMFCore.interfaces import IContentish
from zope.component import getGlobalSiteManager
from zope.component.hooks import setSite

from itertools import groupby

import transaction


@indexer(IContentish)
def my_count(obj):
    """A number per item, as plone.app.discussion's ``total_comments``:
    from the title's length, 0 to 16: 9 and 10 sort apart as numbers and as text."""
    return len(obj.Title()) % 17


@indexer(IContentish)
def my_sizes(obj):
    return [len(obj.Title()) % 17, len(obj.Description()) % 17]


@indexer(IContentish)
def my_label(obj):
    return obj.Title().split(" ")[0] if obj.Title() else None


SORT_KEYS = {
    "my_count": lambda brain: len(brain.Title) % 17,
    "my_label": lambda brain: brain.Title.split(" ")[0],
}


def queries(counts: list[int]) -> list[dict]:
    """Queries around the middle of *counts*, the title lengths the
    stock catalog holds (some above 9, some below 10: text would sort
    them otherwise)."""
    low, mid, high = counts[len(counts) // 4], counts[len(counts) // 2], counts[3 * len(counts) // 4]
    return [
        {"my_count": {"query": mid, "range": "min"}, "sort_on": "my_count"},
        {
            "my_count": {"query": [low, high], "range": "min:max"},
            "sort_on": "my_count",
            "sort_order": "reverse",
        },
        {"my_count": mid},
        {"my_count": [low, mid, high]},
        {"my_count": {"not": mid}, "sort_on": "my_count"},
        {"sort_on": "my_count", "portal_type": "Document"},
        {"my_sizes": {"query": mid, "range": "max"}, "sort_on": "my_count"},
        {"my_sizes": [0, high], "sort_on": "path"},
        {"my_label": {"query": "M", "range": "min"}, "sort_on": "my_label"},
        {"sort_on": "my_label", "portal_type": "Folder"},
    ]


ERRONEOUS = (
    {"my_count": {"query": "10", "range": "min"}},  # text beside number keys
    {"my_label": {"query": 3, "range": "max"}},
)


class ValueTypesTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        gsm = getGlobalSiteManager()
        for adapter in (my_count, my_sizes, my_label):
            name = adapter.callable.__name__
            gsm.registerAdapter(adapter, name=name)
            self.addCleanup(gsm.unregisterAdapter, adapter, name=name)
        self.sites = list(self.built_sites(seed=3, count=40))
        for site in self.sites:
            setSite(site)
            catalog = site.portal_catalog
            # added empty after the install, as an add-on's catalog.xml adds them
            catalog.addIndex("my_count", "FieldIndex")
            catalog.addIndex("my_sizes", "KeywordIndex")
            catalog.addIndex("my_label", "FieldIndex")
            transaction.commit()
            catalog.manage_reindexIndex(["my_count", "my_sizes", "my_label"])
            transaction.commit()

    def answers(self, site, query):
        """The paths *query* finds, in order of its sort key, each run of
        equal keys as a set: ZCatalog orders ties by its random record ids."""
        setSite(site)
        try:
            found = site.portal_catalog.unrestrictedSearchResults(**query)
        except Exception as error:
            return type(error)
        key = SORT_KEYS.get(query.get("sort_on"))
        paths = relpaths(site, found)
        if key is None:
            return sorted(paths), len(found)
        keys = [key(brain) for brain in found]
        return [
            (k, sorted(p for p, pk in zip(paths, keys, strict=True) if pk == k)) for k, _ in groupby(keys)
        ], len(found)

    def test_first_values_decide(self):
        ours = index_defs(self.sites[0].portal_catalog)
        self.assertEqual(ours["my_count"].value_type, JSON_VALUE)
        self.assertEqual(ours["my_sizes"].value_type, JSON_VALUE)
        self.assertEqual(ours["my_label"].value_type, TEXT_VALUE)

    def test_numbers_range_and_sort_as_numbers(self):
        counts = sorted(self.sites[1].portal_catalog.uniqueValuesFor("my_count"))
        self.assertLess(counts[0], 10)
        self.assertGreater(counts[-1], 10)
        for query in queries(counts):
            with self.subTest(query=query):
                ours, stock = (self.answers(site, query) for site in self.sites)
                self.assertNotIsInstance(stock, type)
                self.assertTrue(stock[1])
                self.assertEqual(ours, stock)

    def test_the_other_type_fails_as_in_zcatalog(self):
        for query in ERRONEOUS:
            with self.subTest(query=query):
                ours, stock = (self.answers(site, query) for site in self.sites)
                self.assertEqual(stock, TypeError)
                self.assertEqual(ours, stock)

    def test_an_index_added_empty_answers_nothing_to_any_value(self):
        for site in self.sites:
            setSite(site)
            site.portal_catalog.addIndex("my_unused", "FieldIndex")
        for query in ({"my_unused": 3}, {"my_unused": {"query": "a", "range": "min"}}):
            ours, stock = (self.answers(site, query) for site in self.sites)
            self.assertEqual(ours, stock)
            self.assertEqual(ours, ([], 0))
