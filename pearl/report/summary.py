"""The benchmark summary: per-task scores of the trained models (PEARL-small, PEARL-base, PEARL-static, BURT-small),
PEARL-small's backbone, the reference models and the string baseline, on the test suite and,
apart, on the tune suite."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from pearl.artifacts import atomic_path, write_json
from pearl.errors import PearlError
from pearl.bench.task_names import (BURT_TABLE_TASKS, BURT_TUNE_TABLE_TASKS, CLEAN_PPDB_TASKS, GENERAL_TASKS,
                                    NAME_TUNE_TASKS, PEARL_TUNE_TASKS, PHRASE_TASKS, SHORT_TEXT_TASKS, TUNE_MEAN_TASKS)

if TYPE_CHECKING:
    from pearl.params import Params

TITLES = {
    "ppdb": "PPDB", "ppdb_filtered": "PPDB filtered", "turney": "Turney", "bird": "BIRD", "yago": "YAGO",
    "umls": "UMLS", "conll2003": "CoNLL 03", "bc5cdr": "BC5CDR", "autofj": "AutoFJ", "atis_s": "ATIS-S",
    "atis_l": "ATIS-L", "ppdb_clean": "PPDB clean", "ppdb_filtered_clean": "PPDB filtered clean",
    "simlex": "SimLex", "ws353_sim": "WS-sim", "ws353_rel": "WS-rel", "men": "MEN", "stsb": "STS-B",
    "conll2003_train": "CoNLL 03 train", "bc5cdr_train": "BC5CDR train", "stsb_dev": "STS-B dev",
    "rw": "RW", "simverb": "SimVerb", "wiki_aliases": "Wiki aliases", "geonames_aliases": "GeoNames aliases",
    "sick_r": "SICK-R", "sick_trial": "SICK-R trial",
    "avg9": "Avg (9 tasks)", "avg9_clean": "Avg (9, clean PPDB)", "probe_free7": "Probe-free (7)",
    "general": "General (mean)", "tune": "Tune (mean)",
    "tune_names": "Names (tune mean)", "burt_words": "Words (mean)", "burt_tune": "BURT tune (mean)",
}
# column → the tasks it averages, when all are present
# The paper's average puts PPDB twins on both sides of its split; the clean one swaps in the
# leak-free PPDB columns. The seven tasks without a trained probe move least with noise (fp16 rounding
# moved a PPDB probe by 6.6 points and them by at most 0.7).
MEANS = {"avg9": PHRASE_TASKS, "avg9_clean": (*CLEAN_PPDB_TASKS, *PHRASE_TASKS[2:]), "probe_free7": PHRASE_TASKS[2:],
         "general": GENERAL_TASKS, "tune": TUNE_MEAN_TASKS, "tune_names": NAME_TUNE_TASKS,
         "burt_words": BURT_TABLE_TASKS[2:], "burt_tune": BURT_TUNE_TABLE_TASKS}
TABLES = {
    "test": [("Phrase tasks (paper Table 1)", [*PHRASE_TASKS, "avg9", "avg9_clean", "probe_free7"]),
             ("Leak-free PPDB and the general-purpose guard", [*CLEAN_PPDB_TASKS, *GENERAL_TASKS, "general"]),
             ("Short-text classification (paper Table 2)", list(SHORT_TEXT_TASKS)),
             ("BURT's Table 2, offline subset", [*BURT_TABLE_TASKS, "burt_words"])],
    "tune": [("Tune suite (defaults are chosen here)", [*PEARL_TUNE_TASKS, "tune", "tune_names"]),
             ("BURT-small's settings are chosen here", [*BURT_TUNE_TABLE_TASKS, "burt_tune"])],
}
SUITE_DIRS = {"test": "bench", "tune": "tune"}
SUITE_PARAMS = {"test": "bench.tasks or bench.burt_tasks", "tune": "bench.tune_tasks or bench.burt_tune_tasks"}


def _load(metrics_dir: Path, system: str, tasks: list[str]) -> dict[str, dict]:
    found = {}
    for task in tasks:
        path = metrics_dir / system / f"{task}.json"
        if path.is_file():
            try:
                found[task] = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                found[task] = None
            if isinstance(found[task], dict) and set(found[task]) == {"skipped"}:  # a model this run did not train
                del found[task]
                continue
            # a reference model's file holds one result per model
            results = found[task].values() if system == "ref" and isinstance(found[task], dict) else [found[task]]
            if not found[task] or not all(_is_result(result) for result in results):
                raise PearlError(f"{path}: not a benchmark result (corrupt JSON, or no numeric 'score'): "
                                 "`dvc repro` re-runs the stage that writes it")
    return found


def _is_result(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("score"), (int, float))
            and not isinstance(value["score"], bool) and math.isfinite(value["score"]))


def load_results(metrics_root: Path, suite: str, tasks: list[str], string_tasks: list[str]) -> dict[str, dict[str, dict]]:
    """system → task → result, systems in table order: string, base, ref:<model>…, model (PEARL-small),
    pearl-base, static (PEARL-static), burt-small (BURT-small)."""
    folder = metrics_root / SUITE_DIRS[suite]
    systems = {"string": _load(folder, "string", string_tasks if suite == "test" else []),
               "base": _load(folder, "base", tasks)}
    for task, per_model in _load(folder, "ref", tasks).items():
        for model, result in per_model.items():
            systems.setdefault(f"ref:{model}", {})[task] = result
    systems["model"] = _load(folder, "model", tasks)
    systems["pearl-base"] = _load(folder, "pearl-base", tasks)
    systems["static"] = _load(folder, "static", tasks)
    systems["burt-small"] = _load(folder, "burt-small", tasks)
    return {system: results for system, results in systems.items() if results}


def with_means(scores: dict[str, float]) -> dict[str, float]:
    """Task scores plus each column of MEANS whose tasks are all there."""
    scores = dict(scores)
    for column, members in MEANS.items():
        if all(task in scores for task in members):
            scores[column] = round(sum(scores[t] for t in members) / len(members), 2)
    return scores


def _scores(results: dict[str, dict]) -> dict[str, float]:
    return with_means({task: result["score"] for task, result in results.items()})


def summarise(metrics_root: Path, tasks: list[str], tune_tasks: list[str], string_tasks: list[str]) -> dict:
    summary = {}
    for suite, suite_tasks in (("test", tasks), ("tune", tune_tasks)):
        systems = {system: _scores(results) for system, results in load_results(metrics_root, suite, suite_tasks, string_tasks).items()}
        for row, system, against in (("delta", "model", "base"), ("static_gap", "static", "model"),
                                     ("burt_delta", "burt-small", "base")):
            if system in systems and against in systems:
                systems[row] = {task: round(systems[system][task] - systems[against][task], 2)
                                for task in systems[system] if task in systems[against]}
        offshelf = [scores for system, scores in systems.items() if system == "base" or system.startswith("ref:")]
        # each trained model against the better off-the-shelf model: on the means, and PEARL-base per task too
        for system, row, columns in (("model", "margin_over_best_offshelf", MEANS),
                                     ("pearl-base", "pearl_base_margin_over_best_offshelf", systems.get("pearl-base", {}))):
            for column in columns:
                if column in systems.get(system, {}) and offshelf and all(column in s for s in offshelf):
                    systems.setdefault(row, {})[column] = round(
                        systems[system][column] - max(s[column] for s in offshelf), 2)
        if systems:
            summary[suite] = systems
    return summary


def _label(system: str, backbone: str) -> str:
    if system == "string":
        return "String distance (Jaccard, 3-grams)"
    if system == "base":
        return f"{backbone} (backbone, untuned)"
    if system.startswith("ref:"):
        return f"{system[4:]} (reference, untuned)"
    return {"pearl-base": "PEARL-base (ours)", "static": "PEARL-static (ours)",
            "burt-small": "BURT-small (BURT's recipe, offline data)"}.get(system, "PEARL-small (ours)")


def _constant(result: dict) -> bool:
    """Every probe seed gave the same score: the probe most likely answers one class for every item."""
    return result.get("std") == 0 and (result.get("seeds") or 0) > 1


def _cell(results: dict[str, dict], scores: dict[str, float], column: str) -> str:
    if column not in scores:
        return "–"
    spread = results.get(column, {}).get("std")
    if spread is None:
        return f"{scores[column]:.1f}"
    return f"{scores[column]:.1f} ± {spread:.1f}" + (" ⚑" if _constant(results[column]) else "")


def markdown(metrics_root: Path, summary: dict, tasks: list[str], tune_tasks: list[str],
             string_tasks: list[str], backbone: str, majority: dict[str, float] | None = None) -> str:
    """`majority`: each probe task's majority-class share (pearl.report.baselines), a row of its own."""
    majority = majority or {}
    lines, loaded = [], {}
    for suite, suite_tasks in (("test", tasks), ("tune", tune_tasks)):
        results = loaded[suite] = load_results(metrics_root, suite, suite_tasks, string_tasks)
        scores = summary.get(suite, {})
        for title, columns in TABLES[suite]:
            columns = [c for c in columns if c in suite_tasks or c in MEANS]
            lines += [f"### {title}, {suite} suite", ""]
            if not any(c in suite_tasks for c in columns):  # an empty bench.tune_tasks, say: the reader sees why
                lines += [f"No task of this table is run: none is in {SUITE_PARAMS[suite]}.", ""]
                continue
            lines += ["| system | " + " | ".join(TITLES[c] for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
            for system, system_results in results.items():
                if any(c in scores.get(system, {}) for c in columns):
                    cells = " | ".join(_cell(system_results, scores[system], c) for c in columns)
                    lines.append(f"| {_label(system, backbone)} | {cells} |")
            if suite == "test" and any(c in majority for c in columns):
                lines.append("| Majority class (no model) | " + " | ".join(
                    f"{majority[c]:.1f}" if c in majority else "–" for c in columns) + " |")
            for row, name in (("delta", "Δ (PEARL-small − backbone)"),
                              ("margin_over_best_offshelf", "Δ (PEARL-small − best off-the-shelf)"),
                              ("pearl_base_margin_over_best_offshelf", "Δ (PEARL-base − best off-the-shelf)"),
                              ("static_gap", "Δ (PEARL-static − PEARL-small)"),
                              ("burt_delta", "Δ (BURT-small − backbone)")):
                if any(c in scores.get(row, {}) for c in columns):
                    lines.append(f"| {name} | " + " | ".join(
                        f"{scores[row][c]:+.1f}" if c in scores[row] else "–" for c in columns) + " |")
            lines.append("")
    lines += bench_minutes(loaded, backbone)
    base = loaded["test"].get("base", {})
    for task in ("yago", "umls"):
        if task in base:
            kind = ("the paper's knowledge base" if base[task].get("dictionary_is_kb")
                    else "the test file's canonical names (easier than the paper's KB)")
            lines.append(f"- {TITLES[task]} dictionary: {base[task]['dictionary_size']} names from {kind}.")
    if "atis_s" in base:
        lines.append(f"- ATIS-S holds queries of at most {base['atis_s']['length_cut_tokens']} tokens (the lower median of train), ATIS-L the longer ones.")
    lines.append("- PPDB clean: unordered pairs once, no phrase on two sides of a split (pearl/bench/ppdb_split.py).")
    lines += _probe_notes(loaded["test"], majority, backbone)
    if any("burt-small" in systems for systems in loaded.values()):
        lines.append("- BURT's Table 2, offline subset: its STS12–16, SemEval-2013 Task 5(a), SCWS and PPDB phrase-similarity "
                     "columns have no offline copy. SICK-R here is the Spearman ρ of cosines on SICK TEST (SentEval fits a "
                     "regressor first). BURT-small trains on SICK TRAIN and SNLI dev for NLI, our cached variants for "
                     "paraphrase identification and WordNet's relations for pairwise classification, the offline "
                     "substitutes of SNLI + MultiNLI and PPDB (metrics/burt-small/train.json).")
    lines.append("- Scores in percent: accuracy (PPDB, Turney, retrieval, AutoFJ, ATIS), Pearson r × 100 (BIRD), "
                 "Spearman ρ × 100 (word similarity, STS-B), NMI × 100 (clustering); ties credited 1/k.")
    return "\n".join(lines) + "\n"


def _probe_notes(results: dict[str, dict[str, dict]], majority: dict[str, float], backbone: str) -> list[str]:
    notes = []
    if majority:
        notes.append("- Majority class: the accuracy of a probe that answers the most frequent class for every test item "
                     "(ATIS: of its test queries; PPDB: of the whole set, the deduplicated one for the clean tasks, "
                     "which each seed's random test split matches in expectation).")
    for system, by_task in results.items():
        for task, result in by_task.items():
            if task in majority and _constant(result):
                same = abs(result["score"] - majority[task]) < 0.05
                notes.append(f"- ⚑ {_label(system, backbone)} on {TITLES[task]}: all {result['seeds']} probe seeds gave "
                             f"{result['score']:.2f}" + (", the majority class's share: the probe answers one class for "
                                                         "every item, so this score and the Δ rows beside it measure "
                                                         "that, not the vectors." if same else "."))
    return notes


def bench_minutes(loaded: dict[str, dict[str, dict]], backbone: str) -> list[str]:
    """What each system's benchmark stages took, per suite (suite → load_results'): an mpnet-size model encodes
    several times slower."""
    minutes = {}
    for suite, systems in loaded.items():
        for system, results in systems.items():
            seconds = [r["seconds"] for r in results.values() if isinstance(r.get("seconds"), (int, float))]
            if seconds:
                minutes.setdefault(system, {})[suite] = f"{sum(seconds) / 60:.1f} ({len(seconds)} tasks)"
    if not minutes:
        return []
    return ["### Benchmark stages' minutes, per system (the machine of the run)", "", "| system | test suite | tune suite |",
            "|---|---|---|", *(f"| {_label(system, backbone)} | {by.get('test', '–')} | {by.get('tune', '–')} |"
                               for system, by in minutes.items()), ""]


def write_report(metrics_root: Path, tasks: list[str], tune_tasks: list[str], string_tasks: list[str], backbone: str,
                 summary_json: Path, summary_md: Path, majority: dict[str, float] | None = None) -> dict:
    summary = summarise(metrics_root, tasks, tune_tasks, string_tasks)
    write_json(summary, summary_json)
    with atomic_path(summary_md) as tmp:
        tmp.write_text(markdown(metrics_root, summary, tasks, tune_tasks, string_tasks, backbone, majority))
    return summary


def write_params_report(p: Params, metrics_root: Path, summary_json: Path, summary_md: Path) -> dict:
    """The report stage: params.yaml's suites and string tasks, and the probe tasks' majority classes read from its
    data folders."""
    from pearl.report.baselines import majority_shares

    majority = majority_shares(p.bench.tasks, Path(p.bench.data_dir), Path(p.bench.short_text_dir))
    return write_report(metrics_root, [*p.bench.tasks, *p.bench.burt_tasks],
                        [*p.bench.tune_tasks, *p.bench.burt_tune_tasks], p.bench.string_tasks, p.model.backbone,
                        summary_json, summary_md, majority)
