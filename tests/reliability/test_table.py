"""The README's Reliability table is the one the suite's cases make, and every row names a test that exists."""

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
