"""Plone's search page (``@@search``) with what this catalog adds: how
many items each filter would find, "did you mean" when a search finds
little, and a passage of each result's text with the words found marked.

The page is CMFPlone's (its view, its query, its filters and sort
options), with a template of its own; it is registered for the browser
layer of sites that installed plone.pgcatalog.  The counts come from one
statement (``portal_catalog.facetCounts``): per item type, what the
search finds of that type whichever types are ticked; per "new items
since" choice, what it finds since then.  The page's script (pat-search)
replaces the results after each change of the form; the counts travel
with them and a few lines of the template's script put them on the
filters.
"""

from __future__ import annotations

from DateTime import DateTime
from plone.pgcatalog.interfaces import IPGCatalogTool
from Products.CMFCore.utils import getToolByName
from Products.CMFPlone.browser.search import Search as PloneSearch
from Products.Five.browser.pagetemplatefile import ViewPageTemplateFile
from Products.ZCatalog.ZCatalog import CatalogError
from Products.ZCTextIndex.ParseTree import ParseError
from typing import Any
from zope.cachedescriptors.property import Lazy as lazy_property
from zope.i18n import translate
from zope.i18nmessageid import MessageFactory
from ZTUtils import make_query

import json


__all__ = ["Search"]

_ = MessageFactory("plone")

SUGGEST_BELOW = 3
"""A text search that finds fewer items than this gets "did you mean"."""

# What a search page's query holds besides criteria
_NOT_CRITERIA = ("b_start", "b_size", "sort_on", "sort_order", "sort_limit")


class Search(PloneSearch):
    """``@@search`` with facet counts, suggestions and snippets."""

    index = ViewPageTemplateFile("templates/search.pt")

    def __call__(self) -> str:
        return self.index()

    @lazy_property
    def _catalog(self) -> Any:
        catalog = getToolByName(self.context, "portal_catalog")
        return catalog if IPGCatalogTool.providedBy(catalog) else None

    @lazy_property
    def _criteria(self) -> dict | None:
        """The page's query without batching and sorting (Plone's
        ``filter_query``, made once for the counts and the suggestion);
        None where the page searches nothing."""
        query = self.filter_query({})
        return {key: value for key, value in query.items() if key not in _NOT_CRITERIA} if query else None

    def created_options(self) -> list[dict]:
        """The "new items since" choices: id, label, value (a date)."""
        today = DateTime().earliestTime()
        choices = (
            ("yesterday", "time_yesterday", "Yesterday", today - 1),
            ("lastweek", "time_last_week", "Last week", today - 7),
            ("lastmonth", "time_last_month", "Last month", today - 31),
            ("ever", "time_ever", "Ever", DateTime("1970-01-02")),
        )
        return [
            {"id": id, "label": translate(_(msgid, default=default), context=self.request), "value": since.ISO()}
            for id, msgid, default, since in choices
        ]

    def created_checked(self) -> str:
        """The value of the chosen "new items since" choice."""
        created = self.request.form.get("created")
        query = created.get("query") if hasattr(created, "get") else None
        return query.ISO() if isinstance(query, DateTime) else self.created_options()[-1]["value"]

    @lazy_property
    def counts(self) -> dict[str, dict[str, int]]:
        """``{"portal_type": {type: n}, "created": {choice id: n}}``: what
        the search finds with each filter chosen instead of the one that is
        (none without a search, or on a catalog without facet counts)."""
        catalog = self._catalog
        if catalog is None or self._criteria is None:
            return {}
        created = {
            option["id"]: {"query": DateTime(option["value"]), "range": "min"} for option in self.created_options()
        }
        try:
            found = catalog.facetCounts({"portal_type": None, "created": created}, self._criteria)
        except (ParseError, CatalogError):
            return {}
        return {name: dict(facet.counts) for name, facet in found.items()}

    def counts_json(self) -> str:
        return json.dumps(self.counts)

    def suggestion(self, found: int) -> dict | None:
        """"Did you mean": the best other text for a text search that
        found fewer than :data:`SUGGEST_BELOW` items, with the URL of its
        search (the other choices of the form kept)."""
        text = self.request.form.get("SearchableText")
        if self._catalog is None or self._criteria is None or found >= SUGGEST_BELOW or not isinstance(text, str) or not text.strip():
            return None
        criteria = {key: value for key, value in self._criteria.items() if key != "SearchableText"}
        try:
            alternatives = self._catalog.suggestions(SearchableText=text, limit=1, **criteria)
        except (ParseError, CatalogError):
            return None
        if not alternatives:
            return None
        form = {key: value for key, value in self.request.form.items() if key not in ("b_start", "ajax_load")}
        form["SearchableText"] = alternatives[0]
        return {"text": alternatives[0], "url": f"{self.context.absolute_url()}/@@search?{make_query(form)}"}
