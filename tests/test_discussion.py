"""plone.app.discussion beside the catalog, compared with a stock site.

Its comments live in their page's annotations, not among its items: a
rebuild, ``verify`` and ``repair`` must find them as CMFPlone's
``clearFindAndRebuild`` does.  Its ``total_comments`` FieldIndex arrives by
``catalog.xml`` after the install and holds numbers: they range and sort
as numbers.
"""

from helpers import AddonFixture
from helpers import BothSitesTestCase
from itertools import groupby
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog.registry import index_defs
from plone.pgcatalog.registry import JSON_VALUE
from plone.pgcatalog.testing import PGFunctionalTesting
from plone.pgcatalog.verify import repair
from plone.pgcatalog.verify import verify
from zope.component import createObject
from zope.component.hooks import setSite

import re
import transaction


COMMENTS = {"many": 12, "two": 2, "nine": 9, "none": 0}
"""Comments per page: 12 sorts before 2 and 9 as text."""


class DiscussionFixture(AddonFixture):
    """plone.app.discussion installed in both sites after plone.pgcatalog:
    its indexes come by its catalog.xml."""

    def configure(self, site) -> None:
        site.portal_registry["plone.app.discussion.interfaces.IDiscussionSettings.globally_enabled"] = True
        site.portal_types.Document.allow_discussion = True


DISCUSSION_FIXTURE = DiscussionFixture(
    packages=("plone.app.discussion",), profiles=("plone.app.discussion:default",), name="plone.pgcatalog:Discussion"
)
DISCUSSION_TESTING = PGFunctionalTesting(
    bases=(DISCUSSION_FIXTURE,), name="plone.pgcatalog:DiscussionFunctional"
)


def commented(site) -> None:
    """Pages with :data:`COMMENTS` comments each, in *site*."""
    from plone.app.discussion.interfaces import IConversation

    for page, count in COMMENTS.items():
        site.invokeFactory("Document", page, title=f"Page {page}")
        site.portal_workflow.doActionFor(site[page], "publish")  # its comments count when public
        conversation = IConversation(site[page])
        for n in range(count):
            comment = createObject("plone.Comment")
            comment.text = f"Comment {n} on {page}"
            comment.author_username = SITE_OWNER_NAME
            conversation.addComment(comment)
    transaction.commit()


def comment_path(path: str) -> str:
    """A comment's path with its id (a time stamp) left out."""
    return re.sub(r"(\+\+conversation\+\+default/)\d+$", r"\1*", path)


class DiscussionTest(BothSitesTestCase):
    layer = DISCUSSION_TESTING

    def setUp(self):
        super().setUp()
        for site in self.sites:
            setSite(site)
            commented(site)

    def answers(self, site) -> dict:
        setSite(site)
        catalog = site.portal_catalog
        prefix = len("/".join(site.getPhysicalPath()))
        comments = catalog.unrestrictedSearchResults(portal_type="Discussion Item")

        def by_count(**query):
            found = catalog.unrestrictedSearchResults(
                portal_type="Document", sort_on="total_comments", **query
            )
            pairs = [(brain.total_comments, brain.getId) for brain in found]
            return [
                (count, sorted(i for _, i in group)) for count, group in groupby(pairs, key=lambda p: p[0])
            ]

        return {
            "comments": sorted(comment_path(brain.getPath()[prefix:]) for brain in comments),
            "comment texts": sorted(brain.Description for brain in comments),
            "by count": by_count(),
            "by count, reversed": by_count(sort_order="reverse"),
            "at least 3": by_count(total_comments={"query": 3, "range": "min"}),
            "2 to 9": by_count(total_comments={"query": [2, 9], "range": "min:max"}),
            "exactly 12": by_count(total_comments=12),
        }

    def same_answers(self, label: str) -> dict:
        ours, stock = (self.answers(site) for site in self.sites)
        self.assertEqual(len(stock["comments"]), sum(COMMENTS.values()))
        self.assertEqual(ours, stock, label)
        return ours

    def test_comments_and_their_counts(self):
        answers = self.same_answers("as written")
        self.assertEqual([count for count, _ in answers["by count"]], [0, 2, 9, 12])
        self.assertEqual(index_defs(self.sites[0].portal_catalog)["total_comments"].value_type, JSON_VALUE)

    def test_rebuild_catalogs_the_comments(self):
        for site in self.sites:
            setSite(site)
            site.portal_catalog.clearFindAndRebuild()
            transaction.commit()
        self.same_answers("after clearFindAndRebuild")

    def test_verify_and_repair_keep_the_comments(self):
        site = self.sites[0]
        setSite(site)
        report = verify(site.portal_catalog)
        self.assertTrue(report.ok, report.summary())
        self.assertEqual(report.objects, report.rows)
        repair(site.portal_catalog)
        self.same_answers("after repair")
