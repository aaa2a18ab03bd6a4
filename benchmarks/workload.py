"""The benchmark's content and queries, the same for every backend.

Document *i* is generated from its own seeded random generator, so the
content does not depend on how many documents a run creates, nor on the
backend: every backend gets exactly the same site.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import random


SEED = 20240603
# Documents fill folders of this size one after the other, so a folder
# listing (scenario 4) stays the same size as the site grows, as on a real
# site, where sections multiply rather than swell.
DOCS_PER_FOLDER = 50
NAVIGATED_FOLDER = 3  # scenario 4 lists this folder (documents 150-199)
SITE_ID = "plone"

SUBJECTS = (
    "python", "plone", "postgresql", "zope", "catalog", "search", "security", "performance",
    "workflow", "deployment", "testing", "migration", "design", "community", "release",
)  # fmt: skip

WORDS = (
    "annual", "report", "meeting", "minutes", "project", "update", "guide", "policy", "team",
    "budget", "planning", "review", "strategy", "summary", "notes", "overview", "proposal",
    "research", "results", "training", "schedule", "event", "office", "service", "customer",
    "product", "market", "quality", "process", "standard", "system", "network", "platform",
    "library", "archive", "history", "future", "vision", "mission", "partner", "program",
    "analysis", "survey", "feedback", "roadmap", "milestone", "goal", "metric", "support",
    "help", "question", "answer", "solution", "problem", "issue", "change", "request",
    "approval", "document", "template", "draft", "final", "public", "internal", "regional",
    "national", "global", "local", "digital", "open", "source", "data", "content", "editor",
    "author", "reader", "member", "group", "board", "committee", "council", "department",
    "university", "school", "student", "teacher", "course", "lecture", "seminar", "workshop",
    "conference", "sprint", "north", "south", "river", "mountain", "garden", "harbour",
)  # fmt: skip

STATE_WEIGHTS = (("published", 70), ("private", 20), ("pending", 10))
TRANSITIONS = {"published": ("publish",), "pending": ("submit",), "private": ()}

# Dates between 2021-01-01 and 2024-12-31 (days after the first)
DATE_SPAN_DAYS = 4 * 365


@dataclass(frozen=True)
class DocSpec:
    """One Document: where it goes and what it holds."""

    number: int
    folder: str
    id: str
    title: str
    description: str
    subjects: tuple[str, ...]
    state: str
    effective_day: int  # days after 2021-01-01
    modified_day: int


def folder_id(number: int) -> str:
    """The folder of the *number*-th document."""
    return f"folder-{number // DOCS_PER_FOLDER}"


def doc_spec(number: int) -> DocSpec:
    """The *number*-th document (0-based), always the same."""
    rng = random.Random(f"{SEED}-{number}")
    title_words = rng.sample(WORDS, rng.randint(3, 6))
    subjects = tuple(rng.sample(SUBJECTS, rng.randint(0, 4)))
    description = rng.choices(WORDS, k=rng.randint(10, 20))
    # Subject words appear in the text too, so full-text search finds them.
    for subject in subjects:
        description.insert(rng.randrange(len(description) + 1), subject)
    states, weights = zip(*STATE_WEIGHTS, strict=True)
    effective = rng.randrange(DATE_SPAN_DAYS)
    return DocSpec(
        number=number,
        folder=folder_id(number),
        id=f"doc-{number:06d}",
        title=" ".join(title_words).capitalize(),
        description=" ".join(description).capitalize() + ".",
        subjects=subjects,
        state=rng.choices(states, weights)[0],
        effective_day=effective,
        modified_day=min(DATE_SPAN_DAYS, effective + rng.randrange(120)),
    )


def edited_texts(number: int) -> tuple[str, str]:
    """The new title and description of the modification phase."""
    spec = doc_spec(number)
    return f"{spec.title} (revised)", f"{spec.description} Revised after review."


@dataclass(frozen=True)
class Scenario:
    """A catalog query and the user who runs it."""

    name: str
    label: str
    query: dict
    anonymous: bool = False


def scenarios() -> list[Scenario]:
    """The six query scenarios of the issue."""
    site = f"/{SITE_ID}"
    return [
        Scenario("simple", "1. field match", {"portal_type": "Document"}),
        Scenario(
            "complex",
            "2. multi-index",
            {
                "portal_type": "Document",
                "review_state": "published",
                "Subject": {"query": ["plone", "python"], "operator": "or"},
                "sort_on": "effective",
                "sort_order": "descending",
                "sort_limit": 20,
            },
        ),
        Scenario("fulltext", "3. full text", {"SearchableText": "postgresql"}),
        Scenario(
            "navigation",
            "4. navigation",
            {
                "path": {"query": f"{site}/folder-{NAVIGATED_FOLDER}", "depth": 1},
                "sort_on": "getObjPositionInParent",
            },
        ),
        Scenario(
            "anonymous",
            "5. anonymous",
            {"portal_type": "Document", "review_state": "published"},
            anonymous=True,
        ),
        Scenario(
            "date_paged",
            "6. date sorted page",
            {
                "portal_type": "Document",
                "sort_on": "modified",
                "sort_order": "descending",
                "b_start": 40,
                "b_size": 20,
            },
        ),
    ]


def run_bare(catalog, query: dict) -> Sequence:
    """The bare search."""
    return catalog.searchResults(**query)


def run_listing(catalog, query: dict) -> tuple[int, list[tuple[str, str]]]:
    """A listing page: the search, its length, the first ten brains'
    ``Title`` and ``getURL()``."""
    results = catalog.searchResults(**query)
    count = len(results)
    return count, [(brain.Title, brain.getURL()) for brain in results[:10]]
