"""Words of every frequency, for a site as large as ``million.py`` builds.

The benchmark's own texts (``workload``) draw on 115 words, so at a million
rows every word is held by a tenth of them or more: nothing is rare.  Real
text is not like that: a word's frequency falls with its rank (Zipf's
law), a few words are everywhere, most are in a handful of items.  Each
bulk Document of ``million.py`` also holds :data:`PER_DOCUMENT` words of
:data:`RANKS` made-up words drawn with weight 1/rank: at a million
Documents, rank 1 is held by about 400,000, rank 100 by about 4,000 and
rank 20,000 by about 20.
"""

from __future__ import annotations

from functools import cache
from itertools import accumulate
from workload import SUBJECTS
from workload import WORDS

import random


RANKS = 50_000
PER_DOCUMENT = 5
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@cache
def ranked() -> tuple[str, ...]:
    """The made-up words, most frequent first (none of the workload's)."""
    rng = random.Random("vocabulary")
    known, words = {*WORDS, *SUBJECTS}, []
    while len(words) < RANKS:
        word = "".join(rng.choices(_SYLLABLES, k=rng.randint(2, 5)))
        if word not in known:
            known.add(word)
            words.append(word)
    return tuple(words)


@cache
def _weights() -> list[float]:
    return list(accumulate(1.0 / rank for rank in range(1, RANKS + 1)))


def drawn(number: int) -> list[tuple[int, str]]:
    """The ``(rank, word)`` pairs Document *number* holds, always the same."""
    rng = random.Random(f"vocabulary-{number}")
    ranks = rng.choices(range(1, RANKS + 1), cum_weights=_weights(), k=PER_DOCUMENT)
    return [(rank, ranked()[rank - 1]) for rank in ranks]
