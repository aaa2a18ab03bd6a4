"""Ties of a sort, in ZCatalog's order.

ZCatalog orders equal sort keys by record id, and which way depends on how
it sorts: a reversed sort of (key, rid) pairs puts the highest record id
first, but a search without a limit whose matches outnumber the sort
index's keys walks the index instead, each key's matches in ascending
record id order, reversed or not; a sort on several keys is stable over
the matches in record id order.  Both sites here catalog in the order
the objects are made (their record ids follow it), and every search must
give the same ids in the same order.
"""

from DateTime import DateTime
from helpers import BothSitesTestCase
from plone import api
from plone.pgcatalog import counts
from zope.component.hooks import setSite

import transaction


TIED = DateTime("2015/01/01 00:00:00 UTC")


class SortTiesTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        for site in self.sites:
            setSite(site)
            folder = api.content.create(container=site, type="Folder", id="ties", title="Ties")
            # d0-d3 share their date and d4-d5 another; four more have one
            # each; d0/d1 and d4/d5 share their title too
            dates = [TIED] * 4 + [TIED - 400] * 2 + [TIED - n for n in (10, 20, 30, 40)]
            titles = ["Same", "Same", "Alpha", "Beta", "Same", "Same", "Gamma", "Delta", "Eta", "Theta"]
            for n, (date, title) in enumerate(zip(dates, titles, strict=True)):
                api.content.create(container=folder, type="Document", id=f"d{n}", title=title, effective=date)
            transaction.commit()

    def ids(self, site, **query):
        setSite(site)
        path = "/".join(site.getPhysicalPath()) + "/ties"
        brains = site.portal_catalog.unrestrictedSearchResults(path=path, portal_type="Document", **query)
        return [brain.getId for brain in brains]

    def assertSame(self, **query):
        ours, stock = (self.ids(site, **query) for site in self.sites)
        self.assertEqual(ours, stock, query)
        return stock

    def test_reversed_without_a_limit_walks_the_index(self):
        # ten matches, a few keys: ZCatalog walks its effective index
        stock = self.assertSame(sort_on="effective", sort_order="reverse")
        self.assertEqual(stock[:4], ["d0", "d1", "d2", "d3"])

    def test_reversed_with_a_limit_sorts_the_pairs(self):
        stock = self.assertSame(sort_on="effective", sort_order="reverse", b_start=0, b_size=20)
        self.assertEqual(stock[:4], ["d3", "d2", "d1", "d0"])
        self.assertSame(sort_on="effective", sort_order="reverse", sort_limit=3)
        self.assertSame(sort_on="effective", sort_order="reverse", b_start=0, b_size=3)

    def test_reversed_on_few_matches_sorts_the_pairs(self):
        # the four tied matches against the index's seven keys
        stock = self.assertSame(sort_on="effective", sort_order="reverse", effective=TIED)
        self.assertEqual(stock, ["d3", "d2", "d1", "d0"])
        self.assertSame(
            sort_on="effective", sort_order="reverse", effective={"query": TIED - 400, "range": "min"}
        )

    def test_ascending(self):
        self.assertSame(sort_on="effective")
        self.assertSame(sort_on="effective", b_start=0, b_size=5)
        self.assertSame(sort_on="effective", sort_limit=5)

    def test_several_keys(self):
        for order in ("reverse", ["reverse", "ascending"], ["ascending", "reverse"], ""):
            self.assertSame(sort_on=["effective", "sortable_title"], sort_order=order)
            self.assertSame(sort_on=["sortable_title", "effective"], sort_order=order, b_start=0, b_size=20)

    def test_a_batch_from_the_end(self):
        # ZCatalog sorts the other way, limited, and turns the batch round
        self.assertSame(sort_on="effective", sort_order="reverse", b_start=8, b_size=2)
        self.assertSame(sort_on="effective", b_start=7, b_size=3)

    def test_other_kinds(self):
        self.assertSame(sort_on="sortable_title", sort_order="reverse")
        self.assertSame(sort_on="portal_type", sort_order="reverse")
        self.assertSame(sort_on="is_folderish", sort_order="reverse")
        self.assertSame(sort_on="getId", sort_order="reverse")

    def test_the_index_gains_keys(self):
        # the number of keys is remembered while the index is unchanged
        # (counts); five new dates elsewhere turn the walk into a sort
        counts._counts.clear()
        self.assertEqual(self.assertSame(sort_on="effective", sort_order="reverse")[:4], ["d0", "d1", "d2", "d3"])
        remembered = [key for key, _ in counts._counts.items() if key[2][0] == "statement"]
        self.assertEqual(len(remembered), 1)
        for site in self.sites:
            setSite(site)
            for n in range(5):
                api.content.create(container=site, type="Document", id=f"other{n}", effective=TIED - 1000 - n)
            transaction.commit()
        self.assertEqual(self.assertSame(sort_on="effective", sort_order="reverse")[:4], ["d3", "d2", "d1", "d0"])
