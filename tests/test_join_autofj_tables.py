"""benchmarks/join_autofj.py --tables-from: earlier runs' rows, one version of the join per LABEL=FILE."""

import json

from benchmarks.join_autofj import SPLIT_NAMES, tables_from
from pearl.bench import data


def _run(path, system, precision):
    row = {"precision": precision, "recall": 0.5, "f1": 0.6, "seconds": 2.0}
    rows = {name: dict(row) for name in data.autofj_names()}
    path.write_text(json.dumps({"AutoFJ": rows, system: rows}))
    return str(path)


def test_labelled_files_give_each_version_its_row(tmp_path, capsys):
    before = _run(tmp_path / "a.json", "string, chosen for P 0.9", 0.8)
    after = _run(tmp_path / "b.json", "string, chosen for P 0.9", 0.9)
    out = tmp_path / "t.md"
    tables_from([f"before={before}", f"after={after}"], out, [SPLIT_NAMES["design"]])
    printed = capsys.readouterr().out
    assert "| before: string, chosen for P 0.9 | 0.800 |" in printed
    assert "| after: string, chosen for P 0.9 | 0.900 |" in printed
    written = out.read_text()
    assert "--tables-from before=a.json after=b.json" in written and "held-out" not in written
    assert "**first 25 by name (design): 25 datasets**" in written
