"""Snippets' passages, without a database: which words are marked, where
the passage is, and what is escaped."""

from plone.pgcatalog.snippets import _fold_table
from plone.pgcatalog.snippets import _words
from plone.pgcatalog.snippets import Marked
from plone.pgcatalog.snippets import passage
from plone.pgcatalog.text import as_typed
from plone.pgcatalog.text import node_tsquery

import re
import unittest


def marking(*terms: tuple[str, bool]) -> Marked:
    return Marked(_fold_table(None), _words(terms))


def marked(html: str) -> list[str]:
    return re.findall(r"<mark>(.*?)</mark>", html)


class PassageTest(unittest.TestCase):
    def test_whole_words_only(self):
        found = passage("riverstone, a river; the Rivers and RIVER.", marking(("river", False)))
        self.assertEqual(marked(found), ["river", "RIVER"])

    def test_globs(self):
        text = "stone stones stoat astone st"
        self.assertEqual(marked(passage(text, marking(("sto*", True)))), ["stone", "stones", "stoat"])
        self.assertEqual(marked(passage(text, marking(("st?ne", True)))), ["stone"])

    def test_escaped_then_marked(self):
        found = passage('<b class="x">river</b> & co', marking(("river", False)))
        self.assertEqual(found, "&lt;b class=&quot;x&quot;&gt;<mark>river</mark>&lt;/b&gt; &amp; co")

    def test_a_cjk_bigram_anywhere(self):
        self.assertEqual(marked(passage("東京都の日本語", marking(("日本", False)))), ["日本"])

    def test_the_passage_with_most_words(self):
        text = "alpha " * 100 + "river " + "beta " * 100 + "river stone " + "gamma " * 100
        found = passage(text, marking(("river", False), ("stone", False)), 60)
        self.assertEqual(marked(found), ["river", "stone"])
        self.assertTrue(found.startswith("… ") and found.endswith(" …"), found)
        self.assertLessEqual(len(found), 60 + 40)  # the marks and ellipses besides

    def test_every_word_inside_is_marked(self):
        text = " ".join(["river"] * 30)  # more than the candidates of a word
        self.assertEqual(len(marked(passage(text, marking(("river", False)), 2000))), 30)

    def test_no_match_starts_the_text(self):
        found = passage("one two three four five six", marking(("river", False)), 12)
        self.assertEqual(found, "one two …")

    def test_a_word_folded_into_several_letters_is_not_marked(self):
        # (the fallback folding lowers case only; Plone's folds accents too)
        self.assertEqual(marked(passage("Straße strasse", marking(("strasse", False)))), ["strasse"])

    def test_sizes(self):
        for bad in (0, -5, 2001, "10", None, True):
            with self.assertRaises(ValueError, msg=repr(bad)):
                passage("text", marking(("text", False)), bad)


class AsTypedTest(unittest.TestCase):
    def test_the_last_word_is_a_prefix(self):
        self.assertEqual(node_tsquery(as_typed("super expi")), "('super' & 'expi':*)")
        self.assertEqual(node_tsquery(as_typed("super expi ")), "('super' & 'expi')")
        self.assertEqual(node_tsquery(as_typed("Expi")), "'expi':*")

    def test_no_syntax(self):
        self.assertEqual(node_tsquery(as_typed('"a AND (b*')), "(('a') & ('and' & 'b':*))")
        self.assertIsNone(as_typed(" * ? "))
