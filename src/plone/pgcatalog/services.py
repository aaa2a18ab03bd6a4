"""REST: ``POST /@facet-count``, facet counts for Volto's search block,
and ``GET /@suggestions``, "did you mean".

The body is what ``@querystring-search`` takes (its ``query`` criteria,
read as it reads them, Plone's search term munging included; batching
and sorting are ignored) with the facets to count, as
plone.restapi's proposal for this endpoint (#1637) has it, ``"facet":
"Subject"``, or several in one statement: ``"facets": ["portal_type",
"Subject"]``, or a mapping of index names to ``null`` (count the values)
or to named buckets, each a list of querystring criteria of that index
(``{"effective": {"this week": [{"o":
"plone.app.querystring.operation.date.lessThanRelativeDate", "v":
"-7"}]}}``).  The answer, per facet: ``count``, the matching items that
hold a value of the index, and ``data``, ``{"value", "count"}`` pairs,
most first (buckets in the order given), each counted as the user would
find it with that value chosen instead of the facet's own criterion.

``@search`` takes a text index's ``as_you_type`` option
(``SearchableText.query=super%20expi&SearchableText.as_you_type=1``):
:class:`TextIndexQueryParser` hands it to the catalog as sent.

A search's results can carry snippets: ``metadata_fields=snippet``
(:class:`SummaryFields`) gives each item of a text search the passage of
its text around the words found, HTML (see :mod:`plone.pgcatalog.snippets`).

``GET /@suggestions?SearchableText=postgress&limit=5`` takes ``@search``'s
parameters (other indexes limit the words as they limit the results) and
answers ``{"@id", "items": [...]}``: other texts for the one typed, best
first (see :mod:`plone.pgcatalog.suggestions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from plone.app.querystring.interfaces import IParsedQueryIndexModifier
from plone.app.querystring.interfaces import IQueryModifier
from plone.app.querystring.queryparser import parseFormquery
from plone.restapi.deserializer import json_body
from plone.restapi.interfaces import IJSONSummarySerializerMetadata
from plone.restapi.interfaces import IZCatalogCompatibleQuery
from plone.restapi.search.query import ZCTextIndexQueryParser
from plone.restapi.serializer.converters import json_compatible
from plone.restapi.services import Service
from Products.CMFCore.utils import getToolByName
from Products.ZCatalog.ZCatalog import CatalogError
from typing import Any
from zExceptions import BadRequest
from zExceptions import NotFound
from zope.component import getMultiAdapter
from zope.component import getUtilitiesFor
from zope.interface import implementer


__all__ = ["FacetCount", "Suggestions", "SummaryFields", "TextIndexQueryParser"]


@implementer(IJSONSummarySerializerMetadata)
class SummaryFields:
    """What a search's items may carry besides metadata: ``snippet``
    (``brain.snippet()``: null where the search had no text query)."""

    def non_metadata_attributes(self) -> set[str]:
        return {"snippet"}


class TextIndexQueryParser(ZCTextIndexQueryParser):
    """plone.restapi's reading of a text index's query, which knows
    ``as_you_type`` (else it logs a warning at each search); the catalog
    reads its true or false as a form sends it ("1", "true", "0")."""

    query_options = {"as_you_type": str}


class FacetCount(Service):
    """``POST @facet-count``: facet counts of a querystring search."""

    def reply(self) -> dict:
        catalog = getToolByName(self.context, "portal_catalog")
        if getattr(catalog, "facetCounts", None) is None:
            raise NotFound("Facet counts need plone.pgcatalog installed in this site")
        body = json_body(self.request)
        if not isinstance(body, Mapping):
            raise BadRequest("The body must be a JSON object")
        try:
            facets = self._facets(body)
            query = self._catalog_query(body.get("query") or [])
            found = catalog.facetCounts(facets, query)
        except (CatalogError, KeyError, TypeError, ValueError, AttributeError) as error:
            raise BadRequest(f"Bad facet count request: {error}") from None
        return {
            "@id": f"{self.context.absolute_url()}/@facet-count",
            "facets": {
                name: {
                    "count": facet.matches,
                    "data": [{"value": json_compatible(value), "count": n} for value, n in facet.counts.items()],
                }
                for name, facet in found.items()
            },
        }

    def _catalog_query(self, criteria: list) -> dict:
        """The catalog query ``@querystring-search`` makes of *criteria*:
        plone.app.querystring's query modifiers, parser, index modifiers
        and text filter (Plone's search term munging)."""
        for _name, modifier in sorted(getUtilitiesFor(IQueryModifier), key=itemgetter(0)):
            criteria = modifier(criteria)
        query = parseFormquery(self.context, criteria)
        for name, modifier in getUtilitiesFor(IParsedQueryIndexModifier):
            if name in query:
                new_name, value = modifier(query.pop(name))
                query[new_name] = value
        builder = getMultiAdapter((self.context, self.request), name="querybuilderresults")
        return builder.filter_query(query)

    def _facets(self, body: Mapping) -> dict[str, Any]:
        """The facets to count, as ``facetCounts`` takes them: querystring
        buckets made catalog queries of their index."""
        if "facet" in body:
            facets: Any = {body["facet"]: None}
        else:
            facets = body.get("facets")
        if isinstance(facets, list):
            facets = dict.fromkeys(facets)
        if not isinstance(facets, Mapping) or not facets:
            raise ValueError('name the facets: "facet": "<index>" or "facets": [...]')
        return {name: None if buckets is None else self._buckets(name, buckets) for name, buckets in facets.items()}

    def _buckets(self, name: str, buckets: Any) -> dict[str, Any]:
        if not isinstance(buckets, Mapping):
            raise ValueError(f"the buckets of {name!r} must map names to criteria")
        made = {}
        for label, criteria in buckets.items():
            if not isinstance(criteria, list) or not all(isinstance(row, Mapping) for row in criteria):
                raise ValueError(f"bucket {label!r} of {name!r} must be a list of criteria")
            query = parseFormquery(self.context, [{**row, "i": name} for row in criteria])
            if name not in query:
                raise ValueError(f"bucket {label!r} of {name!r} has no criterion of that index")
            made[label] = query[name]
        return made


class Suggestions(Service):
    """``GET @suggestions``: "did you mean" for a text search."""

    def reply(self) -> dict:
        catalog = getToolByName(self.context, "portal_catalog")
        if getattr(catalog, "suggestions", None) is None:
            raise NotFound("Suggestions need plone.pgcatalog installed in this site")
        query = dict(self.request.form)
        limit = query.pop("limit", "5")
        try:
            limit = int(limit)
            query = getMultiAdapter((self.context, self.request), IZCatalogCompatibleQuery)(query)
            found = catalog.suggestions(query, limit=limit)
        except (CatalogError, TypeError, ValueError) as error:
            raise BadRequest(f"Bad suggestions request: {error}") from None
        return {"@id": f"{self.context.absolute_url()}/@suggestions", "items": found}
