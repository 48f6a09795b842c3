"""The benchmark summary: per-task scores of the model, its backbone and the string baseline."""

from __future__ import annotations

import json
from pathlib import Path

from pearl.artifacts import atomic_path, write_json
from pearl.bench.task_names import PHRASE_TASKS

SYSTEMS = {"string": "String distance (Jaccard, 3-grams)", "base": "backbone, untuned", "model": "PEARL (ours)"}
TITLES = {
    "ppdb": "PPDB", "ppdb_filtered": "PPDB filtered", "turney": "Turney", "bird": "BIRD", "yago": "YAGO",
    "umls": "UMLS", "conll2003": "CoNLL 03", "bc5cdr": "BC5CDR", "autofj": "AutoFJ", "atis_s": "ATIS-S",
    "atis_l": "ATIS-L",
}


def _load(metrics_dir: Path, system: str, tasks: list[str]) -> dict[str, dict]:
    found = {}
    for task in tasks:
        path = metrics_dir / system / f"{task}.json"
        if path.is_file():
            found[task] = json.loads(path.read_text())
    return found


def summarise(metrics_dir: Path, tasks: list[str], string_tasks: list[str]) -> dict:
    """Scores per system; `avg9` only when all nine phrase tasks are present."""
    summary = {}
    for system in SYSTEMS:
        results = _load(metrics_dir, system, string_tasks if system == "string" else tasks)
        if not results:
            continue
        scores = {task: results[task]["score"] for task in results}
        if all(task in scores for task in PHRASE_TASKS):
            scores["avg9"] = round(sum(scores[t] for t in PHRASE_TASKS) / len(PHRASE_TASKS), 2)
        summary[system] = scores
    if "model" in summary and "base" in summary:
        summary["delta"] = {
            task: round(summary["model"][task] - summary["base"][task], 2)
            for task in summary["model"] if task in summary["base"]
        }
    return summary


def _cell(summary: dict, system: str, task: str, std: dict) -> str:
    value = summary.get(system, {}).get(task)
    if value is None:
        return "–"
    spread = std.get(system, {}).get(task)
    return f"{value:.1f} ± {spread:.1f}" if spread is not None else f"{value:.1f}"


def markdown(summary: dict, metrics_dir: Path, tasks: list[str], backbone: str) -> str:
    std = {
        system: {task: r["std"] for task, r in _load(metrics_dir, system, tasks).items() if "std" in r}
        for system in SYSTEMS
    }
    lines = []
    for title, columns in (("Phrase tasks (paper Table 1)", [*PHRASE_TASKS, "avg9"]),
                           ("Short-text classification (paper Table 2)", ["atis_s", "atis_l"])):
        columns = [c for c in columns if c in tasks or c == "avg9"]
        if not columns or columns == ["avg9"]:
            continue
        header = [TITLES.get(c, "Avg (9 tasks)") for c in columns]
        lines += [f"### {title}", "", "| system | " + " | ".join(header) + " |",
                  "|---" * (len(columns) + 1) + "|"]
        for system, name in SYSTEMS.items():
            if any(c in summary.get(system, {}) for c in columns):
                label = f"{backbone} ({name})" if system == "base" else name
                lines.append(f"| {label} | " + " | ".join(_cell(summary, system, c, std) for c in columns) + " |")
        if "delta" in summary:
            lines.append("| Δ (model − backbone) | " + " | ".join(
                f"{summary['delta'][c]:+.1f}" if c in summary["delta"] else "–" for c in columns) + " |")
        lines.append("")
    retrieval = _load(metrics_dir, "base", ["yago", "umls"])
    for task, result in retrieval.items():
        kind = "the paper's knowledge base" if result.get("dictionary_is_kb") else "the test file's canonical names (easier than the paper's KB)"
        lines.append(f"- {TITLES[task]} dictionary: {result['dictionary_size']} names from {kind}.")
    atis = _load(metrics_dir, "base", ["atis_s"])
    if atis:
        lines.append(f"- ATIS-S holds queries of at most {atis['atis_s']['length_cut_tokens']} tokens (the lower median of train), ATIS-L the longer ones.")
    lines.append("- Scores in percent: accuracy (PPDB, Turney, retrieval, AutoFJ, ATIS), Pearson r × 100 (BIRD), NMI × 100 (clustering); ties credited 1/k.")
    return "\n".join(lines) + "\n"


def write_report(metrics_dir: Path, tasks: list[str], string_tasks: list[str], backbone: str,
                 summary_json: Path, summary_md: Path) -> dict:
    summary = summarise(metrics_dir, tasks, string_tasks)
    write_json(summary, summary_json)
    with atomic_path(summary_md) as tmp:
        tmp.write_text(markdown(summary, metrics_dir, tasks, backbone))
    return summary
