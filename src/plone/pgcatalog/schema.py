"""DDL: the catalog columns on ``object_state`` and one index per catalog index.

The columns, tables and functions (:func:`schema_sql`) are what every
read needs, so they are there before anything reads: an install or
upgrade creates them in its own transaction, ahead of its first read
(``connection.change_schema``); a Zope that starts on a database with the
catalog applies this release's version of them before its first request
(:func:`startup_schema`, through zodb-pgjsonb's deferred startup actions,
which run before a snapshot holds the table).  Expression indexes
come from the registry's own expressions, so the SQL the query builder
emits is exactly what the index was built on.  All indexes are partial
(``WHERE <expression> IS NOT NULL``): most rows of ``object_state`` are not
content.  Queries leave out ``idx IS NOT NULL`` when a clause implies it,
and statistics on every expression give the planner real row counts.
"""

from __future__ import annotations

from plone.pgcatalog import registry as r
from plone.pgcatalog import row
from functools import lru_cache
from typing import Any
from plone.pgcatalog.row import column_ddl
from plone.pgcatalog.values import text_literal

import hashlib
import psycopg
import re


__all__ = [
    "RECORD_SCHEMA_VERSION",
    "SHARED",
    "SHARED_TABLE",
    "SCHEMA_VERSION",
    "schema_version",
    "CATALOGED",
    "HAS_CATALOG_COLUMNS",
    "catalog_installed",
    "CATALOG_ROWS",
    "BUMP_COUNTER",
    "CHANGE_TRIGGERS",
    "NOTE_EVERYTHING",
    "generation_sql",
    "WORD_TRIGGERS",
    "LEXICON_TRIGGERS",
    "DEFERRED_NOW",
    "HOT_KEYS_INDEX",
    "ROWS",
    "drop_index_ddl",
    "index_ddl",
    "index_name",
    "schema_sql",
    "startup_schema",
    "type_expression",
]


CATALOGED = "idx IS NOT NULL"

SCHEMA_VERSION = 11
"""The version of the catalog's tables, columns and functions this
release builds; recorded in ``pgcatalog_schema`` (see :func:`schema_version`).
1: before the version was recorded; 3: the hot keys' typed columns are
filled and searches read them (``row.TYPED``); 4: one row of text
statistics per index, to which each transaction adds its changes at commit
(the run-time role needs UPDATE on ``pgcatalog_text_stats``: grant it
again); 5: rows keep only the word frequencies their tsvectors do not
tell (``pgcatalog_frequency``), compacted by the upgrade; 6: commits stamp
what they changed, and counts stand while what they read is unchanged
(``NOTE_CHANGES``, applied when Zope starts); 7: each text index's words
are kept in ``pgcatalog_words`` (:data:`LEXICON`; the run-time role
needs INSERT on it: grant it again); 8: rows keep the text their
SearchableText was made of (``indexed_text``), which snippets quote; 9:
the change log (``CHANGE_LOG``: the run-time role needs INSERT and
DELETE on ``pgcatalog_changes`` and ``pgcatalog_commits``, UPDATE on the
latter: grant it again), from which facet counts are brought up to date;
10: the full text's cells (``TEXT_CELLS``), from which a one-word search
reads its best matches without scoring every one (``cells``); 11: facet
counts made from every row are kept for every process (``SHARED_TABLE``:
the run-time role needs SELECT, INSERT, UPDATE and DELETE on
``pgcatalog_shared``: grant it again)."""

CATALOG_ROWS = "pgcatalog_rows"
ROWS = f"{CATALOG_ROWS} AS object_state"
"""The catalog rows in a statement's FROM clause, under the table's name so
that column references read the same; ``overlay.catalog_sql`` defines them
as the table, or the table with this transaction's changes laid over it."""


def schema_sql() -> str:
    """Columns and the fixed indexes (path, parent, SearchableText)."""
    return f"""
ALTER TABLE object_state
{column_ddl()};
-- Keep idx inline and uncompressed: PostgreSQL then moves the object state,
-- metadata and wide columns out of line first, and a search reads each row's
-- idx from the heap page, without fetching or decompressing anything.
ALTER TABLE object_state ALTER COLUMN idx SET STORAGE MAIN;
-- Metadata is JSON text: only Python reads it, and PostgreSQL would spend
-- more printing a JSONB value than fetching it.  (0.1.0.dev0 stored JSONB.)
DO $$ BEGIN
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = 'object_state'::regclass AND attname = 'meta')
       = 'jsonb'::regtype THEN
        ALTER TABLE object_state ALTER COLUMN meta TYPE TEXT USING meta::text;
    END IF;
END $$;
-- Columns read whole by searches and listings decompress ten times faster
-- with lz4 (metadata of 500 rows: 5 ms with pglz, 0.3 ms); a server built
-- without lz4 keeps its default.  Values written before keep theirs.
DO $$ BEGIN
    ALTER TABLE object_state ALTER COLUMN meta SET COMPRESSION lz4,
                             ALTER COLUMN object_provides SET COMPRESSION lz4,
                             ALTER COLUMN word_counts SET COMPRESSION lz4,
                             ALTER COLUMN indexed_text SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
CREATE INDEX IF NOT EXISTS pgcatalog_path ON object_state (path) WHERE path IS NOT NULL;
CREATE INDEX IF NOT EXISTS pgcatalog_parent ON object_state (parent_path, path_depth) WHERE parent_path IS NOT NULL;
CREATE TABLE IF NOT EXISTS pgcatalog_counter (id INTEGER PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO pgcatalog_counter VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
ALTER TABLE pgcatalog_counter ADD COLUMN IF NOT EXISTS stamps JSONB NOT NULL DEFAULT '{{}}';
CREATE TABLE IF NOT EXISTS pgcatalog_schema (id INTEGER PRIMARY KEY, version INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS pgcatalog_searchable_text ON object_state USING gin (searchable_text)
    {GIN_OPTIONS} WHERE searchable_text IS NOT NULL;
ALTER INDEX pgcatalog_searchable_text SET ({GIN_OPTION});  -- (built before schema version 6)
CREATE INDEX IF NOT EXISTS pgcatalog_cataloged ON object_state (zoid) WHERE {CATALOGED};
{HOT_KEYS_INDEX};
{EXPIRING};
{TEXT_STATISTICS}
{TEXT_CELLS}
{LEXICON}
{CHANGE_LOG}
{SHARED_TABLE}
{NOTE_CHANGES}"""


# A GIN index takes new entries into a pending list that every search
# reads through, until VACUUM (or the list's size limit, 4 MB by default)
# merges it into the index.  On a site where editors work and VACUUM
# seldom comes (autovacuum waits for a fifth of the table dead), each edit
# adds its document's words to that list: at 500 documents the full text
# search read 455 pages after a VACUUM and 758 after 300 edits, and took
# twice as long.  The smallest limit (64 kB) merges a few documents' words
# at a time: a write merges now and then, a search reads a few pages.
# (Only the full text's: the keyword indexes' lists cost their searches
# little, and merging them as often cost each edit more.)
GIN_OPTION = "gin_pending_list_limit=64"
GIN_OPTIONS = f"WITH ({GIN_OPTION})"


# One B-tree holds every hot key (registry.HOT_KEYS) and the path: a type's
# (and state's) items in record id order, with what a search filters them
# by.  Counting them, or finding the first of them that a user may see,
# reads this index alone (index-only, where the table's pages are all
# visible, as VACUUM leaves them).
HOT_KEYS_INDEX = (
    "CREATE INDEX IF NOT EXISTS pgcatalog_hot_keys ON object_state (portal_type, review_state, zoid) "
    "INCLUDE (allowed_roles_and_users, effective_start, effective_end, path) WHERE portal_type IS NOT NULL"
)


# The full text's *cells* (cells.best_rows): each word of a row's
# SearchableText under a key of its frequency's class and the row length's
# class, "<f class> <length class> <word>", in a GIN index.  The classes are
# width_bucket()s of the edges below (integer comparisons, the same in SQL
# and Python): bucket i holds [edge i-1, edge i - 1], 0 what lies below the
# first edge, the last everything from the last edge on.  A frequency the
# positions cannot tell is the row's word counts' (as pgcatalog_occurrences).
# A word that often in a row is rare: from RARE_FREQUENCY on, a frequency
# class is one cell whatever the length (length class 0).
FREQUENCY_EDGES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192, 256, 512, 1024)
RARE_FREQUENCY = 16


def _length_edges(last: int = 1 << 24) -> tuple[int, ...]:
    """Row lengths in steps of about 6 %: a cell's best score is then close
    to its rows'."""
    edges = [1]
    while edges[-1] < last:
        edges.append(max(edges[-1] + 1, -(-edges[-1] * 106 // 100)))
    return tuple(edges)


LENGTH_EDGES = _length_edges()
TEXT_CELLS = f"""CREATE OR REPLACE FUNCTION pgcatalog_cells(vector tsvector, counts jsonb)
RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(width_bucket(f.f, '{{{",".join(map(str, FREQUENCY_EDGES))}}}'::int[])
                     || ' ' || CASE WHEN f.f >= {RARE_FREQUENCY} THEN 0 ELSE d.bucket END || ' ' || u.lexeme)
      FROM unnest(vector) AS u,
           LATERAL (SELECT GREATEST(COALESCE((counts -> 1 ->> u.lexeme)::float8::int, cardinality(u.positions)), 1) AS f) AS f,
           (SELECT width_bucket(COALESCE((counts ->> 0)::float8::int, 0),
                                '{{{",".join(map(str, LENGTH_EDGES))}}}'::int[]) AS bucket) AS d
$$;
CREATE INDEX IF NOT EXISTS pgcatalog_text_cells ON object_state
    USING gin (pgcatalog_cells(searchable_text, word_counts -> {text_literal(r.SEARCHABLE_TEXT)}))
    {GIN_OPTIONS} WHERE searchable_text IS NOT NULL;"""


# The items that expire, by their end: few on most sites, and what counts
# brought up to date from one minute to the next look up (changes.Moment)
EXPIRING = (
    "CREATE INDEX IF NOT EXISTS pgcatalog_expiring ON object_state (effective_end) "
    f"WHERE effective_end < {r.OPEN_END}"
)


# Okapi BM25 needs, per text index, how many documents it holds and their
# total length in words: one row per index, read by its key.  A
# transaction's changes of word counts, by whatever statement (a commit, a
# rebuild, an undo, zodb-pgjsonb's pack), are summed as they happen and
# added to those rows once, at its commit.  Rows of differences, folded at
# each catalog commit (before schema version 4), left a table that never
# shrinks: after a bulk load of 20,000 documents, 434 pages that every
# commit's fold and every text search scanned, vacuumed or not; updating
# the rows in place for each change made a transaction's N changes cost
# N^2 / 2 steps through the versions it left (5,000 changes: 0.8 s).


def _row_triggers(
    names: tuple[str, str, str],
    function: str,
    deferred: tuple[str, str, str],
    deferred_function: str,
    when: tuple[str, str, str],
    of: str = "",
) -> str:
    """Triggers on ``object_state`` for a row added, changed (an UPDATE *of*
    some columns) and removed, each WHEN its condition holds: *function*
    right after the statement, *deferred_function* at the commit (constraint
    triggers, which have no CREATE OR REPLACE)."""
    events = ("INSERT", f"UPDATE{of}", "DELETE")
    now = [
        f"CREATE OR REPLACE TRIGGER {name} AFTER {event} ON object_state\n"
        f"    FOR EACH ROW WHEN ({condition}) EXECUTE FUNCTION {function}();"
        for name, event, condition in zip(names, events, when, strict=True)
    ]
    later = [
        f"        CREATE CONSTRAINT TRIGGER {name} AFTER {event} ON object_state\n"
        f"            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ({condition})\n"
        f"            EXECUTE FUNCTION {deferred_function}();"
        for name, event, condition in zip(deferred, events, when, strict=True)
    ]
    return "\n".join(
        [
            *now,
            "DO $$ BEGIN",
            f"    IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = '{deferred[0]}') THEN",
            *later,
            "    END IF;",
            "END $$;",
        ]
    )


FOLD_TRIGGERS = (
    "pgcatalog_words_folded_added",
    "pgcatalog_words_folded_changed",
    "pgcatalog_words_folded_removed",
)
"""The deferred triggers that add a transaction's sum at its commit."""

WORD_TRIGGERS = (
    "pgcatalog_words_added",
    "pgcatalog_words_changed",
    "pgcatalog_words_removed",
    *FOLD_TRIGGERS,
)
"""The triggers on ``object_state`` that keep the text statistics."""

STAMP_TRIGGERS = (
    "pgcatalog_rows_stamped_added",
    "pgcatalog_rows_stamped_changed",
    "pgcatalog_rows_stamped_removed",
)
"""The deferred triggers that stamp, at its commit, what a transaction
that did not stamp it changed."""

DEFERRED_NOW = f"SET CONSTRAINTS {', '.join((*FOLD_TRIGGERS, *STAMP_TRIGGERS))} IMMEDIATE"
"""The deferred triggers (the word counts' and the stamps') fire now, and at
the end of each statement from then on: before DDL on ``object_state`` in a
transaction that wrote it."""

TEXT_STATISTICS = (
    """
CREATE TABLE IF NOT EXISTS pgcatalog_text_stats (
    index_name TEXT NOT NULL, documents BIGINT NOT NULL, words BIGINT NOT NULL);
-- before schema version 4 the table held rows of differences: fold them
DO $$ BEGIN
    IF to_regclass('pgcatalog_text_stats_pkey') IS NULL THEN
        WITH folded AS (DELETE FROM pgcatalog_text_stats RETURNING *)
        INSERT INTO pgcatalog_text_stats
        SELECT index_name, sum(documents), sum(words) FROM folded GROUP BY index_name;
        ALTER TABLE pgcatalog_text_stats ADD CONSTRAINT pgcatalog_text_stats_pkey PRIMARY KEY (index_name);
    END IF;
END $$;
-- Each change of a row's word counts adds its difference to this
-- transaction's sum (a setting local to it: no row version per change)...
CREATE OR REPLACE FUNCTION pgcatalog_count_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changes jsonb := COALESCE(NULLIF(current_setting('pgcatalog.text_changes', true), '')::jsonb, '{}');
BEGIN
    SELECT changes || COALESCE(jsonb_object_agg(name, jsonb_build_array(
               COALESCE((changes -> name ->> 0)::bigint, 0) + documents,
               COALESCE((changes -> name ->> 1)::bigint, 0) + words)), '{}')
      INTO changes
      FROM (SELECT name, sum(documents) AS documents, sum(words) AS words FROM (
              SELECT key AS name, 1 AS documents, (value->>0)::bigint AS words
                FROM jsonb_each(CASE WHEN TG_OP <> 'DELETE' THEN NEW.word_counts END)
              UNION ALL
              SELECT key, -1, -(value->>0)::bigint
                FROM jsonb_each(CASE WHEN TG_OP <> 'INSERT' THEN OLD.word_counts END)
           ) AS row_changes GROUP BY name) AS summed;
    PERFORM set_config('pgcatalog.text_changes', changes::text, true);
    RETURN NULL;
END $$;
-- ...which goes into the statistics once, at commit: the first of the
-- deferred triggers takes it, the others find nothing (whoever writes:
-- a catalog commit, an undo, zodb-pgjsonb's pack, SQL by hand)
CREATE OR REPLACE FUNCTION pgcatalog_fold_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changes jsonb := NULLIF(current_setting('pgcatalog.text_changes', true), '')::jsonb;
BEGIN
    IF changes IS NOT NULL THEN
        PERFORM set_config('pgcatalog.text_changes', '', true);
        INSERT INTO pgcatalog_text_stats AS t (index_name, documents, words)
        SELECT key, (value ->> 0)::bigint, (value ->> 1)::bigint FROM jsonb_each(changes)
        ON CONFLICT (index_name) DO UPDATE
            SET documents = t.documents + EXCLUDED.documents, words = t.words + EXCLUDED.words;
    END IF;
    RETURN NULL;
END $$;
"""
    + _row_triggers(
        WORD_TRIGGERS[:3],
        "pgcatalog_count_words",
        FOLD_TRIGGERS,
        "pgcatalog_fold_words",
        (
            "NEW.word_counts IS NOT NULL",
            "OLD.word_counts IS DISTINCT FROM NEW.word_counts",
            "OLD.word_counts IS NOT NULL",
        ),
        of=" OF word_counts",
    )
    + """
-- Okapi BM25 as ZCTextIndex's OkapiIndex scores one word of a document
-- (K1 = 1.2, B = 0.75): the same float operations in the same order, so
-- the same integer.  idf1024 = ln(1 + N / df) * 1024.
CREATE OR REPLACE FUNCTION pgcatalog_okapi(f float8, dl float8, meandoclen float8, idf1024 float8)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(trunc(f * 2.2::float8 / (f + 1.2::float8 * (0.25::float8 + 0.75::float8 * dl / meandoclen))
                          * idf1024 + 0.5::float8)::bigint, 0)
$$;
-- How often a word occurs in a text index's tsvector: the number of its
-- positions (NULL where it is not there).  The word alone is weighted and
-- kept, and its positions counted in the text of what is left: they follow
-- its last "':" (a position holds digits, commas and weights only).  An
-- expression, inlined into the query: 0.7 us a row, where unnesting the
-- vector costs twice that and fetching stored frequencies out of line four
-- times.  Row word counts hold the frequencies positions cannot tell.
CREATE OR REPLACE FUNCTION pgcatalog_frequency(vector tsvector, word text)
RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_length(string_to_array(
               split_part(reverse(ts_filter(setweight(vector, 'A', ARRAY[word]), '{a}')::text), ':''', 1), ','), 1)
$$;
-- The same number, a fifth of the cost: ts_rank of a one-word query adds
-- weight / j^2 for the word's j-th position (unweighted: 0.1), in single
-- precision, so its value is a different float for each number of
-- positions (at most 256), and 0 where the word is not there.  The values
-- are this server's own, listed when the function is made; a value not
-- listed (a weighted position) falls back to counting the positions.
DO $$ BEGIN
    PERFORM set_config('extra_float_digits', '3', true);
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION pgcatalog_occurrences(vector tsvector, word text, query tsquery)
RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $body$
    SELECT COALESCE(array_position(%L::float4[], ts_rank(vector, query, 0)) - 1, pgcatalog_frequency(vector, word))
$body$ $function$, (
        SELECT array_agg(r.rank ORDER BY r.f) FROM (
            SELECT 0, 0::float4
            UNION ALL
            SELECT f, ts_rank(('w:' || (SELECT string_agg(j::text, ',') FROM generate_series(1, f) AS j))::tsvector,
                              'w'::tsquery, 0)
              FROM generate_series(1, 256) AS f) AS r(f, rank)));
END $$;
"""
)

# ZCTextIndex's lexicon: every word each text index has held, so that a
# glob (``post*``: Plone's search page makes one of every word typed)
# finds its words in an index range instead of in the words of every row
# holding the prefix (relevance.py; docs/performance.md, "Globs").  As in
# ZCatalog, a word stays once no row holds it: it then scores nothing.  A
# row written (by a commit, a rebuild, an undo, SQL by hand) adds the words
# of its text indexes that the row did not hold before, in order (commits
# are serialised by zodb-pgjsonb's lock; any other writer cannot deadlock
# on them).  The trigger comes before the table is filled from the rows
# already there (once, when the table is new), in the same transaction, so
# no row written meanwhile is missed.
_TEXT_VECTORS = " ".join(
    f"WHEN {text_literal(name)} THEN {{row}}.{column}"
    for (kind, name), column in r.OWN_COLUMNS.items()
    if kind == r.TEXT
)


def _text_vector(row: str) -> str:
    """The tsvector of text index ``c.name`` in *row* (NEW, OLD or a table)."""
    return f"CASE c.name {_TEXT_VECTORS.format(row=row)} ELSE ({row}.idx ->> c.name)::tsvector END"


LEXICON_TRIGGERS = ("pgcatalog_lexicon_added", "pgcatalog_lexicon_changed")
"""The triggers on ``object_state`` that keep ``pgcatalog_words``."""

LEXICON = f"""
CREATE TABLE IF NOT EXISTS pgcatalog_words (
    index_name TEXT NOT NULL, word TEXT COLLATE "C" NOT NULL, PRIMARY KEY (index_name, word));
CREATE OR REPLACE FUNCTION pgcatalog_add_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NOT EXISTS (
        SELECT FROM jsonb_object_keys(NEW.word_counts) AS c(name)
         WHERE ({_text_vector("NEW")}) IS DISTINCT FROM ({_text_vector("OLD")})) THEN
        RETURN NULL;  -- (an edit of other indexes than the text ones)
    END IF;
    INSERT INTO pgcatalog_words (index_name, word)
    SELECT name, word FROM (
        SELECT c.name, unnest(tsvector_to_array({_text_vector("NEW")})) AS word
          FROM jsonb_object_keys(NEW.word_counts) AS c(name)
        EXCEPT
        SELECT c.name, unnest(tsvector_to_array({_text_vector("OLD")}))
          FROM jsonb_object_keys(CASE WHEN TG_OP = 'UPDATE' THEN OLD.word_counts END) AS c(name)
    ) AS added ORDER BY name, word
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER {LEXICON_TRIGGERS[0]} AFTER INSERT ON object_state
    FOR EACH ROW WHEN (NEW.word_counts IS NOT NULL) EXECUTE FUNCTION pgcatalog_add_words();
CREATE OR REPLACE TRIGGER {LEXICON_TRIGGERS[1]} AFTER UPDATE OF idx, searchable_text, word_counts ON object_state
    FOR EACH ROW WHEN (NEW.word_counts IS NOT NULL AND (OLD.idx IS DISTINCT FROM NEW.idx
        OR OLD.searchable_text IS DISTINCT FROM NEW.searchable_text OR OLD.word_counts IS DISTINCT FROM NEW.word_counts))
    EXECUTE FUNCTION pgcatalog_add_words();
-- "Did you mean" finds words by their trigrams (pg_trgm, shipped with
-- PostgreSQL): where the extension cannot be made here, suggestions are
-- off (suggestions.py says why) and everything else works.
DO $$ BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'plone.pgcatalog: no pg_trgm (%), so no search suggestions', SQLERRM;
END $$;
DO $$ BEGIN
    IF EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_trgm') THEN
        EXECUTE 'CREATE INDEX IF NOT EXISTS pgcatalog_words_trigrams ON pgcatalog_words USING gin (word gin_trgm_ops)';
    END IF;
END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pgcatalog_words) THEN
        INSERT INTO pgcatalog_words (index_name, word)
        SELECT DISTINCT c.name, u.word
          FROM object_state, jsonb_object_keys(word_counts) AS c(name),
               unnest(tsvector_to_array({_text_vector("object_state")})) AS u(word)
         WHERE word_counts IS NOT NULL
        ON CONFLICT DO NOTHING;
    END IF;
END $$;
"""


# The change log: each catalog row a commit changes, as it was before,
# so that an answer made at one commit is brought up to date by reading
# only what changed since (facet counts: plone.pgcatalog.changes).  The
# note trigger below logs a row's searched columns (or only its zoid:
# it was no catalog row) under the transaction's id; the commit's stamp
# writes which counter value that id got.  The log holds the last
# LOG_KEPT commits, complete for those after pgcatalog_counter.logged_from:
# a transaction that changes more than LOG_LIMIT rows, or notes every
# change (NOTE_EVERYTHING: a rebuild, an undo, new indexes), logs no
# more and moves logged_from to its own commit.
LOG = "pgcatalog_changes"
COMMITS = "pgcatalog_commits"
LOG_KEPT = 1000
LOG_LIMIT = 1000
LOGGED = tuple((c.name, c.declared) for c in (*row.COLUMNS, *row.TYPED) if getattr(c, "overlaid", True))
"""The columns of a catalog row the log keeps: those searches read."""
_LOGGED_NAMES = ", ".join(name for name, _ in LOGGED)
_LOGGED_OLD = ", ".join(f"OLD.{name}" for name, _ in LOGGED)
_LOGGED_COLUMNS = ",\n".join(f"    ADD COLUMN IF NOT EXISTS {name} {declared}" for name, declared in LOGGED)
CHANGE_LOG = f"""
CREATE TABLE IF NOT EXISTS {LOG} (
    id BIGINT GENERATED ALWAYS AS IDENTITY,  -- (the order of a row's versions: no index needed)
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    zoid BIGINT NOT NULL);
ALTER TABLE {LOG}
{_LOGGED_COLUMNS};
CREATE INDEX IF NOT EXISTS {LOG}_xid ON {LOG} (xid);
CREATE TABLE IF NOT EXISTS {COMMITS} (counter BIGINT PRIMARY KEY, xid xid8 NOT NULL);
ALTER TABLE pgcatalog_counter ADD COLUMN IF NOT EXISTS logged_from BIGINT;
UPDATE pgcatalog_counter SET logged_from = value WHERE id = 1 AND logged_from IS NULL;"""


SHARED = "pgcatalog_shared"

SHARED_TABLE = f"""
CREATE TABLE IF NOT EXISTS {SHARED} (
    key TEXT PRIMARY KEY,       -- the digest of what identifies the answer
    counter BIGINT NOT NULL,    -- the catalog counter of its commit
    stamp TEXT NOT NULL,        -- its commit's stamp (counter.xid)
    answer JSONB NOT NULL);
CREATE INDEX IF NOT EXISTS {SHARED}_counter ON {SHARED} (counter);"""
"""Answers made from every row, kept for every process of a site
(:mod:`~plone.pgcatalog.shared`)."""


# What a transaction changed of what searches read, for the counts that
# stand while what they read is unchanged (counts.py).  Each row written
# notes, in a setting local to the transaction (no row version per
# change), the names of what changed (IndexDef.changes: an idx key,
# "@searchable_text", "@object_provides"), or "#" where a row enters or
# leaves the catalog, or moves (every count may change: every statement
# reads the rows of its site's paths).  The commit
# stamps them: the processor's BUMP_COUNTER, or, for any other writer (an
# undo, zodb-pgjsonb's pack, SQL by hand), the first deferred trigger
# at its commit.
_SEARCHED = ("idx", "path", *r.OWN_COLUMNS.values())
_CHANGED_ROW = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in _SEARCHED)
_OWN_CHANGED = "\n".join(
    f"""        IF OLD.{column} IS DISTINCT FROM NEW.{column} THEN
            changed := changed || '@{column}'::text;
        END IF;"""
    for column in r.OWN_COLUMNS.values()
)
CHANGE_TRIGGERS = (
    "pgcatalog_rows_added",
    "pgcatalog_rows_changed",
    "pgcatalog_rows_removed",
    *STAMP_TRIGGERS,
)
"""The triggers on ``object_state`` that note and stamp what a transaction changed."""
NOTE_CHANGES = f"""
CREATE OR REPLACE FUNCTION pgcatalog_note_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    noted text[] := string_to_array(NULLIF(current_setting('pgcatalog.changed', true), ''), ' ');
    changed text[];
    logged integer;
BEGIN
    IF COALESCE(current_setting('pgcatalog.unlogged', true), '') <> 'yes' THEN
        logged := COALESCE(NULLIF(current_setting('pgcatalog.logged', true), ''), '0')::integer + 1;
        IF logged > {LOG_LIMIT} THEN
            PERFORM set_config('pgcatalog.unlogged', 'yes', true);  -- (reading it costs as much as every row)
        ELSE
            PERFORM set_config('pgcatalog.logged', logged::text, true);
            IF TG_OP = 'INSERT' OR OLD.idx IS NULL THEN
                INSERT INTO {LOG} (zoid) VALUES (NEW.zoid);  -- not a catalog row before
            ELSE
                INSERT INTO {LOG} (zoid, {_LOGGED_NAMES}) VALUES (OLD.zoid, {_LOGGED_OLD});
            END IF;
        END IF;
    END IF;
    IF '#' = ANY(noted) THEN
        RETURN NULL;  -- every count is made again anyway
    ELSIF TG_OP <> 'UPDATE' OR (OLD.idx IS NULL) <> (NEW.idx IS NULL) OR OLD.path IS DISTINCT FROM NEW.path THEN
        changed := ARRAY['#'];  -- (every statement is scoped to its site's paths)
    ELSIF NEW.idx IS NULL THEN
        RETURN NULL;  -- not cataloged: no search reads it
    ELSE
        SELECT array_agg(COALESCE(n.key, o.key)) INTO changed
          FROM jsonb_each(NEW.idx) AS n FULL JOIN jsonb_each(OLD.idx) AS o ON o.key = n.key
         WHERE n.value IS DISTINCT FROM o.value;
{_OWN_CHANGED}
    END IF;
    PERFORM set_config('pgcatalog.changed',
                       array_to_string(ARRAY(SELECT DISTINCT unnest(noted || changed)), ' '), true);
    RETURN NULL;
END $$;
-- The counter moves (ZCatalog's getCounter), once per transaction; what
-- was noted, and "*" (anything), get its value with the transaction's id
-- as their stamp
CREATE OR REPLACE FUNCTION pgcatalog_stamp() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    bump integer := CASE WHEN current_setting('pgcatalog.stamped', true) = 'yes' THEN 0 ELSE 1 END;
    stamped_at bigint;
BEGIN
    UPDATE pgcatalog_counter
       SET value = value + bump,
           stamps = stamps || (
               SELECT jsonb_object_agg(name, (value + bump) || '.' || pg_current_xact_id())
                 FROM unnest(string_to_array('* ' || COALESCE(current_setting('pgcatalog.changed', true), ''), ' '))
                      AS name
                WHERE name <> '')
     WHERE id = 1
    RETURNING value INTO stamped_at;
    INSERT INTO {COMMITS} VALUES (stamped_at, pg_current_xact_id())
        ON CONFLICT (counter) DO UPDATE SET xid = EXCLUDED.xid;  -- (a database put back from a copy)
    IF current_setting('pgcatalog.unlogged', true) = 'yes' THEN
        UPDATE pgcatalog_counter SET logged_from = stamped_at WHERE id = 1;
    END IF;
    IF bump = 1 AND stamped_at % 64 = 0 THEN  -- the log keeps the last LOG_KEPT commits
        DELETE FROM {COMMITS} WHERE counter <= stamped_at - {LOG_KEPT};
        DELETE FROM {LOG} WHERE xid < (SELECT min(xid) FROM {COMMITS});
        UPDATE pgcatalog_counter SET logged_from = greatest(logged_from, stamped_at - {LOG_KEPT}) WHERE id = 1;
    END IF;
    PERFORM set_config('pgcatalog.changed', '', true);
    PERFORM set_config('pgcatalog.stamped', 'yes', true);
END $$;
CREATE OR REPLACE FUNCTION pgcatalog_stamp_noted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF COALESCE(current_setting('pgcatalog.changed', true), '') <> '' THEN
        PERFORM pgcatalog_stamp();
    END IF;
    RETURN NULL;
END $$;
""" + _row_triggers(
    CHANGE_TRIGGERS[:3],
    "pgcatalog_note_changes",
    STAMP_TRIGGERS,
    "pgcatalog_stamp_noted",
    ("NEW.idx IS NOT NULL", _CHANGED_ROW, "OLD.idx IS NOT NULL"),
)


NOTE_EVERYTHING = "SELECT set_config('pgcatalog.changed', '#', true), set_config('pgcatalog.unlogged', 'yes', true)"
"""Before :data:`BUMP_COUNTER`: every count is to be made again (an undo,
a rebuild, new indexes), and the change log (:data:`CHANGE_LOG`) starts
again after this commit."""

BUMP_COUNTER = "SELECT pgcatalog_stamp()"
"""Once per transaction that changes the catalog: ZCatalog's ``getCounter``
moves, and what the transaction changed is stamped (:data:`NOTE_CHANGES`;
``*``: anything), each name with the new counter value and the
transaction's id.  No two transactions write the same stamp, and a
database restored from a copy, or a test's snapshot put back, gives its
stamps the content they stamped."""


@lru_cache(maxsize=256)
def generation_sql(reads: frozenset[str]) -> str:
    """The catalog's generation (SQL, text) as a count of matches of a
    statement that reads *reads* (:attr:`IndexDef.changes
    <plone.pgcatalog.registry.IndexDef.changes>`) sees it: the stamps of
    what it reads and of the rows that entered or left the catalog.  A
    write that changes none of it leaves the generation as it was."""
    names = ", ".join(f"stamps->{text_literal(name)}" for name in sorted({"#", *reads}))
    return f"(SELECT jsonb_build_array({names})::text FROM pgcatalog_counter WHERE id = 1)"


def type_expression(typed: bool) -> str:
    """The SQL expression of ``portal_type`` as its FieldIndex compares it:
    its typed column once searches read those (*typed*)."""
    return r.IndexDef(r.TYPE_INDEX, r.FIELD, typed=typed).expression()


def index_name(index: r.IndexDef, expression: str, suffix: str = "") -> str:
    slug = re.sub(r"[^a-z0-9_]", "_", index.name.lower())[:40] + suffix
    digest = hashlib.sha1(f"{index.name}\0{expression}".encode()).hexdigest()[:8]
    return f"pgcatalog_{slug}_{digest}"


def index_ddl(index: r.IndexDef) -> list[str]:
    """DDL for one catalog index (may be none): an expression index (B-tree
    ones end in ``zoid``, the tie-break of every sort), partial on its
    expression being set (every query clause on it implies that, so
    the planner may use it), and statistics on the expression, so that the
    planner estimates how many rows a value matches.  A DateIndex gets a
    second B-tree led by ``portal_type``: a page of one type's items by
    date reads only that type's entries."""
    kind = index.kind
    if index.custom:
        return list(r.custom_kind(kind).ddl(index))
    if kind == r.PATH or index.column == "searchable_text":
        return []  # served by the fixed indexes
    if not index.decided:
        return []  # built when its first value decides what it holds
    if kind == r.DATE_RANGE:
        exprs = list(index.range_expressions())
    else:
        exprs = [index.expression()]
    method = "gin" if kind in (r.KEYWORD, r.DATE_RECURRING, r.TEXT) else "btree"
    columns = ", ".join(exprs)
    if kind in r.BTREE_KINDS:
        columns += ", zoid"  # in sort order with the tie-break: a page is an index walk
    name = index_name(index, columns)
    ddl = [
        f"CREATE INDEX IF NOT EXISTS {name} ON object_state USING {method} ({columns}) "
        f"WHERE ({exprs[0]}) IS NOT NULL"
    ]
    if kind == r.DATE:
        by_type = f"{type_expression(index.typed)}, {columns}"
        ddl.append(
            f"CREATE INDEX IF NOT EXISTS {index_name(index, by_type, '_by_type')} ON object_state ({by_type}) "
            f"WHERE ({exprs[0]}) IS NOT NULL"
        )
    if index.column is None and not index.hot:  # a column of its own has column statistics
        stats_on = ", ".join(f"({e})" for e in exprs)
        ddl.append(f"CREATE STATISTICS IF NOT EXISTS {name}_stats ON {stats_on} FROM object_state")
    return ddl


def drop_index_ddl(index: r.IndexDef, keep: r.IndexDef) -> list[str]:
    """DDL that drops what :func:`index_ddl` builds for *index* and not for
    *keep* (an upgrade drops the expression indexes that typed columns
    replace)."""
    kept = set(index_ddl(keep))
    drops = []
    for statement in index_ddl(index):
        if statement not in kept:
            what, name = re.match(r"CREATE (INDEX|STATISTICS) IF NOT EXISTS (\w+)", statement).groups()
            drops.append(f"DROP {what} IF EXISTS {name}")
    return drops


RECORD_SCHEMA_VERSION = f"""CREATE TABLE IF NOT EXISTS pgcatalog_schema (id INTEGER PRIMARY KEY, version INTEGER NOT NULL);
INSERT INTO pgcatalog_schema VALUES (1, {SCHEMA_VERSION}) ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version"""
"""Record that the catalog's schema is this release's (run by the commit
that installs or upgrades it)."""


SCHEMA_LOCK_TIMEOUT = "30s"
"""How long a schema change waits for other transactions that read
``object_state`` (a request in flight) before it gives up."""

SCHEMA_SOURCE = "plone.pgcatalog"
"""The name zodb-pgjsonb records the startup schema's version under."""


def startup_schema(storage: Any) -> None:
    """Have *storage* (zodb-pgjsonb's) bring the catalog's columns,
    tables and functions up to this release before its first snapshot,
    once per version of :func:`schema_sql`."""
    sql = schema_sql()

    def apply(dsn: str) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"SET lock_timeout = '{SCHEMA_LOCK_TIMEOUT}'")
            with conn.transaction():
                conn.execute(sql)

    version = "sha256:" + hashlib.sha256(sql.encode()).hexdigest()
    storage.defer_startup_action(apply, SCHEMA_SOURCE, version)


def schema_version(cursor: Any) -> int | None:
    """The catalog schema version recorded in the database; 1 for an
    install older than the record, None where the catalog is not installed."""
    cursor.execute(
        "SELECT to_regclass('pgcatalog_schema') IS NOT NULL, to_regclass('pgcatalog_counter') IS NOT NULL"
    )
    recorded, installed = cursor.fetchone()
    if not recorded:
        return 1 if installed else None
    cursor.execute("SELECT version FROM pgcatalog_schema WHERE id = 1")
    row = cursor.fetchone()
    return row[0] if row else 1


HAS_CATALOG_COLUMNS = (
    "SELECT count(*) > 0 FROM pg_attribute WHERE attrelid = to_regclass('object_state') "
    "AND attname = 'idx' AND NOT attisdropped"
)
"""Whether ``object_state`` exists and has the catalog's columns."""


def catalog_installed(dsn: str) -> bool:
    """Whether the database at *dsn* has the catalog's columns."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(HAS_CATALOG_COLUMNS).fetchone()[0]
