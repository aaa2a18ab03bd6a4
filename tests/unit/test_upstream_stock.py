"""Plone's suites compare with a stock outcome recorded, and run on stock
after all where the record would make the run fail (tests/upstream/run.py)."""

from pathlib import Path
from unittest import mock

import importlib.util
import sys
import tempfile
import unittest


_spec = importlib.util.spec_from_file_location(
    "upstream_run", Path(__file__).parent.parent / "upstream" / "run.py"
)
assert _spec is not None and _spec.loader is not None
upstream = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = upstream  # (its dataclasses look their module up)
_spec.loader.exec_module(upstream)


class RecordedStockTest(unittest.TestCase):
    def setUp(self):
        self.workdir = Path(tempfile.mkdtemp())
        self.stock_dir = Path(tempfile.mkdtemp())
        self.suite = upstream.Suite(name="some suite", package="some.package")
        self.runs: list[bool] = []
        self.outcomes = {True: "ok t.a\nok t.b\n", False: "ok t.a\nok t.b\n"}
        patches = [
            mock.patch.object(upstream, "STOCK", self.stock_dir),
            mock.patch.object(
                upstream.Suite, "stock_record", lambda suite: self.stock_dir / "suite.key.record"
            ),
            mock.patch.object(upstream, "run", self.fake_run),
            mock.patch.object(upstream, "HERE", self.stock_dir / "a" / "b"),
        ]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)

    def fake_run(self, suite, catalog, workdir):
        """A run of the suite, as recorded by runner.py."""
        self.runs.append(catalog)
        record = workdir / f"{suite.slug()}.{'catalog' if catalog else 'stock'}.record"
        record.write_text(self.outcomes[catalog])
        log = record.with_suffix(".log")
        log.write_text("")
        return upstream.outcome_of(record, log, 2 if catalog else 0, 1.0)

    def test_stock_run_once_then_read(self):
        self.assertEqual(upstream.check(self.suite, self.workdir), [])
        self.assertEqual(self.runs, [True, False])
        self.assertEqual((self.stock_dir / "suite.key.record").read_text(), "ok t.a\nok t.b\n")
        self.assertEqual(upstream.check(self.suite, self.workdir), [])
        self.assertEqual(self.runs, [True, False, True])

    def test_stock_run_again_where_the_record_would_fail_the_run(self):
        (self.stock_dir / "suite.key.record").write_text("ok t.a\nok t.b\n")
        # t.b fails on stock today as with the catalog: not the catalog's
        self.outcomes = {True: "ok t.a\nfail t.b\n", False: "ok t.a\nfail t.b\n"}
        self.assertEqual(upstream.check(self.suite, self.workdir), [])
        self.assertEqual(self.runs, [True, False])
        self.assertEqual((self.stock_dir / "suite.key.record").read_text(), "ok t.a\nfail t.b\n")

    def test_a_failure_only_with_the_catalog_fails_the_run_either_way(self):
        (self.stock_dir / "suite.key.record").write_text("ok t.a\nok t.b\n")
        self.outcomes = {True: "ok t.a\nfail t.b\n", False: "ok t.a\nok t.b\n"}
        problems = upstream.check(self.suite, self.workdir)
        self.assertEqual(len(problems), 1)
        self.assertIn("fails only with the catalog: t.b", problems[0])
        self.assertEqual(self.runs, [True, False])


class UnpinnedTest(unittest.TestCase):
    """A venv's package that the constraints leave free moves a fresh
    venv's stock record key with each of its releases."""

    def test_a_package_left_free_is_named(self):
        import importlib.metadata

        names = sorted({d.name for d in importlib.metadata.distributions()} - {"pip", "plone.pgcatalog"})
        self.assertGreater(len(names), 1)
        constraints = Path(tempfile.mkdtemp()) / "constraints.txt"
        # pinned in spellings pip accepts: case, '-' for '_' or '.'
        pins = [f"{name.upper().replace('.', '-').replace('_', '-')}==1" for name in names[1:]]
        constraints.write_text("# a comment\n" + "\n".join(pins) + "\n")
        self.assertEqual(upstream.unpinned(sys.executable, constraints), [names[0]])
        constraints.write_text("\n".join([f"{names[0]}==1", *pins]) + "\n")
        self.assertEqual(upstream.unpinned(sys.executable, constraints), [])
