"""The docs' Reliability table (docs/reliability.md) is the one the suite's cases make; every row names a test
that exists, and every test has a row."""

import importlib

from tests.conftest import ROOT
from tests.reliability.table import PAGE, SCENARIOS, block, count, page_block, table


def test_the_docs_page_lists_every_case_the_suite_runs():
    assert PAGE == ROOT / "docs" / "reliability.md"
    copy = page_block(PAGE.read_text(encoding="utf-8"))
    assert copy is not None, f"{PAGE} lost its table markers"
    assert copy == block(), "docs/reliability.md's table is stale: python -m tests.reliability.table --write"
    assert table() in copy and f"{count()} cases" in copy


def test_every_scenario_row_names_a_test():
    for *_, test in SCENARIOS:
        module, function = test.split("::")
        assert hasattr(importlib.import_module(f"tests.reliability.{module.removesuffix('.py')}"), function), test


def test_every_reliability_test_has_a_row():
    named = {test for *_, test in SCENARIOS}
    for path in sorted((ROOT / "tests" / "reliability").glob("test_*.py")):
        # test_bad_inputs runs the CASES and test_serve_requests the BAD_REQUESTS, a row each
        if path.name in ("test_table.py", "test_bad_inputs.py", "test_serve_requests.py"):
            continue
        module = importlib.import_module(f"tests.reliability.{path.stem}")
        for name in dir(module):
            if name.startswith("test_") and callable(getattr(module, name)):
                assert f"{path.name}::{name}" in named, f"{path.name}::{name} has no row in tests/reliability/table.py"
