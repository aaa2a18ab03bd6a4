"""Snippets (``brain.snippet()``): a passage of the text the catalog
indexed around the words a search matched, marked, HTML-escaped first.
"""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import logout
from plone.app.textfield.value import RichTextValue
from plone.pgcatalog.connection import storage_dsn

import psycopg
import re
import transaction


FILLER = " ".join(f"filler{i}" for i in range(120))

PAGES = {
    "markup": (
        "Markup <b>river</b> & stones",
        "A page whose text holds markup",
        "<p>Before &lt;script&gt;alert('river')&lt;/script&gt; the river bank.</p>",
    ),
    "far": (
        "Far page",
        "Its match is far into its text",
        f"<p>{FILLER} then the Rivers meet the copper stone at last. {FILLER}</p>",
    ),
    "accents": ("Café page", "Accents folded as the index folds them", "<p>Un Café près de la Rivière.</p>"),
    "plain": ("Plain page", "Nothing to find here", "<p>Only meadow and lantern.</p>"),
}


def marked(html: str) -> list[str]:
    return re.findall(r"<mark>(.*?)</mark>", html)


class SnippetTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        for ident, (title, description, body) in PAGES.items():
            page = api.content.create(
                container=self.portal,
                type="Document",
                id=ident,
                title=title,
                description=description,
                text=RichTextValue(body, "text/html", "text/x-html-safe"),
            )
            api.content.transition(obj=page, transition="publish")
        for i in range(12):
            page = api.content.create(
                container=self.portal, type="Document", id=f"many-{i}", title=f"River number {i}"
            )
            api.content.transition(obj=page, transition="publish")
        transaction.commit()

    def snippets(self, **query) -> dict[str, str | None]:
        return {brain.getId: brain.snippet() for brain in self.catalog(**query)}

    def test_the_matched_words_marked_and_the_text_escaped(self):
        found = self.snippets(SearchableText="river")
        snippet = found["markup"]
        self.assertIn("&lt;script&gt;alert(&#x27;<mark>river</mark>&#x27;)&lt;/script&gt;", snippet)
        self.assertIn("Markup &lt;b&gt;<mark>river</mark>&lt;/b&gt; &amp; stones", snippet)
        self.assertNotIn("<script>", snippet)
        self.assertNotIn("<b>", snippet)
        # only <mark> is markup
        self.assertEqual(re.findall(r"<(/?\w+)", snippet), ["mark", "/mark"] * 3)

    def test_a_passage_around_a_match_far_into_the_text(self):
        snippet = self.snippets(SearchableText="rivers OR copper")["far"]
        self.assertTrue(snippet.startswith("… ") and snippet.endswith(" …"), snippet)
        self.assertEqual(marked(snippet), ["Rivers", "copper"])
        self.assertLess(len(snippet), 260)
        self.assertNotIn("filler100 ", snippet)  # (the start of the text is far before)
        # no word cut in two at either end
        words = snippet.strip("… ").split()
        self.assertTrue(re.fullmatch(r"filler\d+|then", words[0]), words[0])

    def test_globs_phrases_and_folded_letters(self):
        self.assertEqual(marked(self.snippets(SearchableText="cop*")["far"]), ["copper"])
        self.assertEqual(marked(self.snippets(SearchableText='"copper stone"')["far"]), ["copper", "stone"])
        # Plone's lexicon folds accents and case: "cafe riviere" finds and marks "Café", "Rivière"
        found = self.snippets(SearchableText="cafe riviere")["accents"]
        self.assertEqual(marked(found), ["Café", "Café", "Rivière"])  # its title, then its text
        # a NOT part is not marked
        self.assertEqual(marked(self.snippets(SearchableText="copper -meadow")["far"]), ["copper"])
        # as people type
        found = self.snippets(SearchableText={"query": "copper sto", "as_you_type": True})
        self.assertEqual(marked(found["far"]), ["copper", "stone"])

    def test_other_text_indexes_quote_their_metadata(self):
        self.assertEqual(self.snippets(Title="cafe")["accents"], "<mark>Café</mark> page")

    def test_none_without_a_text_query(self):
        self.assertEqual(set(self.snippets(portal_type="Document").values()), {None})

    def test_a_page_reads_its_texts_at_once(self):
        results = self.catalog(SearchableText="river", sort_on="id", b_size=10)
        snippets = [brain.snippet() for brain in results]
        self.assertEqual(len(snippets), 10)
        self.assertTrue(all(marked(s) for s in snippets), snippets)
        self.assertEqual(results.text_queries, 1)
        # an unbatched result too, a window at a time
        results = self.catalog(SearchableText="river")
        self.assertEqual(len([brain.snippet() for brain in results]), len(results))
        self.assertEqual(results.text_queries, 1)

    def test_a_size(self):
        brain = self.catalog(SearchableText="copper")[0]
        self.assertLess(len(brain.snippet(60)), len(brain.snippet(400)))
        for bad in (0, -1, 10**6, "200", True):
            with self.assertRaises(ValueError, msg=repr(bad)):
                brain.snippet(bad)

    def test_this_transactions_text(self):
        page = self.portal["plain"]
        page.text = RichTextValue("<p>Now a lantern by the river.</p>", "text/html", "text/x-html-safe")
        page.reindexObject()
        self.assertIn("lantern by the <mark>river</mark>", self.snippets(SearchableText="river")["plain"])

    def test_what_is_kept(self):
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            kept = conn.execute(
                "SELECT indexed_text FROM object_state WHERE path = %s",
                ["/".join(self.portal["markup"].getPhysicalPath())],
            ).fetchone()[0]
        self.assertIn("Markup <b>river</b> & stones", kept)
        self.assertIn("<script>alert('river')</script>", kept)

    def test_as_anonymous(self):
        logout()
        self.assertIn("<mark>river</mark>", self.snippets(SearchableText="river")["markup"])

    def test_items_cataloged_before_the_text_was_kept(self):
        """Rows of a release before schema version 8 have no text: no
        snippet, until SearchableText is reindexed (docs/reference.md)."""
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            conn.execute("UPDATE object_state SET indexed_text = NULL WHERE indexed_text IS NOT NULL")
        transaction.abort()
        self.assertEqual(set(self.snippets(SearchableText="river").values()), {None})
        self.catalog.reindexIndex("SearchableText", None)
        transaction.commit()
        self.assertIn("<mark>river</mark>", self.snippets(SearchableText="river")["markup"])
