"""The README's Reliability table is the one the suite's cases make; every row names a test that exists, and
every test has a row."""

import importlib

from tests.conftest import ROOT
from tests.reliability.table import SCENARIOS, count, table


def test_the_readme_lists_every_case_the_suite_runs():
    readme = (ROOT / "README.md").read_text()
    assert table() in readme, "README's Reliability table is stale: python -m tests.reliability.table"
    assert f"{count()} cases" in readme


def test_every_scenario_row_names_a_test():
    for *_, test in SCENARIOS:
        module, function = test.split("::")
        assert hasattr(importlib.import_module(f"tests.reliability.{module.removesuffix('.py')}"), function), test


def test_every_reliability_test_has_a_row():
    named = {test for *_, test in SCENARIOS}
    for path in sorted((ROOT / "tests" / "reliability").glob("test_*.py")):
        if path.name in ("test_table.py", "test_bad_inputs.py"):  # test_bad_inputs runs the CASES, a row each
            continue
        module = importlib.import_module(f"tests.reliability.{path.stem}")
        for name in dir(module):
            if name.startswith("test_") and callable(getattr(module, name)):
                assert f"{path.name}::{name}" in named, f"{path.name}::{name} has no row in tests/reliability/table.py"
