"""The best matches of a search for a word, for words ANDed, for globs
and words ORed, phrases and NOT, read from the full text's cells
(plone.pgcatalog.cells) instead of scoring every match.

The answer must be ZCatalog's (scores, order, lengths; ties, whose record
ids differ between the catalogs, as sets) and exactly that of the
statement that scores every match (ties by record id included), for
every user, with the query's other criteria, on pages, past the first
rows, and where the walk gives up.
"""

from helpers import relpaths
from test_relevance import scored
from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import SITE_OWNER_NAME
from plone.pgcatalog import cells
from plone.pgcatalog import registry as r
from plone.pgcatalog import counts
from plone.pgcatalog import frequencies
from plone.pgcatalog import kept
from plone.pgcatalog import search
from plone.pgcatalog import tops
from plone.pgcatalog.testing import DIFFERENTIAL_TESTING
from Products.CMFCore.indexing import processQueue
from unittest import mock
from zope.component.hooks import setSite

import contextlib
import random
import transaction
import unittest


FILLER = ("amber", "birch", "cedar", "delta", "ember", "fjord", "glade", "heron", "inlet", "juniper")

QUERIES = [
    {"SearchableText": "quartz"},
    {"SearchableText": {"query": "quartz"}},
    {"SearchableText": "Quartz", "portal_type": "Document"},
    {"SearchableText": "quartz", "Subject": "kept"},
    {"SearchableText": "quartz", "path": "shelf"},  # (below the site searched)
    {"SearchableText": "quartz", "review_state": "published"},
    {"SearchableText": "quartz", "b_start": 0, "b_size": 5},
    {"SearchableText": "quartz", "b_start": 5, "b_size": 5},
    {"SearchableText": "quartz", "b_start": 70, "b_size": 10},
    {"SearchableText": "nosuchword"},
    {"SearchableText": "amber"},  # every document holds it
]

PAGE = {"b_start": 0, "b_size": 10}
WORDS = [  # (pages, as the search box asks for them)
    {"SearchableText": "quartz topaz", **PAGE},
    {"SearchableText": "topaz AND quartz", **PAGE},
    {"SearchableText": "quartz AND amber", **PAGE},  # (amber: in every document)
    {"SearchableText": "Quartz topaz", "portal_type": "Document", **PAGE},
    {"SearchableText": "quartz topaz", "review_state": "published", **PAGE},
    {"SearchableText": "quartz topaz", "path": "shelf", **PAGE},
    {"SearchableText": "quartz topaz", "b_start": 0, "b_size": 5},
    {"SearchableText": "quartz topaz", "b_start": 5, "b_size": 5},
    {"SearchableText": "quartz topaz", "b_start": 0, "b_size": 50},
    {"SearchableText": "quartz AND nosuchword", **PAGE},
    {"SearchableText": "quartz AND topaz AND amber", **PAGE},  # (three common: amber tested)
    {"SearchableText": "topaz AND birch AND quartz", "review_state": "published", **PAGE},
    {"SearchableText": "quartz AND NOT topaz", **PAGE},  # (NOT scores nothing)
    {"SearchableText": '"quartz amber"', **PAGE},  # (a phrase scores its words)
    {"SearchableText": '"amber quartz" AND NOT topaz', "review_state": "published", **PAGE},
]
RARE = {  # word: (every so many documents, from the one numbered, times)
    "quarry": (23, 0, 2),
    "quartzite": (31, 5, 5),
    "quasar": (70, 12, 1),
    "quaver": (29, 3, 1),
    "quay": (37, 8, 2),
    "quail": (41, 9, 1),
    "quake": (43, 2, 3),
    "quaff": (47, 4, 1),
    "qualm": (53, 6, 1),
    "topazine": (37, 3, 3),
}
"""Words held by four documents or fewer ("qua*": quartz and nine of
them, more than a glob is compiled as)."""
GLOBS = [  # (as Plone 6.1 and 6.2 send what is typed)
    {"SearchableText": "qua*", **PAGE},
    {"SearchableText": "quartz*", **PAGE},
    {"SearchableText": "topaz qua*", **PAGE},
    {"SearchableText": "topa* AND qua*", **PAGE},
    {"SearchableText": "quartz OR topaz", **PAGE},
    {"SearchableText": "quartz OR quay OR topa*", **PAGE},
    {"SearchableText": "topa* AND quak*", **PAGE},  # (every match holds quake: read first)
    {"SearchableText": "quartz AND topa* AND quak*", **PAGE},  # (three words typed, one rare)
    {"SearchableText": "topaz quartz quay", "review_state": "published", **PAGE},
    {"SearchableText": "Qua*", "portal_type": "Document", **PAGE},
    {"SearchableText": "qua*", "review_state": "published", **PAGE},
    {"SearchableText": "topa* AND qua*", "path": "shelf", **PAGE},
    {"SearchableText": "qua*", "b_start": 5, "b_size": 5},
    {"SearchableText": "qua*", "b_start": 0, "b_size": 50},
    {"SearchableText": "qua* AND NOT topaz", **PAGE},
    {"SearchableText": '"quartz amber" AND quak*', **PAGE},  # (a phrase and a rare glob)
    {"SearchableText": "amber AND topa* AND qua*", **PAGE},  # (three parts, each common)
]


def build(site, seed=34, count=70):
    """Documents whose texts hold "quartz" from 0 to 40 times in lengths
    from 3 to 600 words, some a :data:`RARE` word; some texts alike (ties),
    some private."""
    rng = random.Random(seed)
    setSite(site)
    login(site.aq_parent, SITE_OWNER_NAME)
    site.portal_workflow.setChainForPortalTypes(("Document", "Folder"), "simple_publication_workflow")
    shelf = api.content.create(container=site, type="Folder", id="shelf", title="Shelf")
    api.content.transition(obj=shelf, transition="publish")
    texts = []
    for i in range(count):
        if texts and rng.random() < 0.2:
            text = rng.choice(texts)  # a tie
        else:
            length = rng.choice([3, 10, 40, 80, 150, 300, 600])
            quartz = rng.choice([0, 1, 1, 1, 2, 2, 3, 5, 8, 17, 40])
            topaz = rng.choice([0, 0, 1, 1, 2, 3, 6, 9, 20])
            words = [rng.choice(FILLER) for _ in range(length)] + ["quartz"] * quartz + ["topaz"] * topaz
            rng.shuffle(words)
            text = " ".join(words)
        texts.append(text)
        rare = [
            word for word, (step, first, times) in RARE.items() if i % step == first for _ in range(times)
        ]
        text = " ".join([text, *rare])
        doc = api.content.create(
            container=shelf if rng.random() < 0.4 else site,
            type="Document",
            id=f"doc-{i:03d}",
            title=f"Doc {i:03d}",
            description=text,
            subject=("kept",) if rng.random() < 0.5 else (),
        )
        if rng.random() < 0.7:
            api.content.transition(obj=doc, transition="publish")
    transaction.commit()


@contextlib.contextmanager
def walks():
    """Count the searches answered from the cells (a list of their lengths)."""
    answered = []

    def spy(*args, **kw):
        found = cells.best_rows(*args, **kw)
        if found is not None:
            answered.append(len(found))
        return found

    with mock.patch.object(search, "best_rows", spy):
        yield answered


@contextlib.contextmanager
def cells_asked():
    """The words whose cells' beginnings are asked for with the counts
    (a list of them)."""
    asked = []

    def spy(*args, **kw):
        asked.append(args[3])
        return tops.lengths_statement(*args, **kw)

    with mock.patch.object(search, "lengths_statement", spy):
        yield asked


def found(site, query):
    """``test_relevance.scored`` of *query*, a path in it below *site*."""
    if "path" in query:
        query = {**query, "path": "/".join([*site.getPhysicalPath(), query["path"]])}
    return scored(site, query)


def every_match_scored(site, query):
    """Our answer from the statement that scores every match."""
    with mock.patch.object(search, "_best_rows", lambda *args: None):
        return found(site, query)


class CellsTest(unittest.TestCase):
    layer = DIFFERENTIAL_TESTING

    def setUp(self):
        app = self.layer["app"]
        self.pg, self.z = app["plone"], app["zplone"]
        for site in (self.pg, self.z):
            build(site)
        # a word held by so few rows is scored whole on a real site; and
        # two words whose rows hold them together so seldom (a site of 70
        # rows of 3 to 600 words) would cross too many combinations
        for name, value in (
            ("FEW", 0),
            ("FEW_ALONE", 0),
            ("MAX_COMBINATIONS", 100_000),
            ("TESTED_MATCHES", 0),
        ):
            patched = mock.patch.object(cells, name, value)
            patched.start()
            self.addCleanup(patched.stop)
        counts._counts.clear()  # (a word's count decides the way: see the last tests)
        frequencies.clear()
        tops.clear()

    def compare(self, who, queries=QUERIES):
        with walks() as answered:
            for query in queries:
                what = f"{who}: {query!r}"
                kept.clear()  # (each walks: those reading the same are kept)
                before = len(answered)
                ours = found(self.pg, query)
                # (from the cells; the word nobody holds: its count)
                self.assertGreater(len(answered), before, f"{what}: not from the cells")
                self.assertEqual(ours, every_match_scored(self.pg, query), what)
                zpaths, zscores, *zlen = found(self.z, query)
                paths, scores, *lengths = ours
                self.assertEqual(lengths, zlen, what)
                self.assertEqual(scores, zscores, what)  # position by position
                self.assertEqual(
                    sorted(zip(scores, paths, strict=True)), sorted(zip(zscores, zpaths, strict=True)), what
                )
        return answered

    def test_as_manager(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        self.compare("manager")

    def test_a_cell_at_a_time(self):
        # (each statement reads the next cell: every stop is tested)
        login(self.layer["app"], SITE_OWNER_NAME)
        with mock.patch.object(cells, "FIRST_BATCH", 1), mock.patch.object(cells, "_GROWTH", 1):
            self.compare("a cell at a time")

    def test_as_anonymous(self):
        logout()
        self.compare("anonymous")

    def test_words_as_manager(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        self.compare("manager", WORDS)
        for phrase in WORDS[-2:]:  # (rows hold them: the phrase filters, not empties)
            self.assertTrue(found(self.pg, phrase)[0], phrase)

    def test_words_as_anonymous(self):
        logout()
        self.compare("anonymous", WORDS)

    def test_words_a_combination_at_a_time(self):
        # (the pages that fill up: the others cross every combination)
        login(self.layer["app"], SITE_OWNER_NAME)
        with mock.patch.object(cells, "FIRST_BATCH", 1), mock.patch.object(cells, "_GROWTH", 1):
            self.compare("a combination at a time", [*WORDS[:3], WORDS[10], WORDS[-1]])

    def test_the_part_tested_keeps_out_the_rows_without_it(self):
        # the part held by most rows is tested, not walked: the rows that
        # hold the others best but none of its words are no matches
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            for i in range(3):
                text = " ".join(["quartz topaz"] * (i + 2))
                api.content.create(
                    container=site, type="Document", id=f"short-{i}", title="S", description=text
                )
            transaction.commit()
        query = {"SearchableText": "quartz AND topaz AND (juniper OR heron)", "b_start": 0, "b_size": 50}
        self.compare("manager", [query])
        self.assertIn("/short-2", found(self.pg, {**query, "SearchableText": "quartz AND topaz"})[0])

    def test_a_part_tested_where_its_matches_are_expected_many(self):
        # (a tested part's walk costs more than scoring few matches whole)
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "quartz AND topaz AND amber", **PAGE}
        for least, walked in ((10_000, 0), (1, 1)):
            kept.clear()
            with mock.patch.object(cells, "TESTED_MATCHES", least), walks() as answered:
                self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
            self.assertEqual(len(answered), walked, least)

    def test_words_that_cross_too_many_combinations_are_scored_whole(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        query = WORDS[0]
        with mock.patch.object(cells, "MAX_COMBINATIONS", 3), walks() as answered:
            self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
        self.assertEqual(answered, [])

    def test_words_unbatched_past_the_page_or_four_parts_are_scored_whole(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        for query in (
            {"SearchableText": "quartz topaz"},
            {"SearchableText": "quartz topaz", "b_size": 51},
            {"SearchableText": "quartz AND topaz AND amber AND birch", **PAGE},
        ):
            with walks() as answered:
                self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
            self.assertEqual(answered, [], query)
        self.assertEqual(
            found(self.pg, {"SearchableText": "quartz topaz"})[1:],
            found(self.z, {"SearchableText": "quartz topaz"})[1:],
        )

    def test_globs_as_manager(self):
        # (the rare words are read first, quartz and topaz walked)
        login(self.layer["app"], SITE_OWNER_NAME)
        with mock.patch.object(cells, "FEW", 4):
            self.compare("manager", GLOBS)

    def test_globs_as_anonymous(self):
        logout()
        with mock.patch.object(cells, "FEW", 4):
            self.compare("anonymous", GLOBS)

    def test_globs_a_combination_at_a_time(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        with (
            mock.patch.object(cells, "FEW", 4),
            mock.patch.object(cells, "FIRST_BATCH", 1),
            mock.patch.object(cells, "_GROWTH", 1),
        ):
            self.compare("a combination at a time", GLOBS[:6])

    def test_globs_of_common_words_walk_each_set_of_them(self):
        # every word common: quartz alone, topaz alone, and both (OR); a
        # glob of three common words ANDed with one (a set of two or three)
        login(self.layer["app"], SITE_OWNER_NAME)
        self.compare(
            "every word common",
            [
                {"SearchableText": "quartz OR topaz", **PAGE},
                {"SearchableText": "quartz*", **PAGE},
                {"SearchableText": "topa* AND quartz", **PAGE},
                {"SearchableText": "topa* AND quartz", "b_start": 0, "b_size": 3},
            ],
        )

    def test_a_rare_part_asks_no_cells_of_the_common_ones(self):
        # every match holds quake (three rows): read first, and no cell of
        # topaz is walked, so where its cells begin is not asked for (at a
        # million rows the probe of a frequent word's classes took 30 ms)
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "topaz AND quake", **PAGE}
        with mock.patch.object(cells, "FEW", 4), cells_asked() as asked:
            found(self.pg, query)  # (its words counted: the next search knows them)
            kept.clear()  # (the page it found is kept)
            with walks() as answered:
                ours = found(self.pg, query)
            self.assertEqual(ours, every_match_scored(self.pg, query))
            self.assertEqual((len(answered), asked), (1, []))
            self.assertEqual(ours[1:], found(self.z, query)[1:])
            found(self.pg, {"SearchableText": "topaz AND quartz", **PAGE})
        self.assertIn("topaz", asked)  # (two common words: walked)

    def test_words_scored_whole_ask_no_cells(self):
        # a glob of ten common words is scored whole: where their cells
        # begin is not asked for (25 ms a frequent word at a million rows,
        # once a process)
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "amber AND qua*", **PAGE}
        found(self.pg, query)  # (its words counted: the next search knows them)
        with cells_asked() as asked, walks() as answered:
            ours = found(self.pg, query)
        self.assertEqual((answered, asked), ([], []))
        self.assertEqual(ours, every_match_scored(self.pg, query))

    def test_a_word_of_few_rows_is_counted_as_it_is_after_a_commit(self):
        # (its count brought up to date from the change log, as the common
        # words' are: its idf is in every match's score)
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "topaz AND quake", **PAGE}
        with mock.patch.object(cells, "FEW", 4):
            before = found(self.pg, query)
            for site in (self.pg, self.z):
                setSite(site)
                doc = site["doc-010"]  # (wherever it is: acquired)
                doc.setDescription(doc.Description() + " topaz quake")
                doc.reindexObject()
                transaction.commit()
            kept.clear()
            with walks() as answered:
                ours = found(self.pg, query)
            self.assertEqual(ours, every_match_scored(self.pg, query))
        self.assertEqual(len(answered), 1)
        self.assertNotEqual(ours[1], before[1])
        self.assertEqual(ours[1:], found(self.z, query)[1:])

    def test_globs_of_too_many_common_words_or_rare_rows_are_scored_whole(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        for query, patches in (
            ({"SearchableText": "qua*", **PAGE}, {}),  # (ten common words)
            ({"SearchableText": "qua*", **PAGE}, {"FEW": 4, "MAX_READ": 5}),
            ({"SearchableText": "quarry OR quasar", **PAGE}, {"FEW": 4}),  # (no common word)
            ({"SearchableText": "quartz qua*", **PAGE}, {"FEW": 4}),  # (quartz twice)
            ({"SearchableText": "qua* OR topaz", "b_start": 0, "b_size": 51}, {"FEW": 4}),
        ):
            with contextlib.ExitStack() as stack:
                for name, value in patches.items():
                    stack.enter_context(mock.patch.object(cells, name, value))
                found(self.pg, query)  # (its words counted: the next search knows them)
                answered = stack.enter_context(walks())
                ours = found(self.pg, query)
                self.assertEqual(ours, every_match_scored(self.pg, query), query)
            self.assertEqual(answered, [], query)
            self.assertEqual(ours[1:], found(self.z, query)[1:], query)

    def test_a_word_held_more_often_after_a_walk_opens_its_class(self):
        """Where each word's cells begin is remembered and brought up to
        date from the change log: a row that holds a word more often than
        any did before is found by the next walk."""
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "quartz topaz", "b_start": 0, "b_size": 3}
        for site in (self.pg, self.z):
            # (no rare frequencies: every row comes from the combinations)
            setSite(site)
            for doc in [
                b.getObject() for b in site.portal_catalog.unrestrictedSearchResults(SearchableText="topaz")
            ]:
                doc.setDescription("quartz topaz amber birch")
                doc.reindexObject()
            transaction.commit()
        # (the search above found where its cells began: a row that lost
        # the word leaves them there)
        tops.clear()
        with walks() as answered:
            self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
            (before,) = self.lengths("topaz")
            self.assertGreater(before[0], 0)  # (once in each row)
            self.assertEqual(before[1:], (0,) * (len(before) - 1))
            for site in (self.pg, self.z):
                setSite(site)
                site["doc-002"].setDescription("quartz " + " ".join(["topaz"] * 9) + " amber")
                site["doc-002"].reindexObject()
                transaction.commit()
            ours = found(self.pg, query)
            self.assertEqual(answered, [3, 3])
        self.assertEqual(ours[0][0].rsplit("/", 1)[-1], "doc-002")
        self.assertEqual(ours, every_match_scored(self.pg, query))
        self.assertEqual(ours[1], found(self.z, query)[1])
        (after,) = self.lengths("topaz")
        self.assertEqual(after[0], before[0])
        self.assertGreater(after[7], before[0])  # (9 times: class 8, in a longer text)
        self.assertEqual(after[1:7] + after[8:], (0,) * (len(after) - 2))

    def lengths(self, *words):
        """Where the words' cells begin (a statement after each commit)."""
        return tops.first_lengths(self.pg.portal_catalog, "/plone", self.text(), words)

    def text(self):
        return r.index_defs(self.pg.portal_catalog)["SearchableText"]

    def test_past_the_first_rows(self):
        # the first rows come from the cells, the rest from the statement
        # that scores every match, in the same order
        login(self.layer["app"], SITE_OWNER_NAME)
        with mock.patch.object(search, "MIN_ROWS", 4), walks() as answered:
            for query in ({"SearchableText": "quartz"}, {"SearchableText": "amber"}):
                results = self.pg.portal_catalog.searchResults(dict(query))
                self.assertEqual(results.row_queries, 0)
                paths = relpaths(self.pg, results)  # walks them all
                self.assertGreater(results.row_queries, 0)
                self.assertEqual(paths, every_match_scored(self.pg, query)[0])
                self.assertEqual(len(paths), len(results))
        self.assertEqual(answered, [4, 4])

    def test_a_walk_is_kept_until_what_it_reads_changes(self):
        """A page from the cells takes a statement per batch of cells: the
        next search asks only whether what it read changed, and walks
        again after a change to it."""
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "quartz", "b_start": 0, "b_size": 5}
        with walks() as answered:
            first = found(self.pg, query)
            transaction.begin()  # (the next request)
            self.assertEqual(found(self.pg, query), first)
            self.assertEqual(answered, [5])
            self.pg["doc-001"].setDescription(" ".join(["quartz"] * 40))
            self.pg["doc-001"].reindexObject()  # (wherever it is: acquired)
            transaction.commit()
            again = found(self.pg, query)
            self.assertEqual(answered, [5, 5])
        self.assertIn("/doc-001", [path.rsplit("/shelf", 1)[-1] for path in again[0]])
        self.assertEqual(again, every_match_scored(self.pg, query))

    def test_a_walk_that_reads_too_much_gives_up(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "quartz", "portal_type": "Document"}
        with mock.patch.object(cells, "MAX_READ", 3), walks() as answered:
            self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
        self.assertEqual(answered, [])

    def test_a_word_held_by_few_rows_is_scored_whole(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        query = {"SearchableText": "quartz"}
        with mock.patch.object(cells, "FEW_ALONE", 1000), walks() as answered:
            self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
            # its count remembered, the next search asks nothing first
            with mock.patch.object(search, "count_statement") as counting:
                self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
            counting.assert_not_called()
        self.assertEqual(answered, [])

    def test_a_word_alone_is_walked_past_fewer_rows_than_words_together(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        alone, together = {"SearchableText": "quartz", **PAGE}, {"SearchableText": "quartz topaz", **PAGE}
        with mock.patch.object(cells, "FEW", 1000), mock.patch.object(cells, "FEW_ALONE", 4):
            for query in (alone, together):
                found(self.pg, query)  # (its words counted: the next search knows them)
            kept.clear()
            with walks() as answered:
                ours = [found(self.pg, query) for query in (alone, together)]
            self.assertEqual(ours, [every_match_scored(self.pg, query) for query in (alone, together)])
        self.assertEqual(answered, [10])  # (the word alone; the two scored whole)
        self.assertEqual([answer[1:] for answer in ours], [found(self.z, q)[1:] for q in (alone, together)])

    def test_a_transaction_with_changes_of_its_own_scores_them(self):
        login(self.layer["app"], SITE_OWNER_NAME)
        for site in (self.pg, self.z):
            setSite(site)
            api.content.create(container=site, type="Document", id="new", title="Quartz quartz quartz quartz")
            processQueue()  # (ZCatalog's search would not see it yet)
        query = {"SearchableText": "quartz"}
        with walks() as answered:
            paths, scores, *lengths = found(self.pg, query)
        self.assertEqual(answered, [])
        self.assertIn("/new", paths)
        zpaths, zscores, *zlengths = found(self.z, query)
        self.assertEqual((scores, lengths), (zscores, zlengths))
        transaction.commit()
        with walks() as answered:
            self.assertEqual(found(self.pg, query), every_match_scored(self.pg, query))
        self.assertEqual(answered, [lengths[0]])


@contextlib.contextmanager
def vectors():
    """What changed since each glob's dfs were made, as each statement of
    them read it (``changes.NONE``, ``SOME``, ``ALL``)."""
    seen = []
    statement = frequencies.frequencies_statement

    def spy(*args):
        sql, params, made = statement(*args)

        def making(row):
            seen.append(row[3])
            return made(row)

        return sql, params, making

    with mock.patch.object(search, "frequencies_statement", spy):
        yield seen


class GlobFrequenciesTest(unittest.TestCase):
    """A glob of many words ("qua*": ten) has their dfs made as one answer,
    brought up to date from the change log after a commit, and shared
    with a process new to it."""

    layer = DIFFERENTIAL_TESTING
    query = {"SearchableText": "topa* AND qua*", **PAGE}
    compare = CellsTest.compare

    def setUp(self):
        CellsTest.setUp(self)
        login(self.layer["app"], SITE_OWNER_NAME)
        patched = mock.patch.object(cells, "FEW", 4)  # (the rare words read first)
        patched.start()
        self.addCleanup(patched.stop)

    def change(self):
        """In both catalogs: a document that holds two of the words more and
        one new to the glob's (counted alone), one that loses its rare
        ones, one deleted."""
        for site in (self.pg, self.z):
            setSite(site)
            api.content.create(
                container=site,
                type="Document",
                id="new",
                title="New",
                description="quasar quake quagga topaz amber",
            )
            changed = site.get("doc-003") or site["shelf"]["doc-003"]
            changed.setDescription("topaz birch")
            changed.reindexObject()
            api.content.delete(obj=site.get("doc-002") or site["shelf"]["doc-002"])
            transaction.commit()

    def dfs(self):
        words = sorted(w for w in (*RARE, "quartz", "quagga") if w.startswith("qua"))
        catalog = self.pg.portal_catalog
        text = r.index_defs(catalog)["SearchableText"]
        made = frequencies.remembered_frequencies(catalog, "/plone", text, words)
        with mock.patch.object(search, "_best_rows", lambda *args: None):
            held = [len(catalog.unrestrictedSearchResults(SearchableText=word)) for word in words]
        return made, held

    def test_brought_up_to_date_after_a_commit(self):
        with vectors() as seen:
            self.compare("before", [self.query])
            self.change()
            self.compare("after", [self.query])
            transaction.begin()
            self.compare("unchanged", [self.query])
        self.assertEqual(seen, ["all", "some", "none"])
        made, held = self.dfs()
        self.assertEqual(made, held)

    def test_a_process_new_to_them_brings_the_shared_ones_up_to_date(self):
        with vectors() as seen, mock.patch.object(frequencies, "SHARED_FROM", 1):
            self.compare("shared", [self.query])
            self.change()
            frequencies.clear()  # (a process new to them)
            counts._counts.clear()
            self.compare("new process", [self.query])
        self.assertEqual(seen, ["all", "some"])
        made, held = self.dfs()
        self.assertEqual(made, held)
