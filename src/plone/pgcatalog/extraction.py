"""Object → catalog row: index values, full text and metadata.

Reads the attributes of an ``IIndexableObject`` wrapper the way each
ZCatalog index kind reads them (callables are called, missing attributes
and ``None`` leave the index without a value), so that a value is indexed
here exactly when ZCatalog would index it.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence

from Acquisition import aq_base
from Acquisition import aq_parent
from Acquisition import aq_self
from Acquisition import ImplicitAcquisitionWrapper
from DateTime import DateTime
from DateTime.interfaces import DateError
from DateTime.interfaces import SyntaxError as DateTimeSyntaxError
from DateTime.interfaces import TimeError
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from Missing import MV
from plone.event.recurrence import recurrence_sequence_ical
from plone.event.utils import dt2int
from plone.event.utils import pydt
from plone.indexer.interfaces import IIndexableObject
from plone.indexer.interfaces import IIndexer
from plone.indexer.wrapper import IndexableObjectWrapper
from plone.pgcatalog import registry as r
from plone.pgcatalog.lexicon import lexicons
from plone.pgcatalog.row import CatalogRow
from plone.pgcatalog.row import INDEXED_TEXT
from plone.pgcatalog.text import MAX_LEXEME_BYTES
from plone.pgcatalog.values import date_minutes
from plone.pgcatalog.values import range_minutes
from plone.pgcatalog.values import encode_metadata
from Products.CMFCore.utils import getToolByName

from zope.component import getSiteManager
from zope.component import queryMultiAdapter
from zope.interface import providedBy
from zope.interface.adapter import AdapterLookupBase
from zope.interface.registry import Components

import logging
import re


logger = logging.getLogger(__name__)

_marker = object()

# PostgreSQL limits: lexemes under 2 KiB (text.MAX_LEXEME_BYTES), a tsvector under 1 MiB.
_MAX_TSVECTOR_BYTES = 900_000
_MAX_POSITION = 16383

_FALLBACK_WORDS = re.compile(r"\w+", re.UNICODE)


def safe_callable(value) -> bool:
    return callable(value) and not isinstance(value, type)


class Attributes:
    """The object's attributes as the catalog reads them (called if
    callable), each read once per extraction: indexes and metadata columns
    share most names (Title, review_state, modified...), and every read of
    a plone.indexer wrapper costs an adapter lookup and often more."""

    def __init__(self, obj, get: Callable[[str], Any] | None = None):
        self.obj = obj
        self._get = get or partial(getattr, obj)
        self._read: dict[str, tuple[bool, object]] = {}

    def read(self, name: str):
        """The value of *name*; raises what reading or calling it raised."""
        outcome = self._read.get(name)
        if outcome is None:
            try:
                value = self._get(name)
                if safe_callable(value):
                    value = value()
                outcome = (True, value)
            except Exception as exc:
                outcome = (False, exc)
            self._read[name] = outcome
        ok, value = outcome
        if not ok:
            raise value
        return value


def _datum(attrs: Attributes, attr: str):
    """UnIndex's reading of an attribute: called if callable, else as is."""
    try:
        return attrs.read(attr)
    except (AttributeError, TypeError):
        return _marker


def field_value(attrs: Attributes, index: r.IndexDef):
    value = _marker
    for attr in index.source_names:
        datum = _datum(attrs, attr)
        if datum is not _marker and datum is not None and datum is not MV:
            value = datum
        elif datum is None and index.kind == r.GOPIP:
            value = r.UNORDERED  # an unordered folder's child: no position
    if value is _marker:
        return _marker
    if index.kind == r.BOOLEAN:
        return bool(value)
    if index.kind == r.GOPIP:  # compared as bigint
        return value if isinstance(value, int) and not isinstance(value, bool) else _marker
    return json_scalar(value)


def json_scalar(value):
    """A field value as JSON: dates become ISO text in UTC, others stay."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, DateTime):
        return value.toZone("UTC").ISO8601()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def keyword_values(attrs: Attributes, index: r.IndexDef):
    keywords = []
    for attr in index.source_names:
        value = _datum(attrs, attr)
        if value is _marker or not value:
            continue
        if isinstance(value, (str, bytes)):
            value = (value,)
        else:
            try:
                value = tuple(set(value))
            except TypeError:
                value = (value,)
        for v in value:
            v = json_scalar(v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
            if v not in keywords:
                keywords.append(v)
    # sorted: ZCatalog keeps them in a set's order, which follows the
    # process's hash seed, and here the same values in another order would
    # be a change (a row written again, every count reading the index made
    # again); no search or sort reads their order
    return sorted(keywords, key=_keyword_order) or _marker


def _keyword_order(value) -> tuple[str, Any]:
    return type(value).__name__, value


def date_value(attrs: Attributes, index: r.IndexDef):
    result = _marker
    for attr in index.source_names:
        datum = _datum(attrs, attr)
        if datum is _marker or datum is None:
            continue
        try:
            converted = date_minutes(
                datum,
                naive_as_local=index.options.get("naive_as_local", True),
                precision=index.options.get("precision", 0),
            )
        except (OverflowError, ValueError, TypeError, DateTimeSyntaxError, DateError, TimeError):
            logger.warning("%s: cannot index %r as a date", index.name, datum)
            continue
        if converted is not None:
            result = converted
    return result


def date_range_value(attrs: Attributes, index: r.IndexDef):
    since_field = index.options.get("since_field")
    until_field = index.options.get("until_field")
    if not since_field:
        return _marker
    precision = index.options.get("precision", 0)
    values = []
    for name, open_end in ((since_field, r.OPEN_START), (until_field, r.OPEN_END)):
        value = _datum(attrs, name) if name else None
        minutes = range_minutes(None if value is _marker else value, precision)
        values.append(open_end if minutes is None else minutes)
    return values


def recurring_value(attrs: Attributes, index: r.IndexDef):
    """DateRecurringIndex's values: every occurrence of the recurrence rule
    (``recurdef``, bounded by ``until``) from the indexed date, in minutes.
    As there, a missing attribute is no value and ``None`` is minute 0."""
    start = _datum(attrs, index.name)
    if start is _marker:
        return _marker
    recurdef_attr = index.options.get("recurdef")
    recurdef = _datum(attrs, recurdef_attr) if recurdef_attr else None
    if recurdef is _marker or not recurdef:
        dates = [pydt(start)]
    else:
        until_attr = index.options.get("until")
        until = _datum(attrs, until_attr) if until_attr else None
        dates = recurrence_sequence_ical(start, recrule=recurdef, until=None if until is _marker else until)
    return sorted({dt2int(date) for date in dates})


def text_sources(attrs: Attributes, index: r.IndexDef) -> list[str] | None:
    """The texts ZCTextIndex would index, before the lexicon's pipeline,
    or None when no source attribute gave a string (as ZCTextIndex, which
    takes strings and lists of strings and drops anything else)."""
    texts = []
    for attr in index.source_names:
        datum = _datum(attrs, attr)
        if datum is _marker or datum is None:
            continue
        if isinstance(datum, (list, tuple, set)):
            texts.extend(datum)
        else:
            texts.append(datum)
    texts = [text for text in texts if isinstance(text, str)]
    return texts or None


MAX_INDEXED_TEXT = 1_000_000
"""The most characters of a text kept for snippets (a file's extracted
text can be far longer; its words are indexed all the same)."""


def indexed_text(texts: list[str]) -> str:
    """What the catalog keeps of the texts it indexed (``indexed_text``),
    which snippets quote."""
    return "\n".join(texts)[:MAX_INDEXED_TEXT]


def fallback_pipeline(texts: list[str]) -> list[str]:
    return [w.lower() for text in texts for w in _FALLBACK_WORDS.findall(text)]


def text_value(words: list[str]) -> tuple[str | None, list]:
    """Words in document order → a ``tsvector`` literal with positions (for
    phrases and frequencies; None without words) and the index's word
    counts: the number of words, which Okapi BM25 scores need, and the
    frequencies its positions do not tell (a ``tsvector`` keeps at most 256
    positions per word, and none past 16,383).  Searches read a word's
    frequency from its positions (``pgcatalog_frequency``): the counts stay
    a few bytes, in the row, where reading every word's frequency made each
    scored match fetch them out of line."""
    positions: dict[str, list[int]] = {}
    frequencies: dict[str, int] = {}
    size = 0
    for pos, word in enumerate(words, start=1):
        if not word or len(word.encode("utf-8")) > MAX_LEXEME_BYTES:
            continue
        where = positions.get(word)
        if where is None:
            size += len(word.encode("utf-8")) + 8
            if size > _MAX_TSVECTOR_BYTES:
                break
            positions[word] = where = []
        frequencies[word] = frequencies.get(word, 0) + 1
        if len(where) < 256:  # PostgreSQL keeps at most 256 positions per lexeme
            where.append(min(pos, _MAX_POSITION))
    parts = []
    untold = {}
    for word, where in positions.items():
        stored = sorted(set(where))
        if len(stored) != frequencies[word]:
            untold[word] = frequencies[word]
        quoted = word.replace("\\", "\\\\").replace("'", "''")
        parts.append(f"'{quoted}':{','.join(map(str, stored))}")
    return " ".join(parts) or None, [len(words), untold]


def extract(
    obj: Any,
    uid: str,
    indexes: Iterable[r.IndexDef],
    columns: Iterable[str],
    pipelines: Mapping[str, Any],
    idxs: Sequence[str] | None = None,
    with_metadata: bool = True,
    get: Callable[[str], Any] | None = None,
) -> CatalogRow:
    """The catalog row of *obj* cataloged under *uid*.

    ``word_counts`` holds, per text index, its number of words and their
    frequencies (None: no text to index).  With *idxs*, only those indexes
    are extracted and the row is partial; without *with_metadata*, its
    ``meta`` is None (the committed metadata stays).  *get* reads an
    attribute of *obj* as ``getattr`` would (:func:`wrapper_reader`).
    """
    attrs = Attributes(obj, get)
    wanted = None if not idxs else set(idxs)
    idx = {}
    word_counts = {}
    own = {}
    for index in indexes:
        if wanted is not None and index.name not in wanted:
            continue
        kind = index.kind
        if kind == r.PATH:
            continue
        if kind == r.TEXT:
            pipeline = pipelines.get(index.options.get("lexicon_id")) or fallback_pipeline
            texts = text_sources(attrs, index)
            literal, counts = text_value(pipeline(texts)) if texts is not None else (None, None)
            value = literal if literal is not None else _marker
            word_counts[index.name] = counts
            if index.column is not None:  # SearchableText: its text too
                own[INDEXED_TEXT] = None if texts is None else indexed_text(texts)
        elif kind in (r.FIELD, r.UUID, r.BOOLEAN, r.GOPIP):
            value = field_value(attrs, index)
        elif kind == r.KEYWORD:
            value = keyword_values(attrs, index)
        elif kind == r.DATE:
            value = date_value(attrs, index)
        elif kind == r.DATE_RANGE:
            value = date_range_value(attrs, index)
        elif kind == r.DATE_RECURRING:
            value = recurring_value(attrs, index)
        else:  # an add-on's kind (IIndexKind)
            datum = r.custom_kind(kind).value(attrs.obj, index)
            value = _marker if datum is None else datum
        if index.column is not None:
            own[index.column] = None if value is _marker else value
        else:
            _put(idx, index.name, value)
    meta = metadata(attrs, columns) if with_metadata else None
    return CatalogRow(uid, idx, word_counts, meta, partial=wanted is not None, own=own)


def _put(idx: dict, name: str, value) -> None:
    # An index without a value is left out entirely: "not indexed" is not
    # "indexed as None" (a null would match queries for None).
    idx[name] = None if value is _marker else value


def metadata(attrs: Attributes, columns: Iterable[str]) -> dict:
    """Catalog.recordify: each column's value, called if callable."""
    meta = {}
    for name in columns:
        try:
            value = attrs.read(name)
        except AttributeError:
            continue
        except Exception:
            logger.exception("metadata %s of %r failed", name, aq_base(attrs.obj))
            continue
        if value is MV:
            continue
        meta[name] = encode_metadata(value)
    return meta


__all__ = [
    "Walk",
    "catalog_row",
    "extract",
    "indexable",
    "metadata",
    "text_pipelines",
    "walking",
    "wrapper_reader",
]


def catalog_row(
    tool: Any,
    obj: Any,
    uid: str,
    idxs: Sequence[str] | None = None,
    with_metadata: bool = True,
    columns: Sequence[str] | None = None,
) -> CatalogRow:
    """The row *tool* catalogs for *obj* under *uid* (see :func:`extract`),
    from the object as plone.indexer wraps it for this catalog; with
    *columns*, only those metadata columns."""
    wrapper, get = indexable(obj, tool)
    walk = _walk.get()
    pipelines = text_pipelines(tool) if walk is None else walk.pipelines(tool)
    return extract(
        wrapper,
        uid,
        r.index_defs(tool).values(),
        r.metadata_columns(tool) if columns is None else columns,
        pipelines,
        idxs,
        with_metadata,
        get,
    )


def text_pipelines(tool: Any) -> dict[str, Callable]:
    """The text pipelines of *tool*'s lexicons, by lexicon id."""
    return {name: lexicon.process for name, lexicon in lexicons(tool).items()}


class Walk:
    """What stays the same while a rebuild walks the site in one
    transaction, read once instead of once per object: the catalog's text
    pipelines, the workflow tool plone.indexer's wrapper asks for the
    object's workflow variables, and what each container gives its
    children by acquisition (see :func:`wrapper_reader`)."""

    MAX_CONTAINERS = 1000

    def __init__(self) -> None:
        self._tools: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._acquired: dict[int, tuple[Any, dict[str, bool]]] = {}

    def forget(self) -> None:
        """Read everything again from now on: a walk that commits as it
        goes (an install) sees the site as other transactions left it."""
        self._tools.clear()
        self._acquired.clear()

    def _of(self, catalog: Any, what: str, read: Callable[[Any], Any]) -> Any:
        base = aq_base(catalog)
        held = self._tools.get(id(base))
        if held is None or held[0] is not base:
            held = self._tools[id(base)] = (base, {})
        if what not in held[1]:
            held[1][what] = read(catalog)
        return held[1][what]

    def pipelines(self, catalog: Any) -> dict[str, Callable]:
        """:func:`text_pipelines`, once per catalog."""
        return self._of(catalog, "pipelines", text_pipelines)

    def workflow_tool(self, catalog: Any) -> Any:
        """``getToolByName(catalog, "portal_workflow", None)``, once per catalog."""
        return self._of(catalog, "workflow", lambda tool: getToolByName(tool, "portal_workflow", None))

    def acquires_nothing(self, container: Any, name: str) -> bool:
        """Whether a child of *container* (an acquisition wrapper, the same
        for all the children a walk lists) that lacks *name* gets nothing
        for it from the wrapper: acquisition finds no attribute, or one
        that is no Python Script."""
        held = self._acquired.get(id(container))
        if held is None or held[0] is not container:
            if len(self._acquired) >= self.MAX_CONTAINERS:
                self._acquired.clear()
            held = self._acquired[id(container)] = (container, {})
        outcome = held[1].get(name)
        if outcome is None:
            try:
                found = getattr(container, name)
            except AttributeError:
                outcome = True
            else:
                outcome = getattr(found, "meta_type", None) != PYTHON_SCRIPT
            held[1][name] = outcome
        return outcome


_walk: ContextVar[Walk | None] = ContextVar("plone.pgcatalog.walk", default=None)


@contextmanager
def walking() -> Iterator[Walk]:
    """Extraction within the block may rely on a :class:`Walk`: the site
    does not change while it runs (one transaction, cataloging only)."""
    token = _walk.set(Walk())
    try:
        yield _walk.get()
    finally:
        _walk.reset(token)


def _indexer_lookup() -> Callable | None:
    """The registry lookup ``zope.component.queryMultiAdapter`` makes in
    the current site, or None where it would not make it that way."""
    try:
        site_manager = getSiteManager()
    except Exception:
        return None
    query = getattr(site_manager, "queryMultiAdapter", None)
    adapters = getattr(getattr(site_manager, "adapters", None), "queryMultiAdapter", None)
    if (
        getattr(query, "__func__", None) is not Components.queryMultiAdapter
        or getattr(adapters, "__func__", None) is not AdapterLookupBase.queryMultiAdapter
    ):
        return None
    return adapters.__self__.lookup


def indexable(obj: Any, tool: Any) -> tuple[Any, Callable[[str], Any] | None]:
    """*obj* as the catalog reads it, ``IIndexableObject`` (as ZCatalog
    adapts it), and how to read its attributes (None: ``getattr``).

    What *obj* provides is computed once, for the adapter lookup and for
    :func:`wrapper_reader`; during a :func:`walking` block plone.indexer's
    wrapper gets its workflow variables from the walk's workflow tool."""
    spec = providedBy(obj)
    if spec.isOrExtends(IIndexableObject):
        return obj, None
    lookup = _indexer_lookup()
    if lookup is None:
        wrapper = queryMultiAdapter((obj, tool), IIndexableObject) or obj
        return wrapper, wrapper_reader(wrapper)
    required = (spec, providedBy(tool))
    factory = lookup(required, IIndexableObject, "")
    walk = _walk.get()
    if factory is IndexableObjectWrapper and walk is not None:
        # IndexableObjectWrapper.__init__, with the tool it looks up each time
        wrapper = IndexableObjectWrapper.__new__(IndexableObjectWrapper)
        workflow = walk.workflow_tool(tool)
        state = vars(wrapper)
        state["_IndexableObjectWrapper__object"] = obj
        state["_IndexableObjectWrapper__catalog"] = tool
        state["_IndexableObjectWrapper__vars"] = {}
        if workflow is not None:
            state["_IndexableObjectWrapper__vars"] = workflow.getCatalogVariablesFor(obj)
    else:
        wrapper = (factory(obj, tool) if factory is not None else None) or obj
    return wrapper, wrapper_reader(wrapper, lookup, required, walk)


_WRAPPER_NAMES = frozenset(dir(IndexableObjectWrapper))
PYTHON_SCRIPT = "Script (Python)"


def wrapper_reader(
    wrapper: Any, lookup: Callable | None = None, required: tuple | None = None, walk: Walk | None = None
) -> Callable[[str], Any] | None:
    """``getattr(wrapper, name)`` for plone.indexer's wrapper, without its
    cost per name: the wrapper looks the name's indexer up as
    ``queryMultiAdapter((object, catalog), IIndexer, name)`` does, which
    computes what the object provides again for every name (for Dexterity
    content a schema and behaviours cache check, some 40 times per object:
    a seventh of extraction on the benchmark site).  Here it is computed
    once per object (*required*) and the same registry lookup is made with
    it; everything else is the wrapper's own ``__getattr__``, step by step.

    In a *walk*, a name the object lacks is not acquired from its container
    once per child: the wrapper drops what acquisition finds unless it is
    a Python Script, so only whether the container gives a Python Script
    matters, and the walk knows it per container.  None (plain
    ``getattr``) for any other wrapper or registry."""
    if type(wrapper) is not IndexableObjectWrapper:
        return None
    lookup = lookup or _indexer_lookup()
    if lookup is None:
        return None
    state = vars(wrapper)
    obj = state["_IndexableObjectWrapper__object"]
    catalog = state["_IndexableObjectWrapper__catalog"]
    workflow_vars = state["_IndexableObjectWrapper__vars"]
    required = required or (providedBy(obj), providedBy(catalog))
    base = aq_base(obj)
    container = None
    if walk is not None and type(obj) is ImplicitAcquisitionWrapper and aq_self(obj) is base:
        container = aq_parent(obj)

    def read(name: str) -> Any:
        if name in _WRAPPER_NAMES or name in state:
            return getattr(wrapper, name)  # not a name the wrapper's __getattr__ serves
        factory = lookup(required, IIndexer, name)
        if factory is not None:
            indexer = factory(obj, catalog)
            if indexer is not None:
                return indexer()
        if name in workflow_vars:
            return workflow_vars[name]
        if container is not None and not name.startswith(("_", "aq_")):
            try:
                getattr(base, name)
            except AttributeError:
                if walk.acquires_nothing(container, name):
                    raise
            else:
                return getattr(obj, name)
        value = getattr(obj, name)
        try:
            getattr(base, name)
        except AttributeError:
            # an acquired attribute counts only if it is a Python Script
            if getattr(value, "meta_type", None) == PYTHON_SCRIPT:
                return value
            raise
        return value

    return read
