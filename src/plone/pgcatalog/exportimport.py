"""GenericSetup: ``catalog.xml`` settings on the catalog's indexes and lexicons.

GenericSetup's catalog importer adds a missing index with ``addIndex`` and
then hands the ``<index>`` node to the index object's own node adapter:
``indexed_attr`` children for most indexes, ``since_field`` /
``until_field`` attributes for a DateRangeIndex, ``<property>`` children
for a DateIndex.  This adapter reads the same node for the catalog's index
views and updates the index definition; as ZCatalog clears an index whose
settings changed, the index's values are dropped until it is reindexed.

A ``ZCTextIndex Lexicon`` ``<object>`` lists its pipeline as ``<element
group=... name=...>`` children, as ZCatalog's lexicons do.
"""

from __future__ import annotations

from typing import Any

from plone.pgcatalog import registry as r
from plone.pgcatalog.interfaces import IPGIndex
from plone.pgcatalog.lexicon import Lexicon
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.privileges import owned_index_ddl
from Products.GenericSetup.interfaces import INode
from Products.GenericSetup.interfaces import ISetupEnviron
from Products.GenericSetup.utils import NodeAdapterBase
from Products.GenericSetup.ZCTextIndex.exportimport import ZCLexiconNodeAdapter
from Products.ZCTextIndex.PipelineFactory import element_factory
from zope.component import adapter
from zope.interface import implementer


__all__ = ["IndexNodeAdapter", "LexiconNodeAdapter", "reconfigure_index"]


# kinds configured by indexed_attr children (GenericSetup's
# PluggableIndexNodeAdapter and ZCTextIndexNodeAdapter)
_ATTR_KINDS = (r.FIELD, r.KEYWORD, r.UUID, r.BOOLEAN, r.TEXT)


def reconfigure_index(tool: Any, index: r.IndexDef) -> None:
    """Replace an index's definition by *index* (same name).  When it
    changed, its values are dropped (searches in this transaction no longer
    see them; the rows lose them at commit), as ZCatalog clears the index:
    ``reindexIndex`` fills it again."""
    defs = r.index_defs(tool)
    old = defs[index.name]
    if old == index and old.options == index.options:
        return
    ddl = owned_index_ddl(tool, index, f"Changing the index {index.name!r}")
    r.set_index_defs(tool, [index if d.name == index.name else d for d in defs.values()])
    pending = changes_for(tool)
    pending.ddl.extend(ddl)
    pending.clear_index(index.name, index.column)


def _true(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


@adapter(IPGIndex, ISetupEnviron)
@implementer(INode)
class IndexNodeAdapter(NodeAdapterBase):
    """Node im- and exporter for the catalog's indexes."""

    def _exportNode(self):
        index = self.context._def
        node = self._getObjectNode("index")
        if index.kind in _ATTR_KINDS or index.custom:
            for attr in index.source_names:
                child = self._doc.createElement("indexed_attr")
                child.setAttribute("value", attr)
                node.appendChild(child)
        elif index.kind == r.DATE_RANGE:
            node.setAttribute("since_field", index.options.get("since_field") or "")
            node.setAttribute("until_field", index.options.get("until_field") or "")
        return node

    def _importNode(self, node):
        index = self.context._def
        attrs, options = index.attrs, dict(index.options)
        if index.kind in _ATTR_KINDS or index.custom:
            values = [c.getAttribute("value") for c in node.childNodes if c.nodeName == "indexed_attr"]
            attrs = tuple(str(v) for v in values if v)
            if attrs == (index.name,):
                attrs = ()
        elif index.kind == r.DATE_RANGE:
            options["since_field"] = str(node.getAttribute("since_field")) or None
            options["until_field"] = str(node.getAttribute("until_field")) or None
        elif index.kind == r.DATE:
            for child in node.childNodes:
                if child.nodeName != "property":
                    continue
                name = child.getAttribute("name")
                text = "".join(c.nodeValue or "" for c in child.childNodes)
                if name == "index_naive_time_as_local":
                    options["naive_as_local"] = _true(text)
                elif name == "precision":
                    options["precision"] = int(text.strip() or 0)
        reconfigure_index(self.context._tool, r.IndexDef(index.name, index.kind, attrs, options))

    node = property(_exportNode, _importNode)


@adapter(Lexicon, ISetupEnviron)
@implementer(INode)
class LexiconNodeAdapter(ZCLexiconNodeAdapter):
    """Node im- and exporter for the catalog's lexicons: GenericSetup's own
    for ZCatalog's lexicons, whose export serves as it is.  Its import
    would reset vocabulary BTrees these lexicons do not have, and could not
    tell the tool, whose record holds the pipeline, that it changed."""

    def _importNode(self, node):
        pipeline = tuple(
            element_factory.instantiate(child.getAttribute("group"), child.getAttribute("name"))
            for child in node.childNodes
            if child.nodeName == "element"
        )
        if [type(e) for e in pipeline] != [type(e) for e in self.context._pipeline]:
            self.context.set_pipeline(pipeline)

    node = property(ZCLexiconNodeAdapter._exportNode, _importNode)
