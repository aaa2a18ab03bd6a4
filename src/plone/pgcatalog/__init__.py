"""plone.pgcatalog: a PostgreSQL-backed ``portal_catalog`` for Plone 6."""

from plone.pgcatalog import patches
from zope.i18nmessageid import MessageFactory


_ = MessageFactory("plone.pgcatalog")

patches.apply()
