"""The docs' Reliability table (docs/reliability.md), made from the cases the suite runs.

`python -m tests.reliability.table` prints it; `python -m tests.reliability.table --write` puts it into
docs/reliability.md, between the page's markers. tests/reliability/test_table.py fails when the page's copy
differs, so the table cannot drift."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from tests.reliability.cases import CASES
from tests.reliability.test_interrupts import STAGES
from tests.reliability.test_odd_inputs import BENCH_LONG
from tests.reliability.test_serve_requests import BAD_REQUESTS

# (what is tried, the command, what happens, the test that checks it)
SCENARIOS = [
    *((f"{'SIGTERM' if stop == signal.SIGTERM else 'kill -9'} during `{stage}`", f"`dvc repro -f {stage}`, stopped after "
       f"“{marker}” + {delay} s, then `dvc repro {stage}`"
       + (f", then `dvc repro -f {stage}` (forced, so that the stage really runs again)" if forced else ""),
       "exit ≠ 0" + (", `error: stopped by SIGTERM…`, no temp file left" if stop == signal.SIGTERM else "")
       + "; `dvc repro` completes with the same outputs (dvc.lock hashes)"
       + ("; the forced re-run " + ("resumes from the stopped run's checkpoint where it saved one, removes a half-written one" if resumes else
                                    "removes what the stopped run left (staging folders)")
          + " and gives byte-identical outputs" if forced else ""),
       "test_interrupts.py::test_a_stopped_stage_leaves_no_partial_output_and_reruns_to_the_same_bytes")
      for stage, (_, marker, delay, resumes) in STAGES.items() for stop in (signal.SIGTERM, signal.SIGKILL)
      for forced in [stop == signal.SIGKILL or resumes]),
    ("the front half and a benchmark of its model run twice", "`dvc repro -f --single-item` of each front-half "
     "stage that no case above re-runs from scratch, then `dvc repro -f bench@conll2003`, over a finished run",
     "every Parquet, meta and model file byte-identical; every metrics file (JSON, `train_log.csv`) identical apart "
     "from timing fields",
     "test_interrupts.py::test_dvc_repro_twice_gives_the_same_bytes"),
    ("odd unicode in the corpus: RTL marks, e + combining accent, NUL, ZWJ emoji, a lone surrogate; a 100K-character "
     "document", "every stage, `pearl embed --input`",
     "marks, NUL and the surrogate become spaces; é is NFC; the ZWJ sequence stays; the 100K document is skipped and "
     "counted (`sentences_dropped_long`); the export embeds the odd strings to finite vectors",
     "test_odd_inputs.py::test_odd_unicode_and_a_100k_document_go_through_every_stage"),
    ("a 100K-character sentence", "`pearl parse`", "parsed whole: its phrases are counted",
     "test_odd_inputs.py::test_a_100k_character_sentence_is_parsed"),
    ("a 100K-character phrase", "typing … average", "every stage completes; the tokenizers truncate it",
     "test_odd_inputs.py::test_a_100k_character_phrase_goes_through_every_stage"),
    ("a 1-row phrases table", "typing … negatives", "every stage completes (train refuses: see above)",
     "test_odd_inputs.py::test_a_one_row_phrases_table_goes_through_every_stage_before_train"),
    *((f"odd unicode and 100K characters in one item of the {task} file", f"`pearl bench-task {system} {task}`",
       "scored, finite", "test_odd_inputs.py::test_odd_unicode_and_100k_characters_in_a_benchmark_file_are_scored")
      for task, (system, _, _) in BENCH_LONG.items()),
    ("a Hugging Face stream that drops after 3 documents", "`pearl corpus -S corpus.source=wikipedia`",
     "exit 1, one line: “…the stream failed after 3 documents (ConnectionError: …); run the stage again”; no file changed",
     "test_faults.py::test_a_stream_that_drops_fails_in_one_line_and_writes_nothing"),
    ("no network (sockets blocked, hub variables unset)", "every stage, the default corpus (wiki-vital), `bench-task` for each system, `report`, "
     "`figure4`, `bench`, `experiments run --dry-run`, `experiments results`, `embed`, `index build`, `index add`, "
     "`link`, `join`, `cluster`, `types`; the product verbs on tables of names with odd unicode and 100K characters",
     "no connection attempt; a hub id fails at once naming its param; every odd name gets its row in each output",
     "test_odd_inputs.py::test_every_pearl_command_stays_offline"),
]


def _cell(text: str) -> str:
    """Markdown-safe, and a lone surrogate (a case's bad argument) shown as its escape."""
    return text.encode("utf-8", "backslashreplace").decode().replace("|", "\\|")


def table() -> str:
    rows = ["| # | case | command | what happens |", "|---|---|---|---|"]
    for number, case in enumerate(CASES, start=1):
        expect = case.expect if isinstance(case.expect, str) else " / ".join(case.expect)
        rows.append(f"| {number} | {_cell(case.name)} | `pearl {_cell(' '.join(case.command))}` | "
                    f"exit 1, one line: “…{_cell(expect)}…”; no file changed |")
    for number, (what, command, happens, _) in enumerate(SCENARIOS, start=len(CASES) + 1):
        rows.append(f"| {number} | {_cell(what)} | {_cell(command)} | {_cell(happens)} |")
    for number, case in enumerate(BAD_REQUESTS, start=len(CASES) + len(SCENARIOS) + 1):
        sent = case.body if isinstance(case.body, str) else json.dumps(case.body, ensure_ascii=False)
        sent = sent if len(sent) <= 60 else sent[:57] + "…"
        rows.append(f"| {number} | a request with {_cell(case.what)} | `pearl serve`: `POST {case.path}` "
                    f"`{_cell(sent)}` | {case.status}, one JSON line: “…{_cell(case.words)}…” |")
    return "\n".join(rows) + "\n"


def count() -> int:
    return len(CASES) + len(SCENARIOS) + len(BAD_REQUESTS)


PAGE = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
START, END = "<!-- reliability-table:start -->", "<!-- reliability-table:end -->"


def block() -> str:
    """What the page holds between its markers."""
    return f"{count()} cases, all run by CI (`bash .ci/run`):\n\n{table()}"


def page_block(text: str) -> str | None:
    """The page's copy, between the markers; None when they are missing."""
    if START not in text or END not in text.partition(START)[2]:
        return None
    return text.partition(START)[2].partition(END)[0].strip("\n") + "\n"


def write(page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    if page_block(text) is None:
        raise SystemExit(f"{page}: no {START} … {END} block to write the table into")
    head, _, rest = text.partition(START)
    page.write_text(f"{head}{START}\n\n{block()}\n{END}{rest.partition(END)[2]}", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(block(), end="")
