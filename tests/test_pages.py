"""Plone's own pages, published through Zope, searching this catalog."""

from helpers import CatalogTestCase
from plone import api
from plone.app.contentlisting.interfaces import IContentListing
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone.testing.zope import Browser

import re
import transaction


class PagesTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(
            ("Document", "Folder"), "simple_publication_workflow"
        )
        folder = api.content.create(container=self.portal, type="Folder", id="guide", title="Field guide")
        api.content.transition(obj=folder, transition="publish")
        for i, (title, publish) in enumerate(
            [
                ("Catalog basics", True),
                ("Catalog internals", True),
                ("Catalog secrets", False),
                ("Weather", True),
            ]
        ):
            doc = api.content.create(container=folder, type="Document", id=f"page-{i}", title=title)
            if publish:
                api.content.transition(obj=doc, transition="publish")
        transaction.commit()
        self.browser = Browser(self.layer["app"])
        self.browser.handleErrors = False

    def test_results_adapt_to_content_listing(self):
        listing = IContentListing(self.catalog(portal_type="Document", sort_on="sortable_title"))
        self.assertEqual(
            [item.Title() for item in listing],
            ["Catalog basics", "Catalog internals", "Catalog secrets", "Weather"],
        )

    def search_results(self, url):
        """The titles listed by the search page's result list."""
        self.browser.open(url)
        html = self.browser.contents
        listing = html[
            html.index('<ol class="searchResults') : html.index(
                "</ol>", html.index('<ol class="searchResults')
            )
        ]
        return re.findall(r'<div class="result-title">\s*<a [^>]*>\s*([^<]*?)\s*</a>', listing)

    def test_search_page_as_anonymous(self):
        titles = self.search_results(
            self.portal.absolute_url() + "/@@search?SearchableText=catalog&sort_on=sortable_title"
        )
        self.assertEqual(titles, ["Catalog basics", "Catalog internals"])  # not the private one

    def test_search_page_as_owner_and_folder_listing(self):
        self.browser.addHeader("Authorization", f"Basic {SITE_OWNER_NAME}:{SITE_OWNER_PASSWORD}")
        titles = self.search_results(
            self.portal.absolute_url() + "/@@search?SearchableText=catalog&sort_on=sortable_title"
        )
        self.assertEqual(titles, ["Catalog basics", "Catalog internals", "Catalog secrets"])
        self.browser.open(self.portal.absolute_url() + "/guide/folder_contents")
        self.browser.open(self.portal.absolute_url() + "/guide")
        for title in ("Catalog basics", "Catalog internals", "Catalog secrets", "Weather"):
            self.assertIn(title, self.browser.contents)
        # global navigation is a catalog query too
        self.assertIn("Field guide", self.browser.contents)
