"""Shared helpers: identical content on both sites, result comparison."""

from datetime import datetime
from datetime import timedelta
from datetime import UTC
from DateTime import DateTime
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.namedfile.file import NamedBlobFile
from plone.namedfile.file import NamedBlobImage
from plone.uuid.interfaces import IMutableUUID

from plone.app.testing.helpers import applyProfile
from plone.pgcatalog import kept
from plone.pgcatalog.testing import DIFFERENTIAL_FIXTURE
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from plone.pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
from plone.pgcatalog.testing import Snapshot
from plone.testing import Layer
from plone.testing import zca
from plone.testing import zope
from zope.component import getGlobalSiteManager
from zope.component.hooks import setSite
from unittest import mock
from zope.configuration import xmlconfig

import importlib
import random
import transaction
import unittest
import uuid


class CatalogTestCase(unittest.TestCase):
    """A test on the pgcatalog site, logged in as the site owner; it may commit."""

    layer = PGCATALOG_FUNCTIONAL_TESTING

    def setUp(self):
        self.portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        self.catalog = self.portal.portal_catalog


def pages_not_kept(test: unittest.TestCase) -> None:
    """For the rest of ``test``, searches select their pages instead of
    keeping them (plone.pgcatalog.kept, tested in tests/test_kept.py): a
    test of what a statement is given or sends sees every statement."""
    kept.clear()
    keeping = mock.patch.object(kept._pages, "put", lambda *args: None)
    keeping.start()
    test.addCleanup(keeping.stop)


class Extra:
    """ZCatalog's ``extra`` record for ``addIndex``."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class BothSitesTestCase(unittest.TestCase):
    """A test on the pgcatalog site and the stock ZCatalog site (``self.sites``),
    logged in as the site owner."""

    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.sites = (app["plone"], app["zplone"])
        login(app, SITE_OWNER_NAME)

    def built_sites(self, **kw):
        """Each site with :func:`build_content`'s tree, made the current site,
        logged in as the site owner."""
        for site in self.sites:
            build_content(site, **kw)
            setSite(site)
            login(self.layer["app"], SITE_OWNER_NAME)
            yield site


class AddonFixture(Layer):
    """Add-ons installed in both sites of the differential layer, after
    plone.pgcatalog, as an integrator adds them to a running site: their
    ZCML loaded, then their profiles imported (their ``catalog.xml`` adds
    indexes to our catalog as to the stock one).  Both sites get
    ``simple_publication_workflow`` (plone.app.testing's has none), then
    :meth:`configure` runs on each."""

    defaultBases = (DIFFERENTIAL_FIXTURE,)

    def __init__(self, packages: tuple[str, ...], profiles: tuple[str, ...], name: str, bases=None):
        super().__init__(bases=bases, name=name)
        self.packages = packages
        self.profiles = profiles

    def setUp(self):
        zca.pushGlobalRegistry()
        self["configurationContext"] = context = zca.stackConfigurationContext(
            self.get("configurationContext")
        )
        for package in self.packages:
            xmlconfig.file("configure.zcml", importlib.import_module(package), context=context)
        with zope.zopeApp() as app:
            login(app, SITE_OWNER_NAME)
            for site in (app.plone, app.zplone):
                # the site's own registry looks up the global one it was
                # made with: base it on the one holding the add-ons' ZCML
                manager = site.getSiteManager()
                if getGlobalSiteManager() not in manager.__bases__:
                    manager.__bases__ = (getGlobalSiteManager(),)
                setSite(site)
                site.portal_workflow.setDefaultChain("simple_publication_workflow")
                for profile in self.profiles:
                    applyProfile(site, profile)
                self.configure(site)
                # CMFCore's indexing queue sends what it holds to the current
                # site's catalog, whichever site queued it
                transaction.commit()
            setSite(None)
        self["pg_snapshot"] = Snapshot(self["pg_dsn"])

    def configure(self, site) -> None:
        """Settings of the add-on, the same on both sites."""

    def tearDown(self):
        self["pg_snapshot"].close()
        del self["pg_snapshot"]
        self["pg_snapshot"].restore(self["zodbDB"])  # the differential layer's database again
        del self["configurationContext"]
        zca.popGlobalRegistry()


WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda omicron sigma omega "
    "river stone forest cloud harbor meadow lantern copper willow summit"
).split()
SUBJECTS = ("alpha", "beta", "gamma", "Ümlaut", "news", "events")
TYPES = ("Document", "News Item", "Folder", "Event")
ITEM_TYPES = ("Link", "File", "Image", "Collection")  # stand in for some pages
LANGUAGES = ("en", "de", "")
RULES = ("", "", "RRULE:FREQ=DAILY;COUNT=4", "RRULE:FREQ=WEEKLY;COUNT=3")
# a one-pixel GIF
PIXEL = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"


def type_fields(portal_type: str, i: int, rng: random.Random, today: datetime) -> dict:
    """What a standard type needs beyond title and description: events get
    dates (some with a recurrence), files and images their data."""
    if portal_type == "Event":
        start = today + timedelta(days=rng.randint(-20, 20), hours=rng.randint(8, 18))
        return {"start": start, "end": start + timedelta(hours=2), "recurrence": rng.choice(RULES) or None}
    if portal_type == "Link":
        return {"remoteUrl": f"https://example.org/{i}"}
    if portal_type == "File":
        words = " ".join(rng.choice(WORDS) for _ in range(4))
        return {"file": NamedBlobFile(data=words.encode(), filename=f"f{i}.txt", contentType="text/plain")}
    if portal_type == "Image":
        return {"image": NamedBlobImage(data=PIXEL, filename=f"i{i}.gif")}
    if portal_type == "Collection":
        selection = "plone.app.querystring.operation.selection.any"
        return {"query": [{"i": "portal_type", "o": selection, "v": ["Document"]}]}
    return {}


def build_content(site, seed=7, count=40):
    """Create a seeded tree of content of every standard type, with workflow
    states, dates (events with recurrences), languages and subjects."""
    rng = random.Random(seed)
    # what the first content tests did not have draws from its own sequence,
    # so that the tree (ids, types of folders and events) stays as it was
    more = random.Random(seed + 1)
    # the same on both sites, built seconds apart
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    setSite(site)
    app = site.aq_parent
    login(app, SITE_OWNER_NAME)
    wf = site.portal_workflow
    wf.setChainForPortalTypes(TYPES + ITEM_TYPES, "simple_publication_workflow")
    # the same UIDs on both sites (the site's own too), so that ranges over
    # UIDs compare
    IMutableUUID(site).set(uuid.UUID(int=random.Random(seed * 1000 - 1).getrandbits(128)).hex)
    site.reindexObject(idxs=["UID"])
    folders = [site]
    for i in range(count):
        parent = rng.choice(folders)
        portal_type = rng.choice(TYPES)
        if portal_type in ("Document", "News Item") and more.random() < 0.5:
            portal_type = more.choice(ITEM_TYPES)
        title = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i:03d}"
        obj = api.content.create(
            container=parent,
            type=portal_type,
            id=f"item-{i:03d}",
            title=title,
            description=" ".join(rng.choice(WORDS) for _ in range(6)),
            subject=tuple(rng.sample(SUBJECTS, rng.randint(0, 3))),
            language=more.choice(LANGUAGES),
            **type_fields(portal_type, i, more, today),
        )
        IMutableUUID(obj).set(uuid.UUID(int=random.Random(seed * 1000 + i).getrandbits(128)).hex)
        if portal_type == "Folder":
            folders.append(obj)
        state = rng.random()
        if state < 0.6:
            api.content.transition(obj=obj, transition="publish")
        elif state < 0.8:
            api.content.transition(obj=obj, transition="submit")
        when = rng.random()
        if when < 0.15:
            obj.setEffectiveDate(DateTime() + 30)
        elif when < 0.25:
            obj.setExpirationDate(DateTime() - 30)
        if rng.random() < 0.2:
            obj.exclude_from_nav = True
        obj.reindexObject()
    transaction.commit()
    logout()


def relpaths(site, results):
    prefix = "/".join(site.getPhysicalPath())
    return [brain.getPath()[len(prefix) :] for brain in results]


# every word's frequency, as rows of releases before schema version 5 hold them
EVERY_FREQUENCY = """UPDATE object_state SET word_counts = (
    SELECT jsonb_object_agg(c.key, jsonb_build_array(c.value -> 0, COALESCE((
        SELECT jsonb_object_agg(u.lexeme, cardinality(u.positions))
          FROM unnest(CASE c.key WHEN 'SearchableText' THEN searchable_text
                                 ELSE (idx ->> c.key)::tsvector END) AS u), '{}') || (c.value -> 1)))
      FROM jsonb_each(word_counts) AS c)
 WHERE word_counts IS NOT NULL"""


CHANGES = ("create", "delete", "publish", "tag", "move", "retitle")
"""The kinds of :func:`random_change`."""


def random_change(
    rng: random.Random, home, other, made, titles: list[str], kinds=CHANGES
) -> tuple[str, object]:
    """One random change of the Documents in folders *home* and *other*
    (simple_publication_workflow), committed by the caller: a new one in
    *home* (ids from the iterator *made*), a deletion, a transition, a tag,
    a move to the other folder, a title from *titles*; a kind of *kinds*
    not among these is the caller's to make.  The kind and the Document."""
    docs = [doc for folder in (home, other) for doc in folder.objectValues()]
    what = rng.choice(kinds)
    doc = rng.choice(docs)
    if what == "create" or len(docs) < 3:
        what = "create"
        api.content.create(container=home, type="Document", id=f"n{next(made)}", title=titles[0])
    elif what == "delete":
        api.content.delete(obj=doc)
    elif what == "publish":
        state = api.content.get_state(obj=doc)
        api.content.transition(obj=doc, transition="retract" if state == "published" else "publish")
    elif what == "tag":
        doc.setSubject([] if doc.Subject() else ["tagged"])
        doc.reindexObject()
    elif what == "move":
        api.content.move(source=doc, target=other if doc.__parent__ is home else home)
    elif what == "retitle":
        doc.title = rng.choice(titles[1:])
        doc.reindexObject()
    return what, doc
