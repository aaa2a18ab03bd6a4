"""zope-testrunner that records each test's outcome, with or without the
catalog swapped in.

    python runner.py RECORD [--catalog] [zope-testrunner options]

Appends a line per test to RECORD: ``ok``, ``fail`` or ``error`` and the
test's id (a doctest's failures: ``<id>:<line>`` of each failed example; a
layer that cannot be set up is ``error Layer: <name>.setUp``).
Layers run in subprocesses start this script again, so they record too.
"""

from __future__ import annotations

import os
import re
import sys


RECORD_ENV = "PGCATALOG_UPSTREAM_RECORD"


def record(outcome: str, test, exc_info=None) -> None:
    name = test.id() if hasattr(test, "_testMethodName") or hasattr(test, "_dt_test") else str(test)
    names = [name]
    if outcome == "fail" and hasattr(test, "_dt_test") and exc_info is not None:
        # a doctest: each failed example by its line, so that a listed
        # difference does not hide another failure in the same file
        lines = re.findall(r"^File .*, line (\d+), in ", str(exc_info[1]), re.M)
        names = [f"{name}:{line}" for line in lines] or names
    with open(os.environ[RECORD_ENV], "a") as f:
        for one in names:
            f.write(f"{outcome} {one}\n")


def install_recorder() -> None:
    from zope.testrunner import runner

    result = runner.TestResult
    for method, outcome in (("addSuccess", "ok"), ("addFailure", "fail"), ("addError", "error")):
        original = getattr(result, method)

        def wrapped(self, test, *args, _original=original, _outcome=outcome):
            record(_outcome, test, *args)
            return _original(self, test, *args)

        setattr(result, method, wrapped)
    handle_layer_failure = runner.handle_layer_failure

    def layer_failure(failure, output, errors):
        record("error", failure)
        return handle_layer_failure(failure, output, errors)

    runner.handle_layer_failure = layer_failure
    balance_skips(result)


def balance_skips(result) -> None:
    """Set the layers up for a skipped test that CPython 3.12.1 reports
    without ``startTest`` (gh-113267, fixed in 3.12.2): its ``stopTest``
    still tears them down, and plone.app.testing's teardown then misses
    the portal and ends the whole run."""
    add_skip = result.addSkip

    def wrapped(self, test, reason):
        if not hasattr(self, "_test_state"):
            self.testSetUp()
        return add_skip(self, test, reason)

    result.addSkip = wrapped


def main() -> None:
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        os.environ[RECORD_ENV] = os.path.abspath(args.pop(0))
    if "--catalog" in args:
        args.remove("--catalog")
        os.environ["PGCATALOG_UPSTREAM_SWAP"] = "1"
    if os.environ.get("PGCATALOG_UPSTREAM_SWAP"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import swap

        swap.install()
    install_recorder()
    from zope.testrunner import run

    # a layer's subprocess is this script again, with the options it was given
    sys.argv[1:] = args
    run(args=[sys.argv[0], *args])


if __name__ == "__main__":
    main()
