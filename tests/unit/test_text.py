"""ZCTextIndex query syntax → tsquery."""

from plone.pgcatalog.text import glob_like
from plone.pgcatalog.text import lexeme
from plone.pgcatalog.text import MAX_LEXEME_BYTES
from plone.pgcatalog.text import MAX_TEXT_TERMS
from plone.pgcatalog.errors import TextQueryTooLong
from plone.pgcatalog.text import node_tsquery
from plone.pgcatalog.text import parse
from plone.pgcatalog.text import text_condition
from Products.ZCTextIndex.ParseTree import ParseError

import unittest


def tsquery(text):
    return node_tsquery(parse(text))


class ParseTest(unittest.TestCase):
    def test_operators(self):
        self.assertEqual(tsquery("foo bar"), "('foo' & 'bar')")
        self.assertEqual(tsquery("foo OR bar"), "('foo' | 'bar')")
        self.assertEqual(tsquery("foo AND NOT bar"), "('foo' & !'bar')")
        self.assertEqual(tsquery('"foo bar"'), "('foo' <-> 'bar')")
        self.assertEqual(tsquery("foo*"), "'foo':*")

    def test_empty_and_invalid_queries(self):
        self.assertIsNone(parse(""))
        with self.assertRaises(ParseError):
            parse("AND")

    def test_quotes_in_words_stay_inside_the_lexeme(self):
        self.assertEqual(lexeme("it's"), "'it''s'")

    def test_words_too_long_for_postgresql_match_nothing(self):
        self.assertNotIn("x" * MAX_LEXEME_BYTES, lexeme("x" * (MAX_LEXEME_BYTES + 1)))

    def test_inner_wildcards_are_checked_with_like(self):
        sql, params = text_condition(parse("fo?bar*"), "searchable_text")
        self.assertIn("LIKE %s", sql)
        self.assertEqual(params[1], glob_like("fo?bar*"))

    def test_words_are_counted_before_any_sql(self):
        half = " ".join(f"w{i}" for i in range(MAX_TEXT_TERMS // 2))
        parse(f'"{half}" OR ({half})')  # every word of a phrase counts
        for text in (f'"{half}" OR ({half} more)', f"{half} {half} x*", [half, half, "x"]):
            with self.assertRaises(TextQueryTooLong):
                parse(text)

    def test_hundreds_of_words_do_not_nest_hundreds_deep(self):
        text = tsquery(" ".join(f"w{i}" for i in range(MAX_TEXT_TERMS)))
        depth = max_depth = 0
        for char in text:
            depth += char == "("
            depth -= char == ")"
            max_depth = max(max_depth, depth)
        self.assertLess(max_depth, 20)
