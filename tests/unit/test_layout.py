"""The module map holds: no import loops, the read path stays off the
write path, and only the tool calls the tool's private methods."""

from pathlib import Path

import ast
import plone.pgcatalog
import unittest


PACKAGE = Path(plone.pgcatalog.__file__).parent
WRITE_PATH = {"extraction", "processor", "rebuild", "undo", "setuphandlers"}


def _modules() -> dict[str, ast.Module]:
    """The package's modules by name; those of a subpackage as
    ``query.page`` beside the subpackage itself (``query``: its __init__)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = ast.parse(path.read_text())
    return modules


def _imports(tree: ast.Module) -> set[str]:
    """The package's modules that *tree* imports when it is loaded."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plone.pgcatalog"):
            name = ".".join(node.module.split(".")[2:])
            found |= {f"{name}.{alias.name}".lstrip(".") for alias in node.names} | {name}
    return found - {""}


class LayoutTest(unittest.TestCase):
    def setUp(self):
        self.modules = _modules()
        self.graph = {name: _imports(tree) & self.modules.keys() for name, tree in self.modules.items()}

    def reach(self, start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for name in self.graph[todo.pop()]:
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        return seen

    def test_no_import_loops(self):
        self.assertTrue(self.graph["tool"])  # the graph is read
        for name in self.graph:
            self.assertNotIn(
                name, self.reach(name), f"{name} imports itself through {sorted(self.reach(name))}"
            )

    def test_the_read_path_does_not_import_the_write_path(self):
        self.assertIn("query", self.reach("search"))
        for name in ("search", "query", "database", "results", "relevance"):
            self.assertFalse(self.reach(name) & WRITE_PATH, name)

    def test_only_the_tool_calls_its_private_methods(self):
        tool = next(
            node for node in self.modules["tool"].body if getattr(node, "name", "") == "PGCatalogTool"
        )
        private = {
            node.name
            for node in tool.body
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith("_")
            and not node.name.startswith("__")
        }
        # CMFCore's and ZCatalog's own protocol, which other code calls too
        private -= {
            "_catalog",
            "_indexObject",
            "_unindexObject",
            "_reindexObject",
            "_unrestrictedSearchResults",
            "_setOb",
        }
        self.assertIn("_as_searched", private)
        for name, tree in self.modules.items():
            if name == "tool":
                continue
            used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)} & private
            self.assertFalse(used, f"{name} calls the tool's {sorted(used)}")
