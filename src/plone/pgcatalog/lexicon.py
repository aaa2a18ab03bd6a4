"""ZCTextIndex lexicons as word pipelines, stored inside the tool.

A ZCTextIndex lexicon (``plone_lexicon`` and its siblings in Plone's
``catalog.xml``) is a persistent object with two vocabulary BTrees.  The
catalog needs only its pipeline (splitter, case normaliser, stop words) to
turn text into the words ZCTextIndex would index and search, and keeps the
words themselves in PostgreSQL.  So a lexicon here is a plain item without a
vocabulary, pickled within the tool's own record: the tool stays the only
object the catalog keeps in ZODB.
"""

from __future__ import annotations

from typing import Any

from AccessControl import ClassSecurityInfo
from AccessControl.Permissions import query_vocabulary
from AccessControl.class_init import InitializeClass
from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from Acquisition import Implicit
from OFS.SimpleItem import Item
from Products.ZCTextIndex.Lexicon import _text2list
from ZPublisher import zpublish


__all__ = ["Lexicon", "META_TYPE", "lexicons"]


META_TYPE = "ZCTextIndex Lexicon"


class Lexicon(Implicit, Item):
    """A ZCTextIndex lexicon's pipeline, without its vocabulary."""

    meta_type = META_TYPE
    zmi_icon = "fas fa-book"
    # As a stock lexicon, open only to who may query vocabularies (Managers);
    # its methods serve the catalog's Python code and are no URLs at all
    security = ClassSecurityInfo()
    security.declareObjectProtected(query_vocabulary)
    security.declarePrivate("set_pipeline", "getPipelineNames", "process", "parseTerms", "isGlob")

    def __init__(self, id: str, title: str = "", *pipeline) -> None:
        self.id = str(id)
        self.title = str(title)
        self._pipeline = tuple(pipeline)

    @classmethod
    @zpublish(False)
    def like(cls, lexicon) -> Lexicon:
        """A lexicon with *lexicon*'s id, title and pipeline (a
        ``PLexicon`` of ZCatalog's, or one of ours)."""
        return cls(lexicon.getId(), lexicon.title, *lexicon._pipeline)

    def set_pipeline(self, pipeline) -> None:
        """New pipeline elements; stored with the tool that holds this
        lexicon (this item is part of the tool's record)."""
        self._pipeline = tuple(pipeline)
        tool = aq_parent(aq_inner(self))
        if tool is not None:
            aq_base(tool)._p_changed = True

    def getPipelineNames(self) -> list[str]:
        return [element.__class__.__name__ for element in self._pipeline]

    def process(self, texts: list[str]) -> list[str]:
        """The words ZCTextIndex would index for *texts*."""
        words = texts
        for element in self._pipeline:
            words = element.process(words)
        return words

    # what ZCTextIndex's QueryParser asks of a lexicon

    def parseTerms(self, text) -> list[str]:
        words = _text2list(text)
        for element in self._pipeline:
            words = getattr(element, "processGlob", element.process)(words)
        return words

    def isGlob(self, word: str) -> bool:
        return "*" in word or "?" in word


InitializeClass(Lexicon)


def lexicons(tool: Any) -> dict[str, Lexicon]:
    """The catalog's ZCTextIndex lexicons by id (a ``PLexicon`` left by an
    older release read as ours).  Kept with the tool until its items
    change (every text search asks): a lexicon is part of the tool's
    record, and ``set_pipeline`` changes it in place."""
    base = aq_base(tool)
    objects = getattr(base, "_objects", ())
    kept = base.__dict__.get("_v_lexicons")
    if kept is not None and kept[0] is objects:
        return kept[1]
    found, ours = {}, True
    for obj in tool.objectValues():
        if getattr(obj, "meta_type", None) == META_TYPE:
            ours = ours and isinstance(obj, Lexicon)
            found[obj.getId()] = aq_base(obj) if isinstance(obj, Lexicon) else Lexicon.like(obj)
    if ours:
        base._v_lexicons = (objects, found)  # a PLexicon is read anew each time
    return found
