"""pearl/ holds only what the stages, the verbs and the service run: every module under it is imported by another
module of pearl/, by a stage, or run by the set-up (`python -m pearl.…`), never only by benchmarks/ or tests/ (their
helpers live in benchmarks/)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY_POINTS = {"pearl", "pearl.cli"}  # the package, and pyproject's `pearl` command
MODULE = re.compile(r"pearl(\.\w+)+")


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _references(path: Path) -> set[str]:
    """The modules a file imports (at any depth of its code), or names as a string ("pearl.corpus.stage")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE.fullmatch(node.value):
            found.add(node.value)
    return found


def test_every_module_of_pearl_is_run_by_pearl_or_a_stage():
    used = set(ENTRY_POINTS)
    for path in [*(ROOT / "pearl").rglob("*.py"), *(ROOT / "stages").glob("*.py")]:
        used |= _references(path) - {_name(path)}
    for script in (ROOT / "scripts").glob("*.sh"):  # `python -m pearl.…`
        used |= {match.group(0) for match in re.finditer(r"(?<=-m )pearl(\.\w+)+", script.read_text())}
    modules = [_name(path) for path in (ROOT / "pearl").rglob("*.py")]
    unused = [m for m in modules if m not in used and not any(u.startswith(m + ".") for u in used)]
    assert unused == [], f"only benchmarks/ or tests/ import these: move them to benchmarks/ ({unused})"
