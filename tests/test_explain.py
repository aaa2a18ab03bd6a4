"""The planner uses the catalog's indexes.

Ten thousand catalog rows are cloned from a real Document's row (their
index values varied per row), analysed, and the statements the query
builder makes for field, keyword, date, path and text queries are
explained: each must be answered through an index, not by reading the
table.  Everything happens in one transaction that is rolled back.
"""

from helpers import CatalogTestCase
from plone import api
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.lexicon import lexicons
from plone.pgcatalog.overlay import catalog_sql
from plone.pgcatalog.query import add_sort
from plone.pgcatalog.query import build
from plone.pgcatalog.query import sort_spec
from plone.pgcatalog.query import top_sql
from plone.pgcatalog.registry import index_defs
from plone.pgcatalog.row import fill_typed_sql
from plone.pgcatalog.relevance import ranked_sql

from psycopg import sql as pgsql

import json
import psycopg
import transaction


ROWS = 10_000

# Ten thousand clones of the template row: 1 in 100 is a 'Rare' type, 200
# subjects, creation minutes one apart, 200 folders of 50 (their items
# spread over the table, as a site's are), one word each.
CLONE = """
INSERT INTO object_state (zoid, tid, class_mod, class_name, state, state_size,
                          path, parent_path, path_depth, idx, searchable_text, object_provides)
SELECT 1000000000 + g, t.tid, t.class_mod, t.class_name, '{}'::jsonb, 2,
       '/plone/f' || (g %% 200) || '/d' || g, '/plone/f' || (g %% 200), 3,
       t.idx || jsonb_build_object(
           'portal_type', CASE WHEN g %% 100 = 0 THEN 'Rare' ELSE 'Document' END,
           'Subject', jsonb_build_array('s' || (g %% 200), 'common'),
           'created', (t.idx->>'created')::bigint - g,
           'id', 'd' || g,
           'getObjPositionInParent', g / 200,
           'allowedRolesAndUsers', jsonb_build_array('Manager', 'Site Administrator', 'Anonymous')),
       ('w' || g)::tsvector, t.object_provides
  FROM object_state t, generate_series(1, %s) g
 WHERE t.zoid = %s
"""


# Content is a small part of object_state on a real site (versions,
# annotations, workflow histories): ten uncataloged rows per catalog row.
FILLER = """
INSERT INTO object_state (zoid, tid, class_mod, class_name, state, state_size)
SELECT 2000000000 + g, t.tid, 'persistent.mapping', 'PersistentMapping', '{}'::jsonb, 2
  FROM object_state t, generate_series(1, %s) g
 WHERE t.zoid = %s
"""


def plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from plan_nodes(child)


class ExplainTest(CatalogTestCase):
    def setUp(self):
        super().setUp()
        doc = api.content.create(container=self.portal, type="Document", id="template", title="T")
        doc.setSubject(("x",))
        doc.reindexObject()
        transaction.commit()
        self.zoid = int.from_bytes(doc._p_oid, "big")
        self.conn = psycopg.connect(storage_dsn(self.portal))
        # no autovacuum on the table while the test's rows are uncommitted:
        # its ANALYZE would write the committed table's size into pg_class
        # (in place, for every transaction) and change the plans
        self.conn.execute("LOCK TABLE object_state IN SHARE UPDATE EXCLUSIVE MODE")
        self.conn.execute(CLONE, [ROWS, self.zoid])
        self.conn.execute(fill_typed_sql())  # the clones' typed columns, as the upgrade fills them
        self.conn.execute(FILLER, [ROWS * 10, self.zoid])
        # statistics of every row (ANALYZE samples 300 x target rows), so
        # that the plans do not change with a random sample
        self.conn.execute("SET LOCAL default_statistics_target = 1000")
        self.conn.execute("ANALYZE object_state")
        self.defs = index_defs(self.catalog)

    def tearDown(self):
        self.conn.rollback()
        self.conn.close()
        api.content.delete(obj=self.portal["template"])
        transaction.commit()

    def explain(self, query: dict) -> list[dict]:
        stmt = build(query, self.defs, lexicons(self.catalog), self.catalog.getPhysicalPath())
        ordering = add_sort(stmt, sort_spec(query, self.defs))
        params = stmt.params
        if ordering.scored:  # relevance order: the statement of the search
            head, params = ranked_sql(ordering.scored, ordering.where_sql(stmt), stmt.params, None)
            sql = f"{head}\nSELECT zoid FROM pgcatalog_scored ORDER BY score DESC, zoid DESC"
        else:
            sql = f"SELECT zoid FROM object_state WHERE {ordering.where_sql(stmt)}"
            if ordering.terms:
                sql += " ORDER BY " + ", ".join(ordering.terms)
        if "sort_limit" in query:
            sql += f" LIMIT {int(query['sort_limit'])}"
        sql, head_params = catalog_sql(sql, None)
        (plan,) = self.conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", [*head_params, *params]).fetchone()
        return list(plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]))

    def assert_index_scan(self, query: dict, index_part: str) -> None:
        nodes = self.explain(query)
        scans = [node.get("Relation Name") for node in nodes if node["Node Type"] == "Seq Scan"]
        self.assertNotIn("object_state", scans, f"{query}: {[node['Node Type'] for node in nodes]}")
        names = [node.get("Index Name", "") for node in nodes]
        self.assertTrue(any(index_part in name for name in names), f"{query}: {names}")

    def test_enough_rows(self):
        # the plans below are those of a site of this size, not of a handful
        (count,) = self.conn.execute("SELECT count(*) FROM object_state WHERE idx IS NOT NULL").fetchone()
        self.assertGreaterEqual(count, ROWS)

    def test_field(self):
        self.assert_index_scan({"portal_type": "Rare"}, "pgcatalog_portal_type_")
        self.assert_index_scan({"id": ["d17", "d4711"]}, "pgcatalog_id_")

    def test_keyword(self):
        self.assert_index_scan({"Subject": "s17"}, "pgcatalog_subject_")
        self.assert_index_scan({"Subject": ["s17", "s18"]}, "pgcatalog_subject_")

    def test_date(self):
        # the clones were created a minute apart before the template: an
        # hour holds about 60 of them
        created = self.portal["template"].created()
        query = {"created": {"query": [created - 1 / 24, created], "range": "min:max"}}
        self.assert_index_scan(query, "pgcatalog_created_")

    def test_path(self):
        self.assert_index_scan({"path": {"query": "/plone/f17", "depth": 1}}, "pgcatalog_parent")
        self.assert_index_scan({"path": {"query": "/plone/f70/d870", "depth": 0}}, "pgcatalog_path")
        self.assert_index_scan({"path": "/plone/f17"}, "pgcatalog_path")
        self.assert_index_scan({"path": {"query": "/plone/f70/d870", "navtree": 1}}, "pgcatalog_parent")

    def test_selective_clause_alone_uses_an_index(self):
        # a folder listing as Plone makes it: the security and date-range
        # clauses filter the folder's rows, not AND a bitmap of every row
        query = {
            "path": {"query": "/plone/f17", "depth": 1},
            "allowedRolesAndUsers": ["Anonymous", "Manager"],
            "effectiveRange": self.portal["template"].created(),
            "sort_on": "getObjPositionInParent",
        }
        # nor the sort index's every row (its IS NOT NULL): not even where
        # heap pages are dear and index entries free, which makes the planner
        # AND in every bitmap it can use
        names = [node.get("Index Name", "") for node in self.explain(query)]
        self.assertIn("pgcatalog_parent", names)
        self.assertEqual([n for n in names if n and n != "pgcatalog_parent"], [], names)
        for setting in ("seq_page_cost = 1000", "random_page_cost = 1000", "cpu_index_tuple_cost = 0"):
            self.conn.execute(f"SET LOCAL {setting}")
        nodes = self.explain(query)
        names = [node.get("Index Name", "") for node in nodes]
        self.assertIn("pgcatalog_parent", names)
        self.assertEqual([n for n in names if n and n != "pgcatalog_parent"], [], names)
        scans = [node.get("Relation Name") for node in nodes if node["Node Type"] == "Seq Scan"]
        self.assertNotIn("object_state", scans)

    def test_text(self):
        self.assert_index_scan({"SearchableText": "w4711", "sort_on": "created"}, "searchable_text")
        # a glob with an inner wildcard is found through its prefix
        self.assert_index_scan({"SearchableText": "w47?1", "sort_on": "created"}, "searchable_text")

    def test_text_by_relevance(self):
        # the matches, the document frequencies and a glob's words all come
        # off the text index
        for text in ("w4711", "w4711 OR w17", "w471*", "w4*1"):
            self.assert_index_scan({"SearchableText": text}, "searchable_text")

    def test_sorted_page(self):
        # a page of a large result is read along the sort index
        self.assert_index_scan(
            {"portal_type": "Document", "sort_on": "created", "sort_order": "reverse", "sort_limit": 20},
            "pgcatalog_created_",
        )

    def test_page_of_one_type_walks_that_type(self):
        # a page of the rare type by date, in the generic plan pages run
        # with: the walk reads that type's entries of the type-led B-tree,
        # not 400 entries of every type's dates before falling back
        query = {"portal_type": "Rare", "sort_on": "created", "sort_order": "reverse", "b_size": 20}
        stmt = build(query, self.defs, {}, self.catalog.getPhysicalPath())
        ordering = add_sort(stmt, sort_spec(query, self.defs))
        self.assertTrue(ordering.walks(20))
        sql, params = top_sql(stmt, ordering, 20, 0)
        sql, head = catalog_sql(sql, None)
        pieces = sql.split("%s")
        numbered = "".join(f"{piece}${n}" for n, piece in enumerate(pieces[:-1], 1)) + pieces[-1]
        self.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        # a page of 20 is never worth workers (a busy machine lends none)
        self.conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        self.conn.execute(f"PREPARE typed_page AS {numbered}")
        values = pgsql.SQL(", ").join(pgsql.Literal(p) for p in [*head, *params]).as_string(self.conn)
        (plan,) = self.conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE typed_page({values})").fetchone()
        nodes = list(plan_nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]))
        self.assertEqual(nodes[0]["Actual Rows"], 20)
        # rows read from each index: "Actual Rows" is per loop (and per
        # process in a parallel plan)
        # (an index may serve two nodes: the walk and the fallback's bitmap)
        read = {}
        for n in nodes:
            if "pgcatalog_created" in n.get("Index Name", ""):
                read[n["Index Name"]] = read.get(n["Index Name"], 0) + n["Actual Rows"] * n["Actual Loops"]
        typed = [name for name in read if "_by_type_" in name]
        self.assertEqual(len(typed), 1, read)
        self.assertEqual(read[typed[0]], 20, (read, plan))  # the plan, to read when it fails
        self.assertEqual(sum(read.values()), 20, read)  # the fallback never runs
