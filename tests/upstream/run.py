"""Run Plone's own test suites on stock Plone and with the catalog swapped
in, and compare (``./scripts/test --upstream [name ...]``).

For each suite of ``suites.toml`` (those whose name contains one of the
arguments, if any): the tests, those failing with the catalog, on stock,
and those failing only with the catalog.  The run fails when a test fails
only with the catalog and is not a listed difference, when a listed
difference passes, when the two runs did not run the same tests, or when
no test ran on a portal with the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib


HERE = Path(__file__).parent


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

    def args(self) -> list[str]:
        if self.venv == "upstream":
            site_packages = sysconfig.get_paths()["purelib"]
        else:
            site_packages = subprocess.run(
                [self.python(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        args = ["--test-path", site_packages, "-s", self.package]
        for module in self.modules:
            args += ["-m", module]
        return args


@dataclass
class Outcome:
    tests: set[str]
    failed: set[str]
    log: Path
    checked: int
    seconds: float


def run(suite: Suite, catalog: bool, workdir: Path) -> Outcome:
    """One run of *suite*, its records and log in *workdir*."""
    label = "catalog" if catalog else "stock"
    slug = re.sub(r"\W+", "-", suite.name).strip("-")
    record = workdir / f"{slug}.{label}.record"
    log = workdir / f"{slug}.{label}.log"
    checked_file = workdir / f"{slug}.{label}.checked"
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
    tests, failed = set(), set()
    for line in record.read_text().splitlines() if record.exists() else []:
        outcome, _, name = line.partition(" ")
        tests.add(name.split(":")[0])  # (a doctest's failed example: <id>:<line>)
        if outcome != "ok":
            failed.add(name)
    checked = sum(int(n) for n in checked_file.read_text().split()) if checked_file.exists() else 0
    return Outcome(tests, failed, log, checked, seconds)


def excerpt(log: Path, test: str) -> str:
    """The traceback the log shows for *test* (its last dotted part)."""
    text = log.read_text(errors="replace")
    short = test.split(":")[0].rsplit(".", 1)[-1]
    match = re.search(rf"^(Failure|Error) in test {re.escape(short)}\b.*?(?=\n\n\n|\Z)", text, re.M | re.S)
    return match.group(0)[-3000:] if match else f"(see {log})"


def compare(suite: Suite, stock: Outcome, catalog: Outcome) -> list[str]:
    """Print the suite's line; return what makes the run fail."""
    only = catalog.failed - stock.failed
    new = sorted(only - set(suite.differences))
    passing = sorted(set(suite.differences) - only)
    print(
        f"{suite.name}: {len(catalog.tests)} tests, {len(catalog.failed)} fail with the catalog, "
        f"{len(stock.failed)} on stock, {len(only)} only with the catalog "
        f"({len(only) - len(new)} listed differences); {catalog.checked} tests checked the swap "
        f"({catalog.seconds:.0f} s; stock {stock.seconds:.0f} s)"
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
    return problems


def crashed(log: Path) -> bool:
    """Whether the run's log ends in a traceback out of the runner itself
    (the tests after it never ran, in either run)."""
    return re.search(r'runner\.py", line \d+, in <module>', log.read_text(errors="replace")) is not None


def load(path: Path = HERE / "suites.toml") -> list[Suite]:
    with open(path, "rb") as f:
        return [Suite(**entry) for entry in tomllib.load(f)["suite"]]


def main(names: list[str]) -> int:
    suites = [s for s in load() if not names or any(n in s.name for n in names)]
    workdir = Path(tempfile.mkdtemp(prefix="pgcatalog-upstream-"))
    print(f"Plone's own suites, stock and with plone.pgcatalog (logs in {workdir})")
    problems = []
    for suite in suites:
        problems += compare(suite, run(suite, False, workdir), run(suite, True, workdir))
    for problem in problems:
        print(f"\nFAILED {problem}")
    print(f"\nupstream: {len(suites)} suites, {len(problems)} problems")
    return 1 if problems or not suites else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
