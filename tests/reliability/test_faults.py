"""Faults that come from outside a file: a Hugging Face stream that drops mid-corpus."""

import pytest

from tests.reliability.conftest import one_line_error, pearl, tree

pytestmark = pytest.mark.slow

# first on the command's import path: a `datasets` whose stream gives 3 documents, then loses its connection
DROPPING_DATASETS = '''
def load_dataset(name, config, split, streaming):
    for i in range(3):
        yield {"id": str(i), "text": f"Sentence number {i} is about the capital of France."}
    raise ConnectionError("Connection reset by peer\\nmore detail")
'''


def test_a_stream_that_drops_fails_in_one_line_and_writes_nothing(project, tmp_path):
    root = project.copy(tmp_path / "project")
    stand_in = tmp_path / "no-network" / "datasets"  # the folder conftest's pearl() puts on PYTHONPATH
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text(DROPPING_DATASETS)
    before = tree(root)
    error = one_line_error(pearl(root, "corpus", "-S", "corpus.source=wikipedia"))
    assert error == ("error: corpus.hf_dataset='wikimedia/wikipedia': the stream failed after 3 documents "
                     "(ConnectionError: Connection reset by peer); run the stage again")
    assert tree(root) == before
