"""Each bad input of tests/reliability/cases.py: one error line naming the thing to fix, a non-zero exit, and
the project exactly as it was (no new, changed or half-written file)."""

import pytest

from tests.reliability.cases import CASES
from tests.reliability.conftest import connections, one_line_error, pearl, tree

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_fails_in_one_line_and_writes_nothing(project, tmp_path, case):
    root = project.copy(tmp_path / "project")
    case.breaks(root)
    before = tree(root)
    error = one_line_error(pearl(root, *case.command, preexec=case.preexec))
    expected = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    assert any(words in error for words in expected), error
    assert tree(root) == before
    hub = "could not be loaded" in error
    assert all("huggingface.co" in line for line in connections(root)) and (hub or not connections(root))
