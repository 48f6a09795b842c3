"""Every generated table re-renders byte for byte from the committed runs and metrics it was made from, so that
no hand edit can hide in one: metrics/summary.md (the report stage), metrics/experiments.md (`pearl experiments
results`), metrics/verbs_scale.md, the peers' tables and the AutoFJ same-run timing (their benchmarks' --tables-from
and --timing-from). The README's tables are checked against these in tests/test_docs.py."""

import json
from pathlib import Path

from pearl.experiments.definitions import load_tables
from pearl.experiments.results import write_results
from pearl.params import load_params
from pearl.report.summary import write_params_report

ROOT = Path(__file__).resolve().parents[1]


def test_the_report_rerenders_from_the_committed_metrics(tmp_path):
    write_params_report(load_params(ROOT / "params.yaml"), ROOT / "metrics", tmp_path / "summary.json",
                        tmp_path / "summary.md")
    for name in ("summary.md", "summary.json"):
        assert (tmp_path / name).read_bytes() == (ROOT / "metrics" / name).read_bytes(), \
            f"metrics/{name} is not what `pearl report` makes of the committed metrics"


def test_the_experiments_tables_rerender_from_the_committed_runs(tmp_path):
    record = tmp_path / "experiments.json"
    record.write_bytes((ROOT / "metrics" / "experiments.json").read_bytes())
    write_results(load_tables(params_path=ROOT / "params.yaml"), load_params(ROOT / "params.yaml"), [], record,
                  tmp_path / "experiments.md", tmp_path / "plots")
    assert (tmp_path / "experiments.md").read_bytes() == (ROOT / "metrics" / "experiments.md").read_bytes(), \
        "metrics/experiments.md is not what `pearl experiments results` makes of metrics/experiments.json"
    assert record.read_bytes() == (ROOT / "metrics" / "experiments.json").read_bytes()


def test_the_verbs_scale_table_rerenders_from_its_runs():
    from verbs_scale import Names, markdown

    runs = sorted((ROOT / "metrics" / "verbs_scale").glob("*.json"))
    rows = [row for path in runs for row in json.loads(path.read_text())]
    assert markdown(rows, len(Names().left)) == (ROOT / "metrics" / "verbs_scale.md").read_text(), \
        "metrics/verbs_scale.md: python benchmarks/verbs_scale.py --tables-from metrics/verbs_scale/*.json --markdown " \
        "metrics/verbs_scale.md"


def test_the_peers_tables_rerender_from_their_runs():
    from peers import SUMMARY, TABLE, TABLE_RUNS, markdown, summary, tables_of

    rows, meta = tables_of(TABLE_RUNS)
    assert markdown(rows, meta) == TABLE.read_text() and summary(rows, meta) == SUMMARY.read_text(), \
        "metrics/peers/: python benchmarks/peers.py --rerender"


def test_the_same_run_timing_table_rerenders_from_its_run():
    from join_autofj import TIMING_HEAD, timing_table

    timing = json.loads((ROOT / "metrics" / "join" / "same_run_timing.json").read_text())
    assert TIMING_HEAD + timing_table(timing) == (ROOT / "metrics" / "join" / "same_run_timing.md").read_text(), \
        "metrics/join/same_run_timing.md: python benchmarks/join_autofj.py --timing-from " \
        "metrics/join/same_run_timing.json --markdown metrics/join/same_run_timing.md"
