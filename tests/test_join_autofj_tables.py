"""benchmarks/autofj_tables.py, benchmarks/join_autofj.py's tables: --tables-from (earlier runs' rows, one
version of the join per LABEL=FILE) and --same-run-timing's seconds."""

import json

from pearl.bench import data
from autofj_tables import SPLIT_NAMES, tables_from, timing_table


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


def test_same_run_timing_table_divides_autofj_by_each_encoder_and_takes_the_median_ratio():
    machine = {"nproc": 2, "cpu": "a CPU", "date": "a date", "load_average_start": 0.5, "load_average_end": 1.5}
    timing = {"machine": machine, "autofj_precision": 0.9, "precision_target": 0.9, "load_seconds": {"string": 0.5},
              "datasets": {"A": {"rows": [30, 3], "AutoFJ": 10.0, "string": 1.0},
                           "B": {"rows": [40, 4], "AutoFJ": 40.0, "string": 2.0},
                           "C": {"rows": [50, 5], "AutoFJ": 60.0, "string": 5.0}}}
    lines = timing_table(timing).splitlines()
    assert lines[0] == "| dataset | rows left × right | AutoFJ s | string s | AutoFJ ÷ string |"
    assert lines[3] == "| B | 40 × 4 | 40.00 | 2.00 | 20.00 |"
    # the median of the ratios 10, 20, 12; the ratio of the medians would be 20, of the means 13.75
    assert lines[5] == "| median | | 40.00 | 2.00 | 12.00 |"
    assert "on 2 processors (nproc) of a CPU" in lines[7] and "string 0.5 s" in lines[7]
