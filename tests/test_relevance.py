"""Relevance order, compared with ZCatalog's own scores.

Without ``sort_on`` a text query comes in order of ZCTextIndex's Okapi
BM25 scores.  The brains of both catalogs carry ``data_record_score_`` and
``data_record_normalized_score_``: they must be the same numbers for the
same documents, and the order must follow them.  Ties come in record id
order, and record ids differ between the catalogs, so ties are compared
as sets.
"""

from helpers import build_content
from helpers import EVERY_FREQUENCY
from helpers import Extra
from helpers import relpaths
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import registry as r
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.relevance import compact_word_counts_sql
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from Products.CMFCore.indexing import processQueue
from Products.ZCatalog.plan import PriorityMap
from zope.component.hooks import setSite

from unittest import mock

import psycopg
import transaction
import unittest


QUERIES = [
    {"SearchableText": "river"},
    {"SearchableText": "river stone"},
    {"SearchableText": "river OR stone"},
    {"SearchableText": "riv*"},
    {"SearchableText": "s*"},
    {"SearchableText": "s* OR copper"},
    # an OR adds up its parts: a word and a glob that stands for it, a glob twice
    {"SearchableText": "river OR riv* OR riv*"},
    {"SearchableText": "river -stone"},
    {"SearchableText": "river AND NOT (stone OR copper)"},
    {"SearchableText": '"copper willow"'},
    {"SearchableText": '"river river"'},
    {"SearchableText": "(river OR stone) AND copper"},
    {"SearchableText": 'copper OR "river stone" OR (meadow AND lantern)'},
    {"SearchableText": "river OR nosuchword"},
    # words and globs ANDed: the words' counts given, the globs' counted
    {"SearchableText": "river AND s*"},
    {"SearchableText": "stone AND c?pper AND r*"},
    # globs with a wildcard inside: ZCTextIndex's lexicon matches them as shell patterns
    {"SearchableText": "r?ver"},
    {"SearchableText": "st*ne OR cop?er"},
    {"SearchableText": "s?*a"},
    {"SearchableText": "0?5"},
    {"SearchableText": "river -st?ne"},
    {"SearchableText": "(l?ntern OR m*w) AND c*"},
    {"SearchableText": "ka??a OR zz?"},
    {"SearchableText": '"r?ver stone"'},
    {"SearchableText": ["river", "stone"]},
    {"Title": "forest"},
    {"Title": "forest OR river OR copper"},
    {"Description": "meadow OR lantern OR cloud"},
    {"SearchableText": "river OR stone", "Title": "stone OR copper"},
    {"SearchableText": "river OR stone", "portal_type": ["Document", "Folder"]},
    {"SearchableText": "river OR stone", "b_start": 2, "b_size": 5},
    {"SearchableText": "river OR stone", "sort_limit": 3},
    {"SearchableText": "river OR stone", "sort_on": "sortable_title"},
]


def scored(site, query, unrestricted=False):
    # ZCatalog orders the indexes of a query it has timed before by their
    # timings, which changes its scores (not their order): compare with the
    # order it uses for a query it has not seen
    PriorityMap.clear()
    setSite(site)
    catalog = site.portal_catalog
    search = catalog.unrestrictedSearchResults if unrestricted else catalog.searchResults
    results = search(dict(query))
    paths = relpaths(site, results)
    scores = [(b.data_record_score_, b.data_record_normalized_score_) for b in results]
    return paths, scores, len(results), results.actual_result_count


def assert_same_scores(test, app, query, what):
    """Both catalogs find the same documents with the same scores (ties in
    any order) and count them alike; ZCatalog's paths."""
    zpaths, zscores, *zlen = scored(app["zplone"], query)
    ppaths, pscores, *plen = scored(app["plone"], query)
    test.assertEqual(zlen, plen, what)
    test.assertEqual(
        sorted(zip(zscores, zpaths, strict=True)), sorted(zip(pscores, ppaths, strict=True)), what
    )
    return zpaths


class RelevanceTest(unittest.TestCase):
    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.pg, self.z = app["plone"], app["zplone"]
        for site in (self.pg, self.z):
            build_content(site, count=60)

    def compare(self, label, unrestricted=False):
        ranked = 0
        for query in QUERIES:
            zpaths, zscores, *zlen = scored(self.z, query, unrestricted)
            ppaths, pscores, *plen = scored(self.pg, query, unrestricted)
            what = f"{label}: {query!r}"
            self.assertEqual(zlen, plen, what)
            self.assertEqual(zscores, pscores, what)  # same scores, position by position
            if "b_size" not in query and "sort_limit" not in query:
                # the same documents with the same scores; ties in any order
                self.assertEqual(
                    sorted(zip(zscores, zpaths, strict=True)), sorted(zip(pscores, ppaths, strict=True)), what
                )
            if "sort_on" not in query:
                self.assertEqual(pscores, sorted(pscores, reverse=True), what)
                ranked += len({score for score, _ in pscores}) > 1
            else:
                self.assertEqual(zpaths, ppaths, what)
        self.assertGreater(ranked, 15, "too few queries rank their results in more than one score")

    def test_scores_as_manager(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        self.compare("manager")

    def test_scores_as_anonymous(self):
        logout()
        self.compare("anonymous")

    def test_scores_unrestricted(self):
        self.compare("unrestricted", unrestricted=True)

    def test_scores_see_their_own_transaction(self):
        """New, edited and deleted documents change N, the mean length and
        the document frequencies before the commit, as in ZCatalog."""
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            api.content.create(
                container=site,
                type="Document",
                id="long",
                title="River river river",
                # "stonewall" is a new word: "s*" expands to it before the commit
                description=" ".join(["stone"] * 40 + ["copper willow"] * 3 + ["stonewall"]),
            )
            doc = site["item-002"]
            doc.title = "River stone river copper"
            doc.reindexObject(idxs=["Title", "SearchableText"])
            api.content.delete(obj=site["item-004"])
            processQueue()
        self.compare("in the transaction")
        transaction.commit()
        self.compare("committed")


class GlobExpansionTest(unittest.TestCase):
    """A glob in a query ordered by relevance is compiled as the words the
    lexicon expands it to (expansions.py): the scores stay ZCatalog's, and
    a word new to the lexicon joins the expansion at the next search."""

    layer = DIFFERENTIAL_TESTING

    QUERIES = (
        {"SearchableText": "riv*"},
        {"SearchableText": "riv*", "b_start": 0, "b_size": 3},
        {"SearchableText": "stone AND riv*"},
        {"SearchableText": "cop?er OR riv*"},
        {"SearchableText": "stone AND NOT riv*"},
        {"SearchableText": "riv*", "portal_type": "Document"},
    )

    def setUp(self):
        app = self.layer["app"]
        login(app, SITE_OWNER_NAME)
        for site in (app["plone"], app["zplone"]):
            build_content(site, count=30)
        transaction.commit()

    def compare(self, label):
        app = self.layer["app"]
        for query in self.QUERIES:
            zpaths, zscores, *zlen = scored(app["zplone"], query)
            ppaths, pscores, *plen = scored(app["plone"], query)
            what = f"{label}: {query!r}"
            self.assertEqual(zlen, plen, what)
            self.assertEqual(zscores, pscores, what)  # position by position
            if "b_size" not in query:  # (ties in any order)
                self.assertEqual(
                    sorted(zip(zscores, zpaths, strict=True)), sorted(zip(pscores, ppaths, strict=True)), what
                )

    def held(self, words):
        """How many of our rows hold each of *words*."""
        catalog = self.layer["app"]["plone"].portal_catalog
        return [len(catalog.unrestrictedSearchResults(SearchableText=word)) for word in words]

    def test_globs_as_their_words(self):
        from plone.pgcatalog import expansions
        from plone.pgcatalog import search

        found = []
        words_of = search.words_of

        def counted(read, globs):
            words = words_of(read, globs)
            found.append(words)
            return words

        search.words_of = counted
        try:
            self.compare("one word")
            self.assertIn(("SearchableText", "riv*"), found[0])
            self.assertEqual(found[0][("SearchableText", "riv*")], ("river",))
            app = self.layer["app"]
            login(app, SITE_OWNER_NAME)
            for site in (app["plone"], app["zplone"]):
                setSite(site)
                api.content.create(container=site, type="Document", id="bank", title="Riverbank river")
                api.content.create(container=site, type="Document", id="rive", title="Rivet stone")
                processQueue()  # (the queue goes to the current site's catalog)
            transaction.commit()
            found.clear()
            self.compare("two words more")
            self.assertEqual(
                found[0][("SearchableText", "riv*")], ("rive", "river", "riverbank", "rivet")
            )  # (an id is searchable text)
            for n in range(expansions.MAX_WORDS):
                for site in (app["plone"], app["zplone"]):
                    setSite(site)
                    api.content.create(container=site, type="Document", id=f"r{n}", title=f"Riv{n}x stone")
                    processQueue()
            transaction.commit()
            found.clear()
            given = []
            document_frequencies = search.document_frequencies

            def giving(tool, site, index, words, globs):
                answer = document_frequencies(tool, site, index, words, globs)
                given.append((words, globs, answer))
                return answer

            with mock.patch.object(search, "document_frequencies", giving):
                self.compare("too many words: the glob stays one in the statement")
                # (read all the same, for the text's cells: test_cells.py)
                riv = found[0][("SearchableText", "riv*")]
                self.assertEqual(len(riv), 4 + expansions.MAX_WORDS)
                # its words' dfs given to the statement that scores every match
                self.assertIn(([], [riv], ([], [self.held(riv)])), given)
                for site in (app["plone"], app["zplone"]):  # (brought up to date)
                    setSite(site)
                    api.content.create(container=site, type="Document", id="more", title="Riv0x rivet")
                    processQueue()
                transaction.commit()
                given.clear()
                self.compare("a commit later")
                self.assertIn(([], [riv], ([], [self.held(riv)])), given)
                self.assertIn(2, self.held(riv))
        finally:
            search.words_of = words_of


class TextOfNoneTest(unittest.TestCase):
    """A deliberate difference (docs/reference.md, "Relevance order").

    ZCTextIndex leaves a document's words as they were when none of its
    attributes gives a string any more (``index_object`` returns before
    indexing); this catalog drops them.  An empty string empties the words
    in both.
    """

    layer = DIFFERENTIAL_TESTING

    def found(self, site, notes):
        setSite(site)
        catalog = site.portal_catalog
        doc = site["noted"]
        doc.notes = notes
        doc.reindexObject()
        transaction.commit()
        return len(catalog.unrestrictedSearchResults(notes="zebra")), len(
            catalog.unrestrictedSearchResults(notes="giraffe")
        )

    def test_words_of_a_text_that_became_none(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        app = self.layer["app"]
        for site in (app["plone"], app["zplone"]):
            setSite(site)
            site.portal_catalog.addIndex(
                "notes",
                "ZCTextIndex",
                Extra(doc_attr="notes", lexicon_id="plone_lexicon", index_type="Okapi BM25 Rank"),
            )
            api.content.create(container=site, type="Document", id="noted", title="Noted")
            transaction.commit()
        for site in (app["plone"], app["zplone"]):
            self.assertEqual(self.found(site, "zebra crossing"), (1, 0))
            self.assertEqual(self.found(site, "giraffe"), (0, 1))
        # None: ZCatalog keeps the giraffe, this catalog drops it
        self.assertEqual(self.found(app["zplone"], None), (0, 1))
        self.assertEqual(self.found(app["plone"], None), (0, 0))
        # an empty string empties both
        for site in (app["plone"], app["zplone"]):
            self.assertEqual(self.found(site, "giraffe"), (0, 1))
            self.assertEqual(self.found(site, ""), (0, 0))


FOLDED = [
    "Straße café",
    "STRASSE",
    "strasse",
    "straße",
    "Cafe",
    "CAFÉ",
    "école",
    "ECOLE",
    "naïve",
    "naive",
    "Øresund",
    "oresund",
    "ﬁnance",
    "stra*",
    "caf?",
]


class FoldingTest(unittest.TestCase):
    """Words fold as Plone's lexicon folds them (case, accents, ß), on
    both sides of the search: what ZCatalog finds, this catalog finds."""

    layer = DIFFERENTIAL_TESTING

    def test_folding_as_plones_lexicon(self):
        app = self.layer["app"]
        login(app, SITE_OWNER_NAME)
        texts = ("Straße nach École", "Café naïve", "ÉCOLE STRASSE", "Øresund ﬁnance", "plain words")
        for site in (app["plone"], app["zplone"]):
            setSite(site)
            for number, text in enumerate(texts):
                api.content.create(container=site, type="Document", id=f"t{number}", title=text)
            transaction.commit()
        found_some = 0
        for text in FOLDED:
            for index in ("SearchableText", "Title"):
                query = {index: text}
                found_some += bool(assert_same_scores(self, app, query, query))
        self.assertGreater(found_some, 2 * len(FOLDED) * 0.6)


class FrequenciesTest(unittest.TestCase):
    """A word's frequency is its number of positions in the tsvector,
    except where PostgreSQL keeps fewer (at most 256 a word, none past
    16,383): the row's word counts hold those.  Rows that hold every
    frequency (an older release's) score the same, and the upgrade drops
    what positions tell."""

    layer = DIFFERENTIAL_TESTING

    QUERIES = [
        {"SearchableText": "river"},
        {"SearchableText": "stone"},
        {"SearchableText": "filler"},
        {"SearchableText": "riv*"},
        {"SearchableText": "s* OR fil*"},
        {"SearchableText": '"copper river"'},  # (no phrase past position 16,383: reference.md)
        {"SearchableText": "river OR copper"},
        {"Description": "river OR stone"},
        {"Title": "willow"},
    ]

    def compare(self, label):
        for query in self.QUERIES:
            assert_same_scores(self, self.layer["app"], query, f"{label}: {query!r}")

    def test_frequencies_positions_do_not_tell(self):
        app = self.layer["app"]
        login(app, SITE_OWNER_NAME)
        texts = {
            "many": ("Willow", "river " * 300 + "stone"),  # 300 > 256 positions
            # past position 16,383 PostgreSQL keeps one: stone 3, river 2
            "long": ("Willow copper", "filler " * 16400 + "stone river stone river stone"),
            "plain": ("Copper", "river stone copper river"),
            "short": ("Stone", "stone"),
        }
        for site in (app["plone"], app["zplone"]):
            setSite(site)
            for id_, (title, text) in texts.items():
                api.content.create(container=site, type="Document", id=id_, title=title, description=text)
            transaction.commit()
        self.compare("positions")
        # a phrase past position 16,383: ZCatalog finds it, a tsvector has no such positions
        phrase = {"SearchableText": '"stone river"'}
        self.assertEqual(scored(app["zplone"], phrase)[0], ["/long"])
        self.assertEqual(scored(app["plone"], phrase)[0], [])
        counts = "SELECT path, word_counts FROM object_state WHERE word_counts IS NOT NULL ORDER BY zoid"
        with psycopg.connect(storage_dsn(app["plone"])) as conn:
            rows = dict(conn.execute(counts).fetchall())
            self.assertEqual(rows["/plone/many"]["SearchableText"][1], {"river": 300})
            self.assertEqual(rows["/plone/long"]["Description"][1], {"filler": 16400, "stone": 3, "river": 2})
            self.assertEqual(rows["/plone/plain"]["SearchableText"][1], {})
            conn.execute(EVERY_FREQUENCY)
            self.assertTrue(conn.execute(counts).fetchall()[0][1]["SearchableText"][1])
        self.compare("every frequency stored")
        texts = [d for d in r.index_defs(app["plone"].portal_catalog).values() if d.kind == r.TEXT]
        with psycopg.connect(storage_dsn(app["plone"])) as conn:
            conn.execute(compact_word_counts_sql(texts))
            self.assertEqual(dict(conn.execute(counts).fetchall()), rows)
        self.compare("compacted")

    def test_occurrences_as_positions_tell(self):
        """``pgcatalog_occurrences`` (read off ``ts_rank``) is the number of
        positions ``pgcatalog_frequency`` counts, for every word of every
        row, 0 for a word a row does not hold, and a weighted position
        (a value it has not listed) falls back to counting."""
        app = self.layer["app"]
        build_content(app["plone"])
        login(app, SITE_OWNER_NAME)
        setSite(app["plone"])
        for n in (1, 2, 3, 17, 255, 256, 300):
            api.content.create(
                container=app["plone"], type="Document", id=f"n{n}", title="x", description="wood " * n
            )
        transaction.commit()
        every_word = """SELECT count(*), count(*) FILTER (WHERE pgcatalog_occurrences(searchable_text, u.lexeme,
                                quote_literal(u.lexeme)::tsquery) IS DISTINCT FROM cardinality(u.positions)),
                               count(DISTINCT cardinality(u.positions))
                          FROM object_state, unnest(searchable_text) AS u WHERE searchable_text IS NOT NULL"""
        with psycopg.connect(storage_dsn(app["plone"])) as conn:
            words, wrong, frequencies = conn.execute(every_word).fetchone()
            self.assertGreater(words, 300)
            self.assertEqual(wrong, 0)
            self.assertGreaterEqual(frequencies, 7)
            for vector, expected in (
                ("'a':1 'w':3,5,9", 3),
                ("'a':1", 0),
                ("'a':1 'w':3A,5", 2),  # weighted: counted
                ("'w':" + ",".join(str(i) for i in range(1, 257)), 256),
            ):
                got = conn.execute(
                    "SELECT pgcatalog_occurrences(%s::tsvector, 'w', '''w'''::tsquery)", [vector]
                ).fetchone()[0]
                self.assertEqual(got, expected, vector)


# (our query's text, as typed; ZCatalog's query of the same meaning)
AS_TYPED = [
    ("riv", "riv*"),
    ("river sto", "river AND sto*"),
    ("river stone ", "river AND stone"),
    ("  Copper   WIL", "copper AND wil*"),
    ('"river st', "river AND st*"),
    ("river AND st", 'river AND "and" AND st*'),
    ("stone -riv", "stone AND riv*"),
    ("s", "s*"),
    ("st*ne", "st AND ne*"),
    ("r?ver cop", "r AND ver AND cop*"),
]


class AsYouTypeTest(unittest.TestCase):
    """``as_you_type`` and ``sort_on="relevance"``: what ZCatalog finds for
    the same words written in its query language, in its order."""

    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.pg, self.z = app["plone"], app["zplone"]
        for site in (self.pg, self.z):
            build_content(site, count=60)
        logout()

    def test_the_last_word_is_a_prefix(self):
        found = 0
        for typed, stock in AS_TYPED:
            for extra in ({}, {"sort_on": "relevance"}, {"portal_type": "Document"}):
                ours = {"SearchableText": {"query": typed, "as_you_type": True}, **extra}
                zcatalog = {"SearchableText": stock, **{k: v for k, v in extra.items() if k != "sort_on"}}
                what = f"{typed!r} {extra!r}"
                zpaths, zscores, *zlen = scored(self.z, zcatalog)
                ppaths, pscores, *plen = scored(self.pg, ours)
                self.assertEqual(zlen, plen, what)
                self.assertEqual(zscores, pscores, what)
                self.assertEqual(
                    sorted(zip(zscores, zpaths, strict=True)), sorted(zip(pscores, ppaths, strict=True)), what
                )
                found += bool(ppaths)
        self.assertGreater(found, 15, "too few of the queries find anything")

    def test_as_a_form_sends_it(self):
        for flag, stock in (
            ("1", "river AND sto*"),
            ("true", "river AND sto*"),
            ("0", "river sto"),
            ("", "river sto"),
        ):
            ours = scored(self.pg, {"SearchableText": {"query": "river sto", "as_you_type": flag}})
            self.assertEqual(ours, scored(self.pg, {"SearchableText": stock}), flag)
        self.assertTrue(scored(self.pg, {"SearchableText": "river", "SearchableText_as_you_type": True})[0])
        with self.assertRaisesRegex(ValueError, "as_you_type.*true or false"):
            scored(self.pg, {"SearchableText": {"query": "river", "as_you_type": "maybe"}})

    def test_nothing_typed(self):
        for typed in ("", "   ", "* ?", '"'):
            self.assertEqual(scored(self.pg, {"SearchableText": {"query": typed, "as_you_type": True}})[2], 0)

    def test_relevance_by_name(self):
        text = {"SearchableText": "river OR stone"}
        by_name = scored(self.pg, {**text, "sort_on": "relevance", "sort_order": "reverse"})
        self.assertEqual(by_name, scored(self.pg, text))
        self.assertEqual(by_name[1], sorted(by_name[1], reverse=True))
        # through CMFPlone's keywords too (its filter of sort_on names)
        self.assertEqual(
            relpaths(self.pg, self.pg.portal_catalog.searchResults(sort_on="relevance", **text)), by_name[0]
        )
        # without a text query, ZCatalog's order without sort_on
        plain = {"portal_type": "Document"}
        self.assertEqual(
            sorted(scored(self.pg, {**plain, "sort_on": "relevance"})[0]), sorted(scored(self.z, plain)[0])
        )
        with self.assertRaisesRegex(Exception, "relevance.*alone"):
            scored(self.pg, {**text, "sort_on": ["relevance", "sortable_title"]})
        # stock ZCatalog has no such order: an unknown index
        with self.assertRaisesRegex(Exception, "Unknown sort_on index"):
            scored(self.z, {**text, "sort_on": "relevance"})
