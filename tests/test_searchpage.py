"""Plone's search page (``@@search``) through Zope's publisher, as
Anonymous, a Member and the owner: counts on its filters, "did you mean"
and snippets, and nothing of a private page for who may not see it.
"""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.app.textfield.value import RichTextValue
from plone.testing.zope import Browser
from urllib.parse import quote

import json
import lxml.html
import transaction


class SearchPageTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        wf = self.portal.portal_workflow
        wf.setChainForPortalTypes(("Document", "News Item", "Event"), "simple_publication_workflow")
        for i in range(5):
            self.add("Document", f"page-{i}", f"Harbor page {i}", "<p>The copper harbor at dawn.</p>")
        for i in range(2):
            self.add("News Item", f"news-{i}", f"Harbor news {i}", "<p>News of the <b>harbor</b> &amp; its boats.</p>")
        self.add("Document", "lantern", "Lantern", "<p>A lantern by the meadow.</p>")
        self.add("Document", "secret", "Secret harbor", "<p>The quasarfluxion harbor.</p>", publish=False)
        api.user.create(email="erin@example.org", username="erin", password="secret-secret")
        transaction.commit()

    def add(self, portal_type: str, id: str, title: str, body: str, publish: bool = True) -> None:
        obj = api.content.create(
            container=self.portal,
            type=portal_type,
            id=id,
            title=title,
            text=RichTextValue(body, "text/html", "text/x-html-safe"),
        )
        if publish:
            api.content.transition(obj=obj, transition="publish")

    def page(self, query: str, user: str | None = None) -> lxml.html.HtmlElement:
        browser = Browser(self.layer["app"])
        browser.handleErrors = False
        if user == SITE_OWNER_NAME:
            browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        elif user:
            browser.addHeader("Authorization", f"Basic {user}:secret-secret")
        browser.open(f"{self.portal.absolute_url()}/@@search?{query}")
        return lxml.html.fromstring(browser.contents)

    def counts(self, page, facet: str) -> dict[str, str]:
        return {
            badge.get("data-value"): badge.text_content()
            for badge in page.cssselect(f".pgcatalog-count[data-facet='{facet}']")
        }

    def test_counts_on_the_filters(self):
        for user in (None, "erin", SITE_OWNER_NAME):
            page = self.page("SearchableText=harbor", user)
            types = self.counts(page, "portal_type")
            secret = 1 if user == SITE_OWNER_NAME else 0
            self.assertEqual((types["Document"], types["News Item"]), (str(5 + secret), "2"), user)
            self.assertEqual(page.cssselect("#search-results-number")[0].text_content(), str(7 + secret))
            self.assertEqual(self.counts(page, "created")["ever"], str(7 + secret))
            # the counts travel with the results, which pat-search replaces
            carried = json.loads(page.cssselect("#search-results")[0].get("data-pgcatalog-counts"))
            self.assertEqual(carried["portal_type"]["News Item"], 2)
        # a type's count stays what choosing that type would find
        page = self.page("SearchableText=harbor&portal_type:list=News+Item&advanced_search=True")
        self.assertEqual(page.cssselect("#search-results-number")[0].text_content(), "2")
        self.assertEqual(self.counts(page, "portal_type")["Document"], "5")
        # a date chosen limits the type counts, not its own
        since = quote("2100-01-01T00:00:00")
        page = self.page(f"SearchableText=harbor&created.query:record:date={since}&created.range:record=min")
        self.assertEqual(self.counts(page, "portal_type")["Document"], "0")
        self.assertEqual(self.counts(page, "created")["ever"], "7")

    def test_snippets(self):
        page = self.page("SearchableText=harbor")
        snippets = page.cssselect("#search-results .pgcatalog-snippet")
        self.assertEqual(len(snippets), 7)
        marks = {mark.text_content().lower() for s in snippets for mark in s.cssselect("mark")}
        self.assertEqual(marks, {"harbor"})
        news = [s for s in snippets if "boats" in s.text_content()][0]
        # the text's own markup arrives as text: only <mark> is markup
        self.assertEqual([e.tag for e in news.iter()][1:], ["mark"] * len(news.cssselect("mark")))
        self.assertNotIn("quasarfluxion", lxml.html.tostring(page, encoding="unicode"))

    def test_did_you_mean(self):
        for user in (None, "erin"):
            page = self.page("SearchableText=lanturn", user)
            suggestion = page.cssselect(".pgcatalog-suggestion a")[0]
            self.assertEqual(suggestion.text_content(), "lantern")
            self.assertIn("SearchableText=lantern", suggestion.get("href"))
            # a private page's word is never suggested to who may not see it
            self.assertEqual(self.page("SearchableText=quasarfluxio", user).cssselect(".pgcatalog-suggestion"), [])
        page = self.page("SearchableText=quasarfluxio", SITE_OWNER_NAME)
        self.assertEqual(page.cssselect(".pgcatalog-suggestion a")[0].text_content(), "quasarfluxion")
        # a search that finds enough gets none
        self.assertEqual(self.page("SearchableText=harbor").cssselect(".pgcatalog-suggestion"), [])

    def test_without_text(self):
        page = self.page("portal_type:list=Document&advanced_search=True")
        self.assertEqual(page.cssselect("#search-results-number")[0].text_content(), "6")
        self.assertEqual(page.cssselect(".pgcatalog-snippet"), [])
        self.assertEqual(len(page.cssselect(".croppedDescription")), 0)
        self.assertEqual(self.counts(page, "portal_type")["News Item"], "2")
        page = self.page("")
        self.assertEqual(page.cssselect(".pgcatalog-suggestion"), [])

    def test_bad_input(self):
        """What Plone's page shows for text its parser refuses or nobody
        types: no results, no counts or suggestion that fail the page."""
        for text in ("(", '" OR', "AND", "*", " ".join(["word"] * 600), "\x00"):
            page = self.page("SearchableText=" + quote(text))
            self.assertTrue(page.cssselect("#search-results"), text[:20])
        page = self.page("SearchableText=harbor&created=nonsense")
        self.assertEqual(page.cssselect("#search-results-number")[0].text_content(), "7")
