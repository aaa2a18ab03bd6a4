"""The text statistics Okapi BM25 reads: one row per text index, kept in
place by a trigger, read by its key.

They must equal a count over the catalog rows after any changes, however
many; reading them must not cost more after a transaction that changed
many rows; and the rows of differences an older release left are folded
once, when this release's schema is applied.  The lexicon (every word of
each text index, which globs expand to) holds every word of the rows,
whoever wrote them, and is filled from the rows when it is new.
"""

from helpers import CatalogTestCase
from plone import api
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.schema import LEXICON
from plone.pgcatalog.schema import TEXT_STATISTICS

import json
import psycopg
import transaction


# an index whose last document went keeps a row of zeros
STATS = (
    "SELECT index_name, documents, words FROM pgcatalog_text_stats WHERE documents <> 0 ORDER BY index_name"
)
RECOUNT = """SELECT key, count(*), sum((value ->> 0)::bigint)::bigint FROM object_state, jsonb_each(word_counts)
WHERE word_counts IS NOT NULL GROUP BY key ORDER BY key"""
READ = "SELECT documents, words FROM pgcatalog_text_stats WHERE index_name = 'SearchableText'"


class TextStatisticsTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        for i in range(3):
            api.content.create(
                container=self.portal,
                type="Document",
                id=f"text-{i}",
                title=f"River {i}",
                description="stone " * i,
            )
        transaction.commit()
        self.dsn = storage_dsn(self.portal)

    def tearDown(self):
        transaction.abort()

    def relevance(self) -> list[tuple[str, int]]:
        found = self.catalog(SearchableText="river OR stone")
        return [(b.getId, b.data_record_score_) for b in found]

    def test_statistics_are_the_count_of_the_catalog_rows_after_many_changes(self):
        size = "SELECT pg_relation_size('pgcatalog_text_stats') / current_setting('block_size')::int"
        with psycopg.connect(self.dsn) as conn:
            self.assertEqual(conn.execute(STATS).fetchall(), conn.execute(RECOUNT).fetchall())
            (pages,) = conn.execute(size).fetchone()
            # one transaction, by SQL (no catalog commit), that changes a
            # row's word counts 3,000 times
            conn.execute(
                """DO $$ BEGIN FOR i IN 1..3000 LOOP
                       UPDATE object_state SET word_counts = jsonb_set(word_counts, '{SearchableText,0}', to_jsonb(i % 7))
                        WHERE path LIKE '%/text-1';
                   END LOOP; END $$"""
            )
            conn.commit()
            stats = conn.execute(STATS).fetchall()
            self.assertEqual(stats, conn.execute(RECOUNT).fetchall())
            names = [name for (name,) in conn.execute("SELECT index_name FROM pgcatalog_text_stats")]
            self.assertEqual(len(names), len(set(names)))  # one row per index
            # the 3,000 changes left no row, nor row version, of their own
            # behind: the table and a read of it stay as small as they were
            self.assertLessEqual(conn.execute(size).fetchone()[0], pages + 1)
            self.assertLessEqual(self.pages_read(conn), 4)

    def pages_read(self, conn) -> int:
        (plan,) = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {READ}").fetchone()
        node = (plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]
        return node["Shared Hit Blocks"] + node["Shared Read Blocks"]

    def test_rows_of_differences_from_an_older_release_are_folded(self):
        before = self.relevance()
        self.assertTrue(before)
        every = "SELECT count(*) FROM pgcatalog_text_stats"
        with psycopg.connect(self.dsn) as conn:
            stats = conn.execute(STATS).fetchall()
            (rows,) = conn.execute(every).fetchone()
        # as releases before schema version 4 left them: no key, rows of
        # differences (DDL in a commit: the storage's snapshot holds locks)
        changes_for(self.catalog).ddl.extend(
            [
                "ALTER TABLE pgcatalog_text_stats DROP CONSTRAINT pgcatalog_text_stats_pkey",
                "UPDATE pgcatalog_text_stats SET documents = documents - 1, words = words - 5",
                "INSERT INTO pgcatalog_text_stats SELECT index_name, 1, 5 FROM pgcatalog_text_stats",
                "INSERT INTO pgcatalog_text_stats SELECT index_name, 0, 0 FROM pgcatalog_text_stats",
            ]
        )
        transaction.commit()
        try:
            with psycopg.connect(self.dsn) as conn:
                self.assertEqual(conn.execute(every).fetchone(), (4 * rows,))
            self.assertEqual(self.relevance(), before)  # searches add them up
        finally:
            changes_for(self.catalog).ddl.append(TEXT_STATISTICS)  # as the schema is applied at start
            transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            self.assertEqual(conn.execute(STATS).fetchall(), stats)
            key = "SELECT 1 FROM pg_constraint WHERE conname = 'pgcatalog_text_stats_pkey'"
            self.assertTrue(conn.execute(key).fetchone())
        self.assertEqual(self.relevance(), before)
        api.content.create(container=self.portal, type="Document", id="text-3", title="River 3")
        transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            self.assertEqual(conn.execute(STATS).fetchall(), conn.execute(RECOUNT).fetchall())


# every word a text index of a catalog row holds, as (index, word)
ROW_WORDS = """SELECT c.name, u.word FROM object_state, jsonb_object_keys(word_counts) AS c(name),
    unnest(tsvector_to_array(CASE WHEN c.name = 'SearchableText' THEN searchable_text
                                  ELSE (idx ->> c.name)::tsvector END)) AS u(word)
 WHERE word_counts IS NOT NULL"""
MISSING = f"SELECT * FROM ({ROW_WORDS}) AS held EXCEPT SELECT index_name, word FROM pgcatalog_words"


class LexiconTest(CatalogTestCase):
    """``pgcatalog_words``: every word of every text index, whoever wrote
    the row, so that a glob's words come from it."""

    def setUp(self):
        super().setUp()
        api.content.create(container=self.portal, type="Document", id="bank", title="River bank")
        transaction.commit()
        self.dsn = storage_dsn(self.portal)

    def tearDown(self):
        transaction.abort()

    def scores(self, text: str) -> list[tuple[str, int]]:
        return [(b.getId, b.data_record_score_) for b in self.catalog(SearchableText=text)]

    def test_every_word_of_the_rows_is_in_the_lexicon(self):
        doc = self.portal["bank"]
        doc.title = "Riverbank of willows"
        doc.reindexObject()
        transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            # a writer other than a catalog commit: the trigger adds its words too
            conn.execute(
                "UPDATE object_state SET searchable_text = searchable_text || 'riverboat:9'::tsvector"
                " WHERE path = %s",
                ["/".join(doc.getPhysicalPath())],
            )
            conn.commit()
            self.assertEqual(conn.execute(MISSING).fetchall(), [])
            words = {w for (w,) in conn.execute("SELECT word FROM pgcatalog_words WHERE word LIKE 'river%'")}
        # the word the edit replaced stays (as in ZCTextIndex's lexicon)
        self.assertEqual(words, {"river", "riverbank", "riverboat"})
        transaction.abort()  # a new snapshot
        # each expansion scores as the word alone
        self.assertEqual(self.scores("riverb*"), self.scores("riverbank OR riverboat"))
        self.assertEqual([name for name, _ in self.scores("riverbo*")], ["bank"])

    def test_a_new_lexicon_is_filled_from_the_rows(self):
        before = {text: self.scores(text) for text in ("r*", "riv*", "b?nk*")}
        self.assertTrue(all(before.values()))
        changes_for(self.catalog).ddl.append("DROP TABLE pgcatalog_words")
        transaction.commit()
        changes_for(self.catalog).ddl.append(LEXICON)  # as the schema is applied at start
        transaction.commit()
        with psycopg.connect(self.dsn) as conn:
            self.assertEqual(conn.execute(MISSING).fetchall(), [])
        self.assertEqual({text: self.scores(text) for text in before}, before)
