"""plone.pgcatalog: a PostgreSQL-backed ``portal_catalog`` for Plone 6."""

from zope.i18nmessageid import MessageFactory


_ = MessageFactory("plone.pgcatalog")
