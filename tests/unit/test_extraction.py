"""Extraction that needs no site: values as ZCatalog's index kinds read them."""

from plone.pgcatalog.extraction import Attributes

import os
import subprocess
import sys
import unittest


class Content:
    def __init__(self, **values):
        self.__dict__.update(values)


class AttributesTest(unittest.TestCase):
    def test_attributes_read_through_a_reader(self):
        reads = []

        def get(name):
            reads.append(name)
            if name == "missing":
                raise AttributeError(name)
            return lambda: name.upper()

        attrs = Attributes(Content(), get)
        self.assertEqual(attrs.read("title"), "TITLE")
        self.assertEqual(attrs.read("title"), "TITLE")
        with self.assertRaises(AttributeError):
            attrs.read("missing")
        with self.assertRaises(AttributeError):
            attrs.read("missing")
        self.assertEqual(reads, ["title", "missing"])  # each name read once


class KeywordValuesTest(unittest.TestCase):
    def values(self, value):
        from plone.pgcatalog import registry as r
        from plone.pgcatalog.extraction import keyword_values

        return keyword_values(Attributes(Content(Subject=value)), r.IndexDef("Subject", r.KEYWORD))

    def test_the_same_values_in_any_order_are_kept_alike(self):
        expected = ["Editor", "Manager", "Reader", "user:admin"]
        for value in (
            ["user:admin", "Reader", "Manager", "Editor"],
            ("Editor", "Manager", "Reader", "user:admin", "Reader"),
        ):
            self.assertEqual(self.values(value), expected)

    def test_processes_of_other_hash_seeds_keep_a_set_alike(self):
        # allowedRolesAndUsers is made from a set, whose order follows the
        # process's hash seed: a row must not differ by the process that
        # wrote it (each difference is a change, and counts are made again)
        script = (
            "from plone.pgcatalog import registry as r\n"
            "from plone.pgcatalog.extraction import Attributes, keyword_values\n"
            "class C: pass\n"
            "c = C(); c.roles = set('Reader Editor Manager Contributor Reviewer user:admin'.split())\n"
            "print(keyword_values(Attributes(c), r.IndexDef('roles', r.KEYWORD)))"
        )
        made = {
            subprocess.run(
                [sys.executable, "-c", script],
                env={**os.environ, "PYTHONHASHSEED": str(seed)},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for seed in range(1, 9)
        }
        self.assertEqual(made, {"['Contributor', 'Editor', 'Manager', 'Reader', 'Reviewer', 'user:admin']\n"})

    def test_values_of_several_types_are_sorted_by_type_then_value(self):
        self.assertEqual(self.values([3, "b", 1, "a", 2.5]), [2.5, 1, 3, "a", "b"])
        self.assertEqual(self.values("single"), ["single"])
