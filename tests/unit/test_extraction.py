"""Extraction that needs no site: values as ZCatalog's index kinds read them."""

from plone.pgcatalog.extraction import Attributes

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
