"""The catalog's settings: an environment variable, else zope.conf.

Each setting is read from ``PGCATALOG_<NAME>`` (the name upper-cased,
dashes as underscores) when it is set, else from zope.conf::

    <product-config plone.pgcatalog>
        statement-timeout 5000
        pool-timeout 10
    </product-config>

| name | meaning | default |
| --- | --- | --- |
| ``statement-timeout`` | milliseconds a search may run before PostgreSQL cancels it (0: no limit) | 5000 |
| ``pool-max`` | connections of the pool that serves searches off the storage (``PGCATALOG_READ_DSN``) | 10 |
| ``pool-timeout`` | seconds a search waits for a free pooled connection | 30 |
| ``replica-wait`` | milliseconds a search waits for a replica to replay what the request saw, before the primary answers it | 100 |
"""

from __future__ import annotations

import os


__all__ = ["pool_max", "pool_timeout", "replica_wait", "setting", "statement_timeout"]


def setting(name: str, default: str) -> str:
    """The value of setting *name* (see the module's docstring)."""
    value = os.environ.get("PGCATALOG_" + name.upper().replace("-", "_"))
    if value is not None:
        return value
    try:
        from App.config import getConfiguration

        product_config = getattr(getConfiguration(), "product_config", None) or {}
    except ImportError:  # pragma: no cover - Zope is always there in Plone
        product_config = {}
    return (product_config.get("plone.pgcatalog") or {}).get(name, default)


def _number(name: str, default: str, kind=int):
    raw = setting(name, default)
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"plone.pgcatalog setting {name!r} must be a number, not {raw!r}") from None
    if value < 0:
        raise ValueError(f"plone.pgcatalog setting {name!r} must not be negative: {raw!r}")
    return value


# No request holds a database backend for long by default: a search that
# runs this long is a hostile or a broken one
DEFAULT_STATEMENT_TIMEOUT = "5000"


def statement_timeout() -> int:
    """Milliseconds a search may run (0: no limit)."""
    return _number("statement-timeout", DEFAULT_STATEMENT_TIMEOUT)


def pool_max() -> int:
    return max(1, _number("pool-max", "10"))


def pool_timeout() -> float:
    return _number("pool-timeout", "30", float)


def replica_wait() -> float:
    """Milliseconds a search waits for a replica (see :mod:`plone.pgcatalog.replicas`)."""
    return _number("replica-wait", "100", float)
