"""plone.pgcatalog: a PostgreSQL-backed ``portal_catalog`` for Plone 6."""

from plone.pgcatalog.toolset import guard_toolset_import
from zope.i18nmessageid import MessageFactory


_ = MessageFactory("plone.pgcatalog")

guard_toolset_import()
