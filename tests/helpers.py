"""Shared helpers: identical content on both sites, result comparison."""

from DateTime import DateTime
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME

from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from plone.pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
from zope.component.hooks import setSite

import random
import transaction
import unittest


class CatalogTestCase(unittest.TestCase):
    """A test on the pgcatalog site, logged in as the site owner; it may commit."""

    layer = PGCATALOG_FUNCTIONAL_TESTING

    def setUp(self):
        self.portal = self.layer["portal"]
        login(self.layer["app"], SITE_OWNER_NAME)
        self.catalog = self.portal.portal_catalog


class BothSitesTestCase(unittest.TestCase):
    """A test on the pgcatalog site and the stock ZCatalog site (``self.sites``),
    logged in as the site owner."""

    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.sites = (app["plone"], app["zplone"])
        login(app, SITE_OWNER_NAME)


WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda omicron sigma omega "
    "river stone forest cloud harbor meadow lantern copper willow summit"
).split()
SUBJECTS = ("alpha", "beta", "gamma", "Ümlaut", "news", "events")
TYPES = ("Document", "News Item", "Folder", "Event")


def build_content(site, seed=7, count=40):
    """Create a seeded tree of content with workflow states and dates."""
    rng = random.Random(seed)
    setSite(site)
    app = site.aq_parent
    login(app, SITE_OWNER_NAME)
    wf = site.portal_workflow
    wf.setChainForPortalTypes(TYPES, "simple_publication_workflow")
    folders = [site]
    for i in range(count):
        parent = rng.choice(folders)
        portal_type = rng.choice(TYPES)
        title = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i:03d}"
        obj = api.content.create(
            container=parent,
            type=portal_type,
            id=f"item-{i:03d}",
            title=title,
            description=" ".join(rng.choice(WORDS) for _ in range(6)),
            subject=tuple(rng.sample(SUBJECTS, rng.randint(0, 3))),
        )
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
