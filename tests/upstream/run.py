"""Run Plone's own test suites on stock Plone and with the catalog swapped
in, and compare (``./scripts/test --upstream [name ...]``).

For each suite of ``suites.toml`` (those whose name contains one of the
arguments, if any): the tests, those failing with the catalog, on stock,
and those failing only with the catalog.  The run fails when a test fails
only with the catalog and is not a listed difference, when a listed
difference passes, when the two runs did not run the same tests, or when
no test ran on a portal with the catalog.

A suite's stock outcome depends on the packages of its venv, so it is
recorded (``stock/``), keyed by them, and a run of the same packages
compares with the record instead of running the suite on stock again (CI
runs only the swap).  Where that finds a problem, the suite runs on stock
after all and the run compares with that (a test may fail on stock today
that passed when recorded).  A suite whose packages or tests changed runs
on stock and records it, to commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib


HERE = Path(__file__).parent
STOCK = HERE / "stock"
"""The stock outcomes recorded: ``<suite>.<packages' key>.record``."""


@dataclass
class Suite:
    name: str
    package: str
    modules: list[str] = field(default_factory=list)
    differences: dict[str, str] = field(default_factory=dict)
    # "addons": run in the add-on suite's venv (a package whose test extra
    # cannot share this one's)
    venv: str = "upstream"

    def python(self) -> str:
        """The interpreter of the suite's venv (this one's, or its
        sibling's: ``.venv-upstream`` -> ``.venv-addons``)."""
        if self.venv == "upstream":
            return sys.executable
        prefix = Path(sys.prefix)
        return str(prefix.with_name(prefix.name.replace("-upstream", f"-{self.venv}")) / "bin" / "python")

    def slug(self) -> str:
        return re.sub(r"\W+", "-", self.name).strip("-")

    def stock_record(self) -> Path:
        """Where the suite's stock outcome with its venv's packages is
        recorded: their names and versions, the interpreter's version and
        the tests run make the key (plone.pgcatalog's own is left out: a
        stock run never loads it; and pip, upgraded with each venv)."""
        listing = printed(self.python(), _PACKAGES)
        key = hashlib.sha256(f"{listing}{self.package} {self.modules}".encode()).hexdigest()[:16]
        return STOCK / f"{self.slug()}.{key}.record"

    def args(self) -> list[str]:
        if self.venv == "upstream":
            site_packages = sysconfig.get_paths()["purelib"]
        else:
            site_packages = printed(
                self.python(), "import sysconfig; print(sysconfig.get_paths()['purelib'])"
            ).strip()
        args = ["--test-path", site_packages, "-s", self.package]
        for module in self.modules:
            args += ["-m", module]
        return args


LEFT_OUT = ("plone.pgcatalog", "pip")
"""Distributions not in a record's key: ours (a stock run never loads it)
and pip (upgraded with each venv)."""
_PACKAGES = (
    "import importlib.metadata as m, sys; print(sys.version); "
    f"print(sorted({{f'{{d.name}}=={{d.version}}' for d in m.distributions() if d.name not in {LEFT_OUT!r}}}))"
)


def printed(python: str, code: str) -> str:
    """What *code* prints, run by the interpreter *python* (a suite's venv)."""
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout


@dataclass
class Outcome:
    tests: set[str]
    failed: set[str]
    log: Path
    checked: int
    seconds: float
    recorded: bool = False  # (a stock outcome read from stock/)


def outcome_of(record: Path, log: Path, checked: int, seconds: float, recorded: bool = False) -> Outcome:
    """The tests of a run's *record*, and those that failed."""
    tests, failed = set(), set()
    for line in record.read_text().splitlines() if record.exists() else []:
        outcome, _, name = line.partition(" ")
        tests.add(name.split(":")[0])  # (a doctest's failed example: <id>:<line>)
        if outcome != "ok":
            failed.add(name)
    return Outcome(tests, failed, log, checked, seconds, recorded)


def run_stock(suite: Suite, workdir: Path, recorded: Path) -> Outcome:
    """A run of *suite* on stock, recorded at *recorded* where tests ran
    and the runner did not crash."""
    ran = run(suite, False, workdir)
    if ran.tests and not crashed(ran.log):
        STOCK.mkdir(exist_ok=True)
        shutil.copyfile(workdir / f"{suite.slug()}.stock.record", recorded)
        print(f"{suite.name}: its stock outcome recorded in {recorded.relative_to(HERE.parent.parent)}")
    return ran


def run(suite: Suite, catalog: bool, workdir: Path) -> Outcome:
    """One run of *suite*, its records and log in *workdir*."""
    label = "catalog" if catalog else "stock"
    record = workdir / f"{suite.slug()}.{label}.record"
    log = workdir / f"{suite.slug()}.{label}.log"
    checked_file = workdir / f"{suite.slug()}.{label}.checked"
    env = dict(os.environ, PGCATALOG_UPSTREAM_CHECKED=str(checked_file))
    command = [
        suite.python(),
        str(HERE / "runner.py"),
        str(record),
        *(["--catalog"] if catalog else []),
        *suite.args(),
    ]
    start = time.monotonic()
    with open(log, "wb") as out:
        # in a scratch directory: the suites write files where they run
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    seconds = time.monotonic() - start
    checked = sum(int(n) for n in checked_file.read_text().split()) if checked_file.exists() else 0
    return outcome_of(record, log, checked, seconds)


def excerpt(log: Path, test: str) -> str:
    """The traceback the log shows for *test* (its last dotted part)."""
    text = log.read_text(errors="replace")
    short = test.split(":")[0].rsplit(".", 1)[-1]
    match = re.search(rf"^(Failure|Error) in test {re.escape(short)}\b.*?(?=\n\n\n|\Z)", text, re.M | re.S)
    return match.group(0)[-3000:] if match else f"(see {log})"


def compare(suite: Suite, stock: Outcome, catalog: Outcome) -> tuple[str, list[str]]:
    """The suite's line, and what makes the run fail."""
    only = catalog.failed - stock.failed
    new = sorted(only - set(suite.differences))
    passing = sorted(set(suite.differences) - only)
    line = (
        f"{suite.name}: {len(catalog.tests)} tests, {len(catalog.failed)} fail with the catalog, "
        f"{len(stock.failed)} on stock, {len(only)} only with the catalog "
        f"({len(only) - len(new)} listed differences); {catalog.checked} tests checked the swap "
        f"({catalog.seconds:.0f} s; stock {'recorded' if stock.recorded else f'{stock.seconds:.0f} s'})"
    )
    problems = []
    for test in new:
        problems.append(f"{suite.name}: fails only with the catalog: {test}\n{excerpt(catalog.log, test)}")
    for test in passing:
        problems.append(f"{suite.name}: listed as a difference but passes now (or did not run): {test}")
    if catalog.tests != stock.tests:
        missing = sorted(stock.tests ^ catalog.tests)[:10]
        problems.append(f"{suite.name}: the two runs ran different tests, e.g. {missing}")
    if not catalog.checked:
        problems.append(f"{suite.name}: no test ran on a portal with the catalog")
    if not stock.tests:
        problems.append(f"{suite.name}: no test ran (see {stock.log})")
    for outcome in (stock, catalog):
        if crashed(outcome.log):
            problems.append(f"{suite.name}: the test runner crashed (see {outcome.log})")
    return line, problems


def check(suite: Suite, workdir: Path) -> list[str]:
    """Print the suite's line; return what makes the run fail."""
    catalog = run(suite, True, workdir)
    recorded = suite.stock_record()
    found = (
        compare(suite, outcome_of(recorded, recorded, 0, 0.0, True), catalog) if recorded.exists() else None
    )
    if found is None or found[1]:
        found = compare(suite, run_stock(suite, workdir, recorded), catalog)
    print(found[0])
    return found[1]


def crashed(log: Path) -> bool:
    """Whether the run's log ends in a traceback out of the runner itself
    (the tests after it never ran, in either run)."""
    return re.search(r'runner\.py", line \d+, in <module>', log.read_text(errors="replace")) is not None


def load(path: Path = HERE / "suites.toml") -> list[Suite]:
    with open(path, "rb") as f:
        return [Suite(**entry) for entry in tomllib.load(f)["suite"]]


CONSTRAINTS_ENV = "PGCATALOG_CONSTRAINTS"
"""The constraints file the venvs were installed with (set by scripts/test)."""


def unpinned(python: str, constraints: Path) -> list[str]:
    """The distributions of *python*'s venv that *constraints* does not
    pin (plone.pgcatalog and pip aside): their versions move with each
    release, and so would the stock records' keys of a fresh venv."""

    def name(requirement: str) -> str:
        return re.sub(r"[-_.]+", "-", requirement.split("==")[0].strip()).lower()

    pinned = {name(line) for line in constraints.read_text().splitlines() if "==" in line}
    pinned |= {name(left) for left in LEFT_OUT}
    listing = printed(
        python, "import importlib.metadata as m; print(*(d.name for d in m.distributions()))"
    ).split()
    return sorted({d for d in listing if name(d) not in pinned})


def main(names: list[str]) -> int:
    suites = [s for s in load() if not names or any(n in s.name for n in names)]
    workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-upstream-"))
    print(f"Plone's own suites, stock and with plone.pgcatalog (logs in {workdir})")
    problems = []
    constraints = os.environ.get(CONSTRAINTS_ENV)
    if constraints:
        for python in sorted({suite.python() for suite in suites}):
            loose = unpinned(python, Path(constraints))
            if loose:
                problems.append(f"{python}: {', '.join(loose)} not pinned in {constraints}")
    for suite in suites:
        problems += check(suite, workdir)
    for problem in problems:
        print(f"\nFAILED {problem}")
    print(f"\nupstream: {len(suites)} suites, {len(problems)} problems")
    return 1 if problems or not suites else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
