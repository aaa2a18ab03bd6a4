"""Fast tests of the pure modules: no PostgreSQL, no Plone site.

Run them alone in seconds with ``./scripts/test -m unit``; the
differential suites next to them stay the specification.
"""
