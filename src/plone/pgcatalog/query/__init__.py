"""ZCatalog query dict → SQL, one job per module.

- :mod:`.indexquery`: what the query asks, read by ZCatalog's rules
  (``IndexQuery``, ``sort_on``);
- :mod:`.keys`: query values as the keys an index compares;
- :mod:`.statement`: the compiled WHERE clauses and what they tell;
- :mod:`.kinds`: one clause builder per index kind, behind a table;
- :mod:`.compiler`: the whole query → one statement, faults as ZCatalog's;
- :mod:`.page`: the order, window, count and first metadata of a page.
"""

from plone.pgcatalog.query.compiler import build
from plone.pgcatalog.query.compiler import Fault
from plone.pgcatalog.query.compiler import where_of
from plone.pgcatalog.query.indexquery import canonical
from plone.pgcatalog.query.indexquery import criterion_keys
from plone.pgcatalog.query.indexquery import index_query
from plone.pgcatalog.query.indexquery import IndexQuery
from plone.pgcatalog.query.indexquery import merge_query
from plone.pgcatalog.query.indexquery import sort_names
from plone.pgcatalog.query.indexquery import sort_spec
from plone.pgcatalog.query.page import add_sort
from plone.pgcatalog.query.page import Ordering
from plone.pgcatalog.query.page import Row
from plone.pgcatalog.query.page import top_sql
from plone.pgcatalog.query.page import walk_rows
from plone.pgcatalog.query.statement import Statement


__all__ = [
    "Fault",
    "IndexQuery",
    "Ordering",
    "Row",
    "Statement",
    "add_sort",
    "build",
    "canonical",
    "criterion_keys",
    "index_query",
    "merge_query",
    "sort_names",
    "sort_spec",
    "top_sql",
    "walk_rows",
    "where_of",
]
