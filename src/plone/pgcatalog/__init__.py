"""plone.pgcatalog: a PostgreSQL-backed ``portal_catalog`` for Plone 6."""

from plone.pgcatalog.events import teach_plone_event_stdlib_zones
from plone.pgcatalog.patches import tell_catalog_of_order_objects
from plone.pgcatalog.toolset import guard_toolset_import
from zope.i18nmessageid import MessageFactory


_ = MessageFactory("plone.pgcatalog")

guard_toolset_import()
teach_plone_event_stdlib_zones()
tell_catalog_of_order_objects()
