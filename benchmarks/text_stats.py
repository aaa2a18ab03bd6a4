"""The text statistics' two designs, side by side, in SQL alone.

    .venv/bin/python benchmarks/text_stats.py --rows 20000

Builds two scratch databases with the same synthetic ``object_state``
(*rows* catalog rows with ``word_counts`` of three text indexes), one with
the text statistics as this release keeps them (``schema.TEXT_STATISTICS``:
summed per transaction, added at commit to one row per index) and one as
schema version 3 kept them (a row of differences per change, folded by
every catalog commit: ``OLD_DESIGN`` below).  Each first gets what a bulk
load leaves: *rows* changes in transactions of 200, then ``VACUUM``.  Then,
taking turns: a transaction that changes 5,000 rows, 50 commits of one
row, and 50 reads of an index's statistics as a text search makes them.
Medians in ms; results in ``benchmarks/results/<stamp>-text-stats.json``.
"""

from __future__ import annotations

from database import fresh_database
from database import pg_server
from pathlib import Path

import argparse
import json
import psycopg
import statistics
import sys
import time


HERE = Path(__file__).resolve().parent

TABLE = "CREATE TABLE object_state (zoid bigint PRIMARY KEY, word_counts jsonb)"
ROWS = "INSERT INTO object_state SELECT i, NULL FROM generate_series(1, %s) AS i"

OLD_DESIGN = """
CREATE TABLE pgcatalog_text_stats (index_name TEXT NOT NULL, documents BIGINT NOT NULL, words BIGINT NOT NULL);
CREATE FUNCTION pgcatalog_count_words() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pgcatalog_text_stats (index_name, documents, words)
    SELECT name, sum(documents), sum(words) FROM (
        SELECT key AS name, 1 AS documents, (value->>0)::bigint AS words
          FROM jsonb_each(CASE WHEN TG_OP <> 'DELETE' THEN NEW.word_counts END)
        UNION ALL
        SELECT key, -1, -(value->>0)::bigint
          FROM jsonb_each(CASE WHEN TG_OP <> 'INSERT' THEN OLD.word_counts END)
    ) AS changes GROUP BY name HAVING sum(documents) <> 0 OR sum(words) <> 0;
    RETURN NULL;
END $$;
CREATE TRIGGER pgcatalog_words_changed AFTER UPDATE OF word_counts ON object_state
    FOR EACH ROW WHEN (OLD.word_counts IS DISTINCT FROM NEW.word_counts) EXECUTE FUNCTION pgcatalog_count_words();
"""
OLD_FOLD = """WITH folded AS (DELETE FROM pgcatalog_text_stats RETURNING *)
INSERT INTO pgcatalog_text_stats
SELECT index_name, sum(documents), sum(words) FROM folded GROUP BY index_name HAVING sum(documents) <> 0"""
"""Schema version 3's fold, which each catalog commit ran."""

CHANGE = """UPDATE object_state SET word_counts = jsonb_build_object(
    'SearchableText', jsonb_build_array(20 + (zoid + %(turn)s) %% 30, '{}'::jsonb),
    'Title', jsonb_build_array(3 + (zoid + %(turn)s) %% 5, '{}'::jsonb),
    'Description', jsonb_build_array(10 + (zoid + %(turn)s) %% 9, '{}'::jsonb))
WHERE zoid > %(start)s AND zoid <= %(end)s"""
READ = "SELECT documents, words FROM pgcatalog_text_stats WHERE index_name = 'SearchableText'"


def commit(conn: psycopg.Connection, old: bool) -> None:
    if old:
        conn.execute(OLD_FOLD)
    conn.commit()


def change(conn: psycopg.Connection, old: bool, start: int, end: int, turn: int) -> None:
    conn.execute(CHANGE, {"start": start, "end": end, "turn": turn})
    commit(conn, old)


def prepare(dsn: str, rows: int, old: bool) -> None:
    from plone.pgcatalog.schema import TEXT_STATISTICS

    with psycopg.connect(dsn) as conn:
        conn.execute(TABLE)
        conn.execute(ROWS, (rows,))
        conn.execute(OLD_DESIGN if old else TEXT_STATISTICS)
        conn.commit()
        for start in range(0, rows, 200):  # the bulk load
            change(conn, old, start, start + 200, 0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def run(rows: int, rounds: int) -> dict:
    samples: dict = {design: {"5,000 rows": [], "1 row": [], "read": []} for design in ("old", "new")}
    pages: dict = {}
    with (
        pg_server() as server,
        fresh_database(server, "stats_old") as old_dsn,
        fresh_database(server, "stats_new") as new_dsn,
    ):
        dsns = {"old": old_dsn, "new": new_dsn}
        for design, dsn in dsns.items():
            prepare(dsn, rows, design == "old")
        conns = {design: psycopg.connect(dsn) for design, dsn in dsns.items()}
        for turn in range(1, rounds + 1):
            for design in ("old", "new") if turn % 2 else ("new", "old"):
                conn, old = conns[design], design == "old"
                started = time.perf_counter()
                change(conn, old, 0, 5000, turn)
                samples[design]["5,000 rows"].append((time.perf_counter() - started) * 1000.0)
                for i in range(50):
                    started = time.perf_counter()
                    change(conn, old, 7 + i, 8 + i, turn)
                    samples[design]["1 row"].append((time.perf_counter() - started) * 1000.0)
                for _ in range(50):
                    started = time.perf_counter()
                    conn.execute(READ).fetchall()
                    conn.commit()
                    samples[design]["read"].append((time.perf_counter() - started) * 1000.0)
        for design, conn in conns.items():
            size = "SELECT pg_relation_size('pgcatalog_text_stats') / current_setting('block_size')::int"
            pages[design] = conn.execute(size).fetchone()[0]
            conn.close()
    return {
        "rows": rows,
        "rounds": rounds,
        "medians_ms": {d: {k: statistics.median(v) for k, v in s.items()} for d, s in samples.items()},
        "table_pages": pages,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    result = run(args.rows, args.rounds)
    path = HERE / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-text-stats.json"
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
