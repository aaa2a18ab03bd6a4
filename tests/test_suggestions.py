""""Did you mean" (``portal_catalog.suggestions``): other words for a text
query, from the words of what the user may see.

A private page holds a word no other item holds: it is suggested to its
owner and never to Anonymous or a Member.
"""

from helpers import CatalogTestCase
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import suggestions
from plone.pgcatalog.connection import storage_dsn
from Products.ZCatalog.ZCatalog import CatalogError
from unittest import mock

import psycopg
import transaction


PAGES = {
    "pg": ("PostgreSQL catalog", "The catalog keeps its words in PostgreSQL tables"),
    "pg-again": ("PostgreSQL replicas", "Replicas of PostgreSQL serve searches"),
    "posters": ("Posters", "Posters of the conference, printed"),
    "catalan": ("Catalan", "A page in Catalan about cataloguing"),
}


class SuggestionsTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        self.portal.portal_workflow.setChainForPortalTypes(("Document",), "simple_publication_workflow")
        for ident, (title, description) in PAGES.items():
            page = api.content.create(
                container=self.portal, type="Document", id=ident, title=title, description=description
            )
            api.content.transition(obj=page, transition="publish")
        secret = api.content.create(
            container=self.portal, type="Document", id="secret", title="Quasarfluxion", description="Private"
        )
        self.assertEqual(api.content.get_state(secret), "private")
        api.user.create(email="erin@example.org", username="erin", password="secret-secret")
        transaction.commit()  # the lexicon learns a row's words at its commit

    def suggested(self, text: str, **kw) -> list[str]:
        return self.catalog.suggestions(SearchableText=text, **kw)

    def test_a_misspelt_word_gets_the_sites_words(self):
        logout()
        self.assertEqual(self.suggested("postgress")[0], "postgresql")
        self.assertEqual(self.suggested("postgress", limit=1), ["postgresql"])
        # the other words stay as they were typed (folded as the index folds them)
        self.assertEqual(self.suggested("Catalog postgress")[0], "catalog postgresql")
        # each missing word replaced: best first, then the next ones
        both = self.suggested("catalogg postgress")
        self.assertEqual(both[0], "catalog postgresql")
        self.assertTrue(all(len(alternative.split()) == 2 for alternative in both), both)
        self.assertLessEqual(len(self.suggested("postgress", limit=2)), 2)

    def test_words_that_are_found_need_no_suggestion(self):
        logout()
        self.assertEqual(self.suggested("postgresql catalog"), [])
        self.assertEqual(self.suggested("post*"), [])  # a glob is no word to replace
        self.assertEqual(self.suggested("zzzzqqqq"), [])  # nothing like it

    def test_a_private_word_is_suggested_only_to_who_may_see_it(self):
        for who in ("anonymous", "erin"):
            logout() if who == "anonymous" else login(self.portal, who)
            self.assertNotIn("quasarfluxion", " ".join(self.suggested("quasarflux")), who)
            self.assertEqual(self.suggested("quasarflux"), [], who)
        login(self.layer["app"], SITE_OWNER_NAME)
        self.assertEqual(self.suggested("quasarflux"), ["quasarfluxion"])
        # the rest of the query limits the words as it limits the results
        self.assertEqual(self.suggested("quasarflux", review_state="published"), [])
        for who in ("anonymous", "owner"):
            logout() if who == "anonymous" else login(self.layer["app"], SITE_OWNER_NAME)
            # a rest that matches nothing holds no word
            self.assertEqual(self.suggested("quasarflux", portal_type=None), [], who)
            self.assertEqual(self.suggested("postgress", portal_type=None), [], who)

    def test_a_visible_holder_after_the_items_read_is_found(self):
        # a candidate's holders are read up to COUNTED, each tested against
        # the security terms; where none read is visible and more hold it,
        # the terms' index is asked: private holders first, a public one last
        for number in range(3):
            api.content.create(container=self.portal, type="Document", id=f"z{number}", title="Zeppelinhangar")
        transaction.commit()
        with mock.patch.object(suggestions, "COUNTED", 2):
            logout()
            self.assertEqual(self.suggested("zeppelinhanger"), [])  # private only
            login(self.layer["app"], SITE_OWNER_NAME)
            public = api.content.create(container=self.portal, type="Document", id="z-public", title="Zeppelinhangar")
            api.content.transition(obj=public, transition="publish")
            transaction.commit()
            logout()
            self.assertEqual(self.suggested("zeppelinhanger"), ["zeppelinhangar"])
            self.assertEqual(self.suggested("zeppelinhanger", portal_type="Folder"), [])

    def test_a_typed_word_held_by_a_visible_item_after_the_items_read_is_found(self):
        # a typed word is found at its first visible holder among those read,
        # else through the terms' index: private holders first, public last
        for number in range(3):
            api.content.create(container=self.portal, type="Document", id=f"z{number}", title="Zeppelinhangar")
        plural = api.content.create(container=self.portal, type="Document", id="z-plural", title="Zeppelinhangars")
        api.content.transition(obj=plural, transition="publish")
        transaction.commit()
        with mock.patch.object(suggestions, "COUNTED", 2):
            logout()
            self.assertEqual(self.suggested("zeppelinhangar"), ["zeppelinhangars"])  # held privately only
            login(self.layer["app"], SITE_OWNER_NAME)
            public = api.content.create(container=self.portal, type="Document", id="z-public", title="Zeppelinhangar")
            api.content.transition(obj=public, transition="publish")
            transaction.commit()
            logout()
            self.assertEqual(self.suggested("zeppelinhangar"), [])  # found: nothing to suggest

    def test_more_items_rank_first_among_equally_similar_words(self):
        logout()
        # "postgresql" (2 pages) and "posters" (1 page): ranked by similarity to what was typed
        ranked = self.suggested("posterz", limit=5)
        self.assertEqual(ranked[0], "posters")

    def test_bad_input_fails_clearly(self):
        for kw, message in (
            ({"SearchableText": "x", "limit": 0}, "positive integer"),
            ({"SearchableText": "x", "limit": "5"}, "positive integer"),
            ({"portal_type": "Document"}, "text index"),
            ({"SearchableText": ["a", "b"]}, "text typed"),
            ({"SearchableText": " ".join(f"word{n}" for n in range(21))}, "at most 20 words"),
        ):
            with self.assertRaisesRegex(CatalogError, message):
                self.catalog.suggestions(**kw)

    def test_odd_texts_get_nothing(self):
        for text in ("x" * 3000, "postgress " + "y" * 3000, "'\\'; SELECT 1; --", "AND OR NOT", ""):
            self.assertEqual(self.suggested(text), [], text[:40])

    def test_the_lexicon_has_a_trigram_index(self):
        with psycopg.connect(storage_dsn(self.portal)) as conn:
            found = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'pgcatalog_words_trigrams'"
            ).fetchone()
        self.assertIn("gin_trgm_ops", found[0])

    def test_without_pg_trgm_suggestions_say_why(self):
        dsn = storage_dsn(self.portal)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP EXTENSION pg_trgm CASCADE")  # and the lexicon's trigram index
        try:
            transaction.abort()
            with self.assertRaisesRegex(CatalogError, "pg_trgm"):
                self.suggested("postgress")
            self.assertEqual(len(self.catalog.searchResults(SearchableText="postgresql")), 2)  # searches work
        finally:
            transaction.abort()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                conn.execute(
                    "CREATE INDEX IF NOT EXISTS pgcatalog_words_trigrams ON pgcatalog_words USING gin (word gin_trgm_ops)"
                )
