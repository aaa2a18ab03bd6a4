"""Lazy search results and catalog brains.

A search selects identifiers only (zoid and path) plus the total count,
and of a large unbatched result only its first rows: ``len()`` is one
number, and the rest is selected when somebody walks that far.  Metadata is
loaded when a brain's metadata is first touched, in one query for a window
of brains starting at that one: what a listing is about to show, never the
whole result.  A small batch is a page about to be shown: its metadata
comes with its rows.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_get
from Acquisition import aq_parent
from Acquisition import Implicit
from Missing import MV
from plone.pgcatalog.snippets import DEFAULT_SIZE
from plone.pgcatalog.values import decode_metadata
from plone.pgcatalog.values import parsed_metadata
from Products.ZCatalog.interfaces import ICatalogBrain
from ZTUtils.Lazy import _marker
from ZTUtils.Lazy import Lazy
from zope.globalrequest import getRequest
from zope.interface import implementer
from zope.interface.common.sequence import IFiniteSequence
from ZPublisher.BaseRequest import RequestContainer


__all__ = ["CatalogBrain", "CatalogResults", "MAX_PAGE", "MIN_ROWS"]


MIN_WINDOW = 20  # metadata rows loaded at once, growing up to MAX_WINDOW
MAX_WINDOW = 1000
MIN_ROWS = 100  # identifiers selected at once, growing up to MAX_ROWS
MAX_ROWS = 10000
MAX_PAGE = 50  # a batch of up to this many rows is selected with its metadata


@implementer(IFiniteSequence)
class CatalogResults(Lazy):
    """A ``ZTUtils.Lazy`` sequence of brains over selected rows.

    It is a ``Lazy`` (plone.restapi serialises those) and a finite sequence
    (plone.app.contentlisting adapts those).

    ``len()`` is the number of rows in the result (the batch, when the query
    was batched); ``actual_result_count`` is the number of matches.  Of a
    batch (``b_size``, ``sort_limit``) the matches are counted when first
    asked for, unless the rows tell (a short last batch): the search for a
    page of a large result then stops at the page.  An unbatched search
    hands over its count and only its first rows: the others are selected
    when first used, a window at a time, by *load_rows(offset, limit)*,
    which pairs each row with its metadata.
    """

    def __init__(
        self,
        rows,
        columns,
        load_metadata,
        wrap,
        *,
        length=None,
        total=None,
        count=None,
        load_rows=None,
        metadata=None,
        snippets=None,
    ):
        self._rows = dict(enumerate(rows))  # position -> query.Row
        self._meta = dict(metadata or {})  # position -> metadata (JSON text until first read)
        self._length = length  # None: the number of matches
        self._total = total  # None: not counted yet
        self._count = count  # callable() -> number of matches
        self._columns = frozenset(columns)
        self._load_metadata = load_metadata  # callable(list[zoid]) -> {zoid: meta}
        self._load_rows = load_rows  # callable(offset, limit) -> [query.Row with its metadata, ...]
        self._wrap = wrap  # callable(brain) -> acquisition-wrapped brain
        self._brains = {}
        self._snippets = snippets  # snippets.Snippets of a text search, else None
        self._texts = {}  # position -> indexed text (None: none kept)
        self.metadata_queries = 0
        self.text_queries = 0
        self.row_queries = 0
        self.count_queries = 0

    def _matches(self) -> int:
        if self._total is None:
            self.count_queries += 1
            self._total = self._count()
        return self._total

    @property
    def actual_result_count(self) -> int:
        if self._rlen is not _marker:  # a caller set it (plone.app.querystring does)
            return self._rlen
        return self._matches()

    @actual_result_count.setter
    def actual_result_count(self, value) -> None:
        self._rlen = value

    def __len__(self):
        if self._length is None:
            self._length = self._matches()
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if index < 0 or (self._length is not None and index >= self._length):
            raise IndexError(index)
        return self._brain(index)

    def __iter__(self):
        # no count needed: walk until the rows run out
        position = 0
        while self._length is None or position < self._length:
            try:
                brain = self._brain(position)
            except IndexError:
                self._length = self._total = position
                return
            yield brain
            position += 1

    def _brain(self, position: int):
        brain = self._brains.get(position)
        if brain is None:
            brain = self._brains[position] = CatalogBrain(self, position, self._row(position))
        return self._wrap(brain)

    def _row(self, position: int) -> tuple:
        row = self._rows.get(position)
        if row is None:
            if self._load_rows is None:
                raise IndexError(position)
            # a window from here, growing fourfold with what was needed so
            # far: a walk of 2,000 rows takes two statements after the first
            window = max(MIN_ROWS, min(MAX_ROWS, 4 * len(self._rows)))
            self.row_queries += 1
            for offset, found in enumerate(self._load_rows(position, window), position):
                self._rows.setdefault(offset, found)
                self._meta.setdefault(offset, found.meta or {})
            row = self._rows.get(position)
            if row is None:
                raise IndexError(position)
        return row

    def _metadata_at(self, position: int) -> dict:
        """The metadata of the row at *position*, parsed."""
        meta = self._meta.get(position)
        if meta is None:
            self._metadata_for(position)
            meta = self._meta[position]
        if isinstance(meta, str):
            meta = self._meta[position] = parsed_metadata(meta)
        return meta

    def _metadata_for(self, position: int) -> None:
        """Load metadata for a window of rows starting at *position*."""
        positions = self._window(position, self._meta)
        zoids = [self._row(p).zoid for p in positions]
        found = self._load_metadata(zoids)
        self.metadata_queries += 1
        for p in positions:
            self._meta[p] = found.get(self._rows[p].zoid) or {}


    def _window(self, position: int, loaded: dict) -> list[int]:
        """The positions from *position* on whose rows are selected and not
        yet *loaded* (metadata or texts), up to a window that grows with
        what is loaded already."""
        window = max(MIN_WINDOW, min(MAX_WINDOW, len(loaded)))
        return [
            p for p in range(position, position + window) if p not in loaded and (p in self._rows or p == position)
        ]

    def _snippet_at(self, position: int, size: int) -> str | None:
        """The snippet of the row at *position* (see :mod:`~plone.pgcatalog.snippets`)."""
        snippets = self._snippets
        if snippets is None:
            return None
        if snippets.stored:
            if position not in self._texts:
                self._texts_for(position)
            text = self._texts[position]
        else:
            text = decode_metadata(self._metadata_at(position).get(snippets.index.name))
        return (snippets.passage(text, size) or None) if isinstance(text, str) else None

    def _texts_for(self, position: int) -> None:
        """Load the indexed texts of the rows of a page, from *position* on:
        the rows loaded after it, up to a window (a page shows them all)."""
        positions = self._window(position, self._texts)
        found = self._snippets.load([self._row(p).zoid for p in positions])
        self.text_queries += 1
        for p in positions:
            self._texts[p] = found.get(self._rows[p].zoid)


@implementer(ICatalogBrain)
class CatalogBrain(Implicit):
    """A catalog record: metadata attributes plus the ICatalogBrain methods."""

    __allow_access_to_unprotected_subobjects__ = True
    # ZCatalog's brains of unscored results say 1 and 1 (Catalog.__getitem__)
    data_record_score_ = 1
    data_record_normalized_score_ = 1

    def __init__(self, results, position, row):
        values = self.__dict__
        values["_results"] = results
        values["_position"] = position
        values["data_record_id_"] = row.zoid
        values["_path"] = row.path
        if row.score is not None:  # ordered by relevance
            values["data_record_score_"] = row.score
            values["data_record_normalized_score_"] = row.normalized_score

    def __getattr__(self, name):
        """A metadata column: loaded with its window on first use, decoded
        on first access (a listing reading Title never builds DateTimes)."""
        values = self.__dict__
        results = values.get("_results")
        if results is None or name not in results._columns:
            raise AttributeError(name)
        meta = values.get("_meta")
        if meta is None:
            meta = values["_meta"] = results._metadata_at(values["_position"])
        value = decode_metadata(meta[name]) if name in meta else MV
        values[name] = value
        return value

    def __getitem__(self, name):
        try:
            return getattr(aq_base(self), name)
        except AttributeError:
            raise KeyError(name) from None

    def has_key(self, name):
        return name in self.__dict__["_results"]._columns

    __contains__ = has_key

    def getPath(self) -> str:
        return self.__dict__["_path"]

    def snippet(self, size: int = DEFAULT_SIZE) -> str | None:
        """A passage of the text the catalog indexed, about *size*
        characters, around the words the search matched, which are in
        ``<mark>``: HTML, escaped.  None where the search had no text
        query, or the item no text (cataloged before this was kept)."""
        values = self.__dict__
        return values["_results"]._snippet_at(values["_position"], size)

    def getRID(self) -> int:
        return self.__dict__["data_record_id_"]

    def _request(self):
        request = aq_get(self, "REQUEST", None)
        if request is None or isinstance(request, str):
            request = getRequest()
        return request

    def getURL(self, relative=0) -> str:
        request = self._request()
        if request is None:
            return self.getPath()
        return request.physicalPathToURL(self.getPath(), relative)

    def _root(self):
        """Where the object's path is traversed from: the catalog, or,
        when no ``REQUEST`` is acquirable there (a tool looked up as a
        utility), the physical root on the current request, as ZCatalog's
        brains do: the object's indexers and views need the request."""
        parent = aq_parent(self)
        if parent is None:
            from zope.component.hooks import getSite

            parent = getSite()
        if parent is not None and aq_get(parent, "REQUEST", None) is None:
            request = getRequest()
            if request is not None:
                parent = aq_base(parent.getPhysicalRoot()).__of__(RequestContainer(REQUEST=request))
        return parent

    def getObject(self, REQUEST=None):
        """The object, traversing parents unrestricted and the leaf restricted,
        as ZCatalog does (a visible item inside a private folder opens)."""
        path = self.getPath().split("/")
        root = self._root()
        if root is None:
            return None
        parent = root.unrestrictedTraverse("/".join(path[:-1]) or "/")
        return parent.restrictedTraverse(path[-1])

    def _unrestrictedGetObject(self):
        root = self._root()
        if root is None:
            return None
        return root.unrestrictedTraverse(self.getPath())

    def __repr__(self):
        return f"<CatalogBrain {self.getPath()}>"
