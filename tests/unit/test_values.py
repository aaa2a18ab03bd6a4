"""Conversions between Python values and what the catalog stores."""

from datetime import date
from datetime import datetime
from datetime import UTC
from DateTime import DateTime
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.values import date_minutes
from plone.pgcatalog.values import decode_metadata
from plone.pgcatalog.values import encode_metadata
from plone.pgcatalog.values import is_rid
from plone.pgcatalog.values import json_text
from plone.pgcatalog.values import range_minutes
from zope.i18nmessageid import Message

import orjson
import unittest


class DateTest(unittest.TestCase):
    def test_date_index_minutes(self):
        # DateIndex: ((((year*12+month)*31+day)*24+hour)*60+minute), in UTC
        expected = ((((2024 * 12 + 3) * 31 + 5) * 24 + 13) * 60) + 7
        self.assertEqual(date_minutes(DateTime("2024/03/05 13:07:59 UTC")), expected)
        self.assertEqual(date_minutes(datetime(2024, 3, 5, 13, 7, tzinfo=UTC)), expected)
        self.assertIsNone(date_minutes(None))

    def test_beyond_4008(self):
        far = DateTime("9000/01/01 UTC")
        self.assertEqual(date_minutes(far), date_minutes(DateTime(4008, 0)))
        with self.assertRaises(OverflowError):
            date_minutes(10**20, clamp=False)

    def test_range_minutes(self):
        self.assertEqual(range_minutes(DateTime("1970/01/01 00:10 UTC")), 10)
        self.assertEqual(range_minutes(DateTime("1970/01/01 00:17 UTC"), precision=5), 15)
        self.assertIsNone(range_minutes(DateTime("1000/01/01 UTC") - 1))  # below DateRangeIndex's floor
        self.assertIsNone(range_minutes("not a date"))


class MetadataTest(unittest.TestCase):
    def test_round_trip(self):
        values = [
            ("a", "b"),
            DateTime("2024/03/05 13:07:59.5 GMT+2"),
            datetime(2024, 3, 5, 13, 7, tzinfo=UTC),
            date(2024, 3, 5),
            Message("label", domain="plone", default="Label"),
            {"nested": (1, 2.5)},
            1.0,
            float("inf"),
            {1, 2},
        ]
        for value in values:
            stored = orjson.loads(orjson.dumps(encode_metadata(value)))
            back = decode_metadata(stored)
            self.assertEqual(back, value)
            self.assertIs(type(back), type(value))
        self.assertEqual(decode_metadata(encode_metadata(Message("x", domain="d"))).domain, "d")


class ParameterTest(unittest.TestCase):
    def test_array_literal_quotes_every_element(self):
        self.assertEqual(array_literal(["a", 'b"c', "d\\e", None]), '{"a","b\\"c","d\\\\e",NULL}')
        self.assertEqual(array_literal([1, 2]), '{"1","2"}')

    def test_json_text_beyond_64_bits(self):
        self.assertEqual(json_text(2**70), str(2**70))

    def test_is_rid(self):
        self.assertTrue(is_rid(2**63 - 1))
        for odd in (2**63, True, "1", 1.0, None):
            self.assertFalse(is_rid(odd), odd)
