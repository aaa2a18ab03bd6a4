"""Recurring events: every occurrence is found, on objects loaded back from
zodb-pgjsonb (which hands out ``timezone.utc``, not pytz) as on ZCatalog."""

from datetime import datetime
from datetime import timedelta
from datetime import timezone, UTC
from DateTime import DateTime
from helpers import BothSitesTestCase
from helpers import relpaths
from plone import api
from plone.event import utils as plone_event_utils
from plone.pgcatalog.patches import as_pytz
from Products.CMFCore.indexing import processQueue
from zope.component.hooks import setSite

from unittest import mock

import pytz
import transaction
import unittest


RULE = "RRULE:FREQ=DAILY;COUNT=5"


class AsPytzTest(unittest.TestCase):
    def test_stdlib_zones_become_pytz(self):
        moment = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
        self.assertIs(as_pytz(moment).tzinfo, pytz.utc)
        self.assertEqual(as_pytz(moment), moment)
        plus_two = datetime(2026, 3, 1, 10, 0, tzinfo=timezone(timedelta(hours=2)))
        self.assertEqual(as_pytz(plus_two).utcoffset(), timedelta(hours=2))
        self.assertEqual(as_pytz(plus_two), plus_two)
        vienna = pytz.timezone("Europe/Vienna").localize(datetime(2026, 3, 1, 10, 0))
        self.assertIs(as_pytz(vienna), vienna)


class RecurringEventTest(BothSitesTestCase):
    def setUp(self):
        super().setUp()
        # whole hours ten days ahead: the upcoming occurrence is the first
        now = datetime.now(pytz.utc).replace(minute=0, second=0, microsecond=0)
        self.first = now + timedelta(days=10)
        for site in self.sites:
            setSite(site)
            site.portal_workflow.setChainForPortalTypes(("Event",), "simple_publication_workflow")
            api.content.create(
                container=site,
                type="Event",
                id="daily",
                title="Daily",
                start=self.first,
                end=self.first + timedelta(hours=1),
                recurrence=RULE,
            )
            api.content.create(
                container=site,
                type="Event",
                id="once",
                title="Once",
                start=self.first + timedelta(days=2, hours=3),
                end=self.first + timedelta(days=2, hours=4),
            )
            processQueue()
        transaction.commit()

    def reload_and_reindex(self):
        """Drop the objects from the ZODB cache, so that they are loaded
        back from their storage, and catalog them again."""
        for site in self.sites:
            site._p_jar.cacheMinimize()
        for site in self.sites:
            setSite(site)
            for name in ("daily", "once"):
                site[name].reindexObject()
            processQueue()
        transaction.commit()

    def found(self, site, **query):
        setSite(site)
        return relpaths(site, site.portal_catalog.unrestrictedSearchResults(sort_on="id", **query))

    def test_loaded_back_from_storage(self):
        self.reload_and_reindex()
        # zodb-pgjsonb's own datetimes: the trap this guards against
        self.assertIs(type(self.sites[0]["daily"].start.tzinfo), timezone)
        first = DateTime(self.first)
        for day in range(7):
            start = first + day
            query = {"start": {"query": [start - 1 / 48, start + 1 / 48], "range": "min:max"}}
            expected = ["/daily"] if day < 5 else []
            for site in self.sites:
                self.assertEqual(self.found(site, **query), expected, (site.getId(), day))
        # a range holding an occurrence and the single event; a day without
        span = {"query": [first + 2, first + 2.5], "range": "min:max"}
        for site in self.sites:
            self.assertEqual(self.found(site, start=span), ["/daily", "/once"])
            self.assertEqual(self.found(site, start={"query": first + 7, "range": "min"}), [])
            self.assertEqual(
                self.found(site, start={"query": first + 3.5, "range": "min"}, portal_type="Event"),
                ["/daily"],
            )

    def test_the_trap_without_the_fix(self):
        """With plone.event's own normaliser, an event loaded back from
        zodb-pgjsonb cannot be expanded: what the fix is for."""
        self.reload_and_reindex()
        at = DateTime(self.first) + 1
        query = {"start": {"query": [at - 1 / 48, at + 1 / 48], "range": "min:max"}}
        pg = self.sites[0]
        self.assertEqual(self.found(pg, **query), ["/daily"])
        own = plone_event_utils.utcoffset_normalize.__wrapped__
        with mock.patch.object(plone_event_utils, "utcoffset_normalize", own):
            pg._p_jar.cacheMinimize()
            setSite(pg)
            with self.assertRaisesRegex(AttributeError, "localize"):
                pg["daily"].reindexObject()
                processQueue()
        transaction.abort()

    def test_index_data_and_event_listings(self):
        """getIndexDataForRID, getMetadataForRID and getAllBrains answer as
        ZCatalog's, and plone.app.event's listings, which read occurrences
        from getIndexDataForRID, list the same occurrences."""
        from plone.app.event.base import get_events
        from plone.app.event.base import RET_MODE_ACCESSORS

        self.reload_and_reindex()
        data, listings, everything = [], [], []
        for site in self.sites:
            setSite(site)
            catalog = site.portal_catalog
            rid = catalog.getrid("/".join(site["daily"].getPhysicalPath()))
            entry = catalog.getIndexDataForRID(rid)
            meta = catalog.getMetadataForRID(rid)
            data.append(
                (
                    entry["start"],
                    entry["end"],
                    entry["portal_type"],
                    entry["review_state"],
                    entry["is_folderish"],
                    entry["effectiveRange"],
                    entry["path"].split("/", 2)[2],
                    meta["Title"],
                    meta["start"],
                    meta["review_state"],
                )
            )
            self.assertEqual(catalog.getIndexDataForRID(-1)["start"], "")
            occurrences = get_events(
                site,
                start=self.first,
                end=self.first + timedelta(days=30),
                ret_mode=RET_MODE_ACCESSORS,
                expand=True,
            )
            listings.append([(o.title, o.start.isoformat()) for o in occurrences])
            everything.append(sorted(relpaths(site, catalog.getAllBrains())))
        self.assertEqual(data[0], data[1])
        self.assertEqual(len(data[0][0]), 5)  # five occurrences
        self.assertEqual(listings[0], listings[1])
        self.assertEqual(len(listings[0]), 6)  # five of Daily, one Once
        self.assertEqual(everything[0], everything[1])
        self.assertIn("/daily", everything[0])

    def test_rebuild_keeps_occurrences(self):
        self.reload_and_reindex()
        for site in self.sites:
            setSite(site)
            site._p_jar.cacheMinimize()
            site.portal_catalog.clearFindAndRebuild()
        transaction.commit()
        at = DateTime(self.first) + 4
        query = {"start": {"query": [at - 1 / 48, at + 1 / 48], "range": "min:max"}}
        for site in self.sites:
            self.assertEqual(self.found(site, **query), ["/daily"])
