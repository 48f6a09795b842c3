"""Run one peer tool on one task, configured as its own docs configure it for one name column.

Run with the peers' virtualenv (benchmarks/setup_peers_env.sh); benchmarks/peers.py runs it in a
child process, measures it and scores what it writes. docs/peers.md says why each setting is what
it is.

    benchmarks/.peers-venv/bin/python benchmarks/peer_tasks.py --tool rapidfuzz --task link --data DIR --out DIR

DIR holds one folder per data set with `right.parquet` (and `left.parquet` but for dedupe), one string
column `name`; a row's number is its position. Per data set it writes `<name>.parquet`, one row per right
row: link `right_row, left_row, score, accepted`; join `right_row, left_row`; dedupe (of the right table
alone) `row, cluster`; left_row is -1 where the tool returns no left row; and `<name>.json`, its seconds.
A tool without the task exits 3; a tool that fails on a data set gives nothing there (no left rows, every
name its own cluster), and its `<name>.json` says why. stdout carries exactly one JSON line: {"tool",
"version", "task", "settings"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

CORES = os.cpu_count() or 1
CDIST_CELLS = 1 << 26  # rapidfuzz score block: 64M float32 cells = 256 MiB, whatever the left size
SPLINK_THRESHOLD = 0.95  # splink README quickstart: cluster_pairwise_predictions_at_threshold(..., 0.95)
SPLINK_CHUNK_ROWS = 200_000  # predict() in chunks of right rows beyond this (Splink's DuckDB guide)
# Prediction blocking: "many strict rules" on derived key columns (first/last 3 letters, length // 3),
# each pair of keys so no block holds every "new ..." or "...ville" name.
SPLINK_KEYS = (("name_first3", "name_last3"), ("name_first3", "name_len3"), ("name_last3", "name_len3"))
SPLINK_EM_KEYS = (("name_first3", "name_last3"), ("name_first3", "name_len3"))  # EM training rules
SPLINK_RECALL = 0.7  # share of true matches the exact-name rule finds (the README's figure)
POLYFUZZ_MIN_SIMILARITY = 0.75  # polyfuzz.models.TFIDF(min_similarity=0.75), also group()'s default


def link_frame(n_right: int, right_row, left_row, score, accepted) -> pd.DataFrame:
    """Scatter the tool's (right, left, score, accepted) rows over every right row; -1 where none."""
    idx = np.asarray(right_row, dtype=np.int64)
    left = np.full(n_right, -1, dtype=np.int64)
    scores = np.full(n_right, np.nan)
    ok = np.zeros(n_right, dtype=bool)
    left[idx] = np.asarray(left_row, dtype=np.int64)
    scores[idx] = np.asarray(score, dtype=np.float64)
    ok[idx] = np.asarray(accepted, dtype=bool)
    return pd.DataFrame({"right_row": np.arange(n_right, dtype=np.int64), "left_row": left,
                         "score": scores, "accepted": ok})


def join_frame(link: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"right_row": link.right_row,
                         "left_row": np.where(link.accepted, link.left_row, -1).astype(np.int64)})


def joined(best):
    """A tool's join: the top-1 left rows its own threshold accepts."""
    def join(left, right):
        link, settings = best(left, right)
        return join_frame(link), settings
    return join


def dedupe_frame(cluster) -> pd.DataFrame:
    cluster = np.asarray(cluster, dtype=np.int64)
    return pd.DataFrame({"row": np.arange(len(cluster), dtype=np.int64), "cluster": cluster})


def singletons(cluster: np.ndarray) -> np.ndarray:
    """Give every row still at -1 a cluster id of its own."""
    missing = cluster < 0
    cluster[missing] = cluster.max(initial=-1) + 1 + np.arange(missing.sum())
    return cluster


# rapidfuzz ----------------------------------------------------------------------------------------

def rapidfuzz_link(left, right):
    from rapidfuzz import fuzz, process, utils

    # default_process once up front (the README's "with preprocessing"), not again per block.
    lq = [utils.default_process(s) for s in left]
    rq = [utils.default_process(s) for s in right]
    best = np.full(len(rq), -1, dtype=np.int64)
    score = np.full(len(rq), np.nan)
    step = max(1, CDIST_CELLS // max(1, len(lq)))
    for start in range(0, len(rq) if lq else 0, step):
        block = process.cdist(rq[start:start + step], lq, scorer=fuzz.ratio, dtype=np.float32, workers=-1)
        top = block.argmax(axis=1)
        best[start:start + len(top)] = top
        score[start:start + len(top)] = block[np.arange(len(top)), top]
    settings = {"call": "process.cdist(right, left) in blocks of right rows, argmax per row",
                "scorer": "fuzz.ratio", "processor": "utils.default_process", "workers": -1,
                "dtype": "float32", "block_cells": CDIST_CELLS,
                "accepted": "all True: rapidfuzz has no match threshold of its own"}
    return link_frame(len(rq), np.arange(len(rq)), best, score, np.ones(len(rq), dtype=bool)), settings


# string_grouper ------------------------------------------------------------------------------------

def string_grouper_best(left, right):
    from string_grouper import match_strings

    # master=right, duplicates=left: 0.8.0 keeps max_n_matches per *master* row (tf-idf is fitted
    # on both lists and cosine is symmetric), so this is match_most_similar's documented "most
    # similar master per duplicate above min_similarity" without its cap of one duplicate per master.
    pairs = match_strings(pd.Series(right, dtype=object), pd.Series(left, dtype=object),
                          max_n_matches=1, number_of_processes=CORES)
    settings = {"call": "match_strings(master=right, duplicates=left, max_n_matches=1)",
                "min_similarity": 0.8, "ngram_size": 3, "ignore_case": True,
                "regex": r"[,-./]|\s", "number_of_processes": CORES,
                "accepted": "every returned pair (all have similarity > min_similarity)"}
    link = link_frame(len(right), pairs.left_index, pairs.right_index, pairs.similarity,
                      np.ones(len(pairs), dtype=bool))
    return link, settings


def string_grouper_dedupe(right):
    from string_grouper import group_similar_strings

    groups = group_similar_strings(pd.Series(right, dtype=object),
                                   string_ids=pd.Series(np.arange(len(right))),
                                   number_of_processes=CORES)
    settings = {"call": "group_similar_strings(right, string_ids=row)", "min_similarity": 0.8,
                "max_n_matches": 20, "ngram_size": 3, "group_rep": "centroid",
                "number_of_processes": CORES, "cluster": "group_rep_id (connected components)"}
    return dedupe_frame(groups.group_rep_id.to_numpy()), settings


# polyfuzz -----------------------------------------------------------------------------------------

def first_row_of(names) -> dict:
    """polyfuzz answers with strings; map each back to its first row."""
    rows = {}
    for i, s in enumerate(names):
        rows.setdefault(s, i)
    return rows


def polyfuzz_matches(left, right, min_similarity):
    from polyfuzz import PolyFuzz
    from polyfuzz.models import TFIDF

    model = PolyFuzz("TF-IDF") if min_similarity is None else PolyFuzz(TFIDF())
    matches = model.match(list(right), list(left)).get_matches()
    rows = first_row_of(left)
    left_row = np.array([rows.get(t, -1) if isinstance(t, str) else -1 for t in matches.To], dtype=np.int64)
    return left_row, matches.Similarity.to_numpy(dtype=np.float64)


def polyfuzz_link(left, right):
    left_row, score = polyfuzz_matches(left, right, None)
    found = left_row >= 0
    settings = {"call": 'PolyFuzz("TF-IDF").match(right, left)', "n_gram_range": [3, 3],
                "clean_string": True, "cosine_method": "sparse", "top_n": 1,
                "min_similarity": "0 (the quick-start path)",
                "accepted": f"Similarity >= {POLYFUZZ_MIN_SIMILARITY} (TFIDF's default min_similarity)",
                "to_row": "first left row with the returned string"}
    accepted = found & (score >= POLYFUZZ_MIN_SIMILARITY)
    return link_frame(len(right), np.flatnonzero(found), left_row[found], score[found], accepted[found]), settings


def polyfuzz_join(left, right):
    left_row, score = polyfuzz_matches(left, right, POLYFUZZ_MIN_SIMILARITY)
    settings = {"call": "PolyFuzz(TFIDF()).match(right, left)", "n_gram_range": [3, 3],
                "clean_string": True, "cosine_method": "sparse",
                "min_similarity": POLYFUZZ_MIN_SIMILARITY, "to_row": "first left row with the returned string"}
    found = left_row >= 0
    link = link_frame(len(right), np.flatnonzero(found), left_row[found], score[found], np.ones(found.sum(), bool))
    return join_frame(link), settings


def polyfuzz_dedupe(right):
    from polyfuzz import PolyFuzz

    model = PolyFuzz("TF-IDF")
    model.match(list(right))
    model.group(link_min_similarity=POLYFUZZ_MIN_SIMILARITY, group_all_strings=True)
    mapping = model.get_cluster_mappings()
    cluster = np.array([mapping.get(s, -1) for s in right], dtype=np.int64)
    # strings outside every group: one cluster per distinct string (polyfuzz works on strings)
    codes, _ = pd.factorize(pd.Series(right)[cluster < 0])
    cluster[cluster < 0] = cluster.max(initial=-1) + 1 + codes
    settings = {"call": 'PolyFuzz("TF-IDF").match(right); .group(link_min_similarity=0.75, group_all_strings=True)',
                "grouper": "TFIDF(n_gram_range=(3, 3), min_similarity=0.75), single linkage",
                "cluster": "get_cluster_mappings() by string; ungrouped strings are singletons"}
    return dedupe_frame(cluster), settings


# splink -------------------------------------------------------------------------------------------

def splink_frame(names) -> pd.DataFrame:
    """lower(trim(name)) plus the derived blocking keys, each a column of its own (see SPLINK_KEYS)."""
    name = pd.Series(names, dtype=object).str.strip().str.lower()
    return pd.DataFrame({"unique_id": np.arange(len(name), dtype=np.int64), "name": name,
                         "name_first3": name.str[:3], "name_last3": name.str[-3:],
                         "name_len3": (name.str.len() // 3).astype("Int64")})


def splink_predict(link_type: str, tables: list):
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    db = DuckDBAPI()  # DuckDB runs on every core by default
    # names lower-cased and trimmed: Splink's comparisons are case-sensitive and its docs ask for
    # cleaned inputs; the dataset names avoid SQL keywords (left/right break its UNION). The blocking
    # keys are precomputed columns: EM drops every comparison whose input column is in its blocking
    # rule, so a rule on substr(name, ...) would leave `name` untrained.
    frames = [db.register(splink_frame(t), dataset_display_name=label)
              for t, label in zip(tables, ["names_l", "names_r"])]
    # The exact-name rule estimates the prior only where some pair shares a name; where none does (other
    # scripts, say), it divides by zero, and the prior is Splink's meaning of it for a right row that has one
    # match on the left: 1 / left rows (dedupe: 1 / rows).
    cleaned = [set(splink_frame(t)["name"]) for t in tables]
    exact = bool(cleaned[0] & cleaned[1]) if len(tables) > 1 else len(cleaned[0]) < len(tables[0])
    prior = {} if exact else {"probability_two_random_records_match": 1 / len(tables[0])}
    settings = SettingsCreator(link_type=link_type, comparisons=[cl.NameComparison("name")],
                               blocking_rules_to_generate_predictions=[block_on(*k) for k in SPLINK_KEYS], **prior)
    linker = Linker(frames if len(frames) > 1 else frames[0], settings)
    if exact:
        linker.training.estimate_probability_two_random_records_match([block_on("name")],
                                                                      recall=SPLINK_RECALL)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e7)
    for keys in SPLINK_EM_KEYS:  # EM once per training rule, as the tutorials do
        linker.training.estimate_parameters_using_expectation_maximisation(block_on(*keys))
    chunks = -(-len(tables[-1]) // SPLINK_CHUNK_ROWS)
    chunking = {"num_chunks_left": 1, "num_chunks_right": chunks} if chunks > 1 else {}
    predictions = linker.inference.predict(threshold_match_weight=-10, **chunking)
    m = {lvl["label_for_charts"]: round(lvl["m_probability"], 4)
         for lvl in linker.misc.save_model_to_json()["comparisons"][0]["comparison_levels"]
         if "m_probability" in lvl}
    config = {"link_type": link_type, "comparison": "cl.NameComparison('name') "
              "(exact with tf adjustment, Jaro-Winkler >= 0.92, 0.88, 0.7, else)",
              "input": "lower(trim(name)); name_first3, name_last3, name_len3 = length // 3 as columns",
              "blocking_rules_to_generate_predictions": [" and ".join(k) for k in SPLINK_KEYS],
              "probability_two_random_records_match":
                  f"estimated from block_on('name'), recall={SPLINK_RECALL}" if exact
                  else f"1 / {len(tables[0])} rows: no two names are equal, so block_on('name') finds no pair",
              "u": "estimate_u_using_random_sampling(max_pairs=1e7)",
              "m": [f"EM blocked on {' and '.join(k)}" for k in SPLINK_EM_KEYS], "m_trained": m,
              "predict": "threshold_match_weight=-10", "predict_chunks": chunking or None,
              "threshold_match_probability": SPLINK_THRESHOLD}
    return linker, db, predictions, config


def splink_best(left, right):
    linker, db, predictions, config = splink_predict("link_only", [left, right])
    best = db.duckdb_con.sql(f"""
        select case when source_dataset_r = 'names_r' then unique_id_r else unique_id_l end as r,
               case when source_dataset_r = 'names_r' then unique_id_l else unique_id_r end as l,
               match_probability as p
        from {predictions.physical_name}
        qualify row_number() over (partition by r order by p desc, l) = 1""").df()
    link = link_frame(len(right), best.r, best.l, best.p, best.p.to_numpy() >= SPLINK_THRESHOLD)
    config["best"] = "highest match_probability left row per right row among predict's pairs"
    return link, config


def splink_link(left, right):
    link, config = splink_best(left, right)
    config["accepted"] = f"match_probability >= {SPLINK_THRESHOLD}"
    return link, config


def splink_dedupe(right):
    linker, db, predictions, config = splink_predict("dedupe_only", [right])
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(
        predictions, threshold_match_probability=SPLINK_THRESHOLD)
    rows = db.duckdb_con.sql(f"select unique_id, cluster_id from {clusters.physical_name}").df()
    cluster = np.full(len(right), -1, dtype=np.int64)
    cluster[rows.unique_id.to_numpy()] = pd.factorize(rows.cluster_id)[0]
    config["cluster"] = f"cluster_pairwise_predictions_at_threshold({SPLINK_THRESHOLD})"
    return dedupe_frame(singletons(cluster)), config


# goldenmatch --------------------------------------------------------------------------------------

def goldenmatch_config_seen():
    """Record the config zero-config auto-configuration picks (match_df does not return it)."""
    import goldenmatch._api as api

    seen, auto = [], api.auto_configure_df

    def recording(*args, **kwargs):
        seen.append(auto(*args, **kwargs))
        return seen[-1]

    api.auto_configure_df = recording  # _api calls it through the module attribute
    return seen


def goldenmatch_settings(call: str, configs) -> dict:
    return {"call": call, "config": "zero-config (auto_configure_df)",
            "auto_config": [c.model_dump(mode="json", exclude_none=True, exclude_defaults=True) for c in configs]}


def names_table(names):
    import pyarrow as pa

    return pa.table({"name": pa.array(list(names), type=pa.string())})


def goldenmatch_best(left, right):
    import goldenmatch as gm

    seen = goldenmatch_config_seen()
    result = gm.match_df(names_table(right), names_table(left))
    cols = ["__target_row_id__", "__ref_row_id__", "__match_score__"]
    matched = (result.matched.select(cols).to_pandas() if result.matched is not None
               else pd.DataFrame({c: [] for c in cols}))
    # match_df numbers target rows 0..n-1 and reference rows from n on (run_match_df's offset)
    left_row = matched.__ref_row_id__.to_numpy(dtype=np.int64) - len(right)
    assert ((left_row >= 0) & (left_row < len(left))).all(), "goldenmatch reference ids moved"
    link = link_frame(len(right), matched.__target_row_id__, left_row, matched.__match_score__,
                      np.ones(len(matched), dtype=bool))
    settings = goldenmatch_settings("match_df(target=right, reference=left)", seen)
    settings["accepted"] = "every returned pair (match_mode 'best', above the matchkey threshold)"
    return link, settings


def goldenmatch_dedupe(right):
    import goldenmatch as gm

    result = gm.dedupe_df(names_table(right))
    cluster = np.full(len(right), -1, dtype=np.int64)
    for i, (_, members) in enumerate(result.clusters.items()):
        cluster[np.asarray(members["members"], dtype=np.int64)] = i
    settings = goldenmatch_settings("dedupe_df(right)", [result.config])
    settings["cluster"] = "result.clusters"
    return dedupe_frame(singletons(cluster)), settings


TASKS = {
    ("rapidfuzz", "link"): rapidfuzz_link,
    ("string_grouper", "link"): string_grouper_best,
    ("string_grouper", "join"): joined(string_grouper_best),
    ("string_grouper", "dedupe"): string_grouper_dedupe,
    ("polyfuzz", "link"): polyfuzz_link,
    ("polyfuzz", "join"): polyfuzz_join,
    ("polyfuzz", "dedupe"): polyfuzz_dedupe,
    ("splink", "link"): splink_link,
    ("splink", "join"): joined(splink_best),
    ("splink", "dedupe"): splink_dedupe,
    ("goldenmatch", "link"): goldenmatch_best,
    ("goldenmatch", "join"): joined(goldenmatch_best),
    ("goldenmatch", "dedupe"): goldenmatch_dedupe,
}
TOOLS = ("rapidfuzz", "string_grouper", "polyfuzz", "splink", "goldenmatch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, choices=TOOLS)
    parser.add_argument("--task", required=True, choices=("link", "join", "dedupe"))
    parser.add_argument("--data", type=Path, required=True, help="a folder of data set folders")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    run = TASKS.get((args.tool, args.task))
    if run is None:
        print(f"peer_tasks: {args.tool} has no {args.task}", file=sys.stderr)
        sys.exit(3)
    os.environ.setdefault("GOLDENMATCH_ANALYTICS", "0")  # off by default already; keep it off
    # The tools print and log to stdout; send fd 1 to stderr so stdout carries only the JSON line.
    stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {}
    for folder in sorted(p for p in args.data.iterdir() if p.is_dir()):
        right = pd.read_parquet(folder / "right.parquet", columns=["name"]).name.tolist()
        started = time.perf_counter()
        error = None
        try:
            if args.task == "dedupe":
                out, settings = run(right)
            else:
                out, settings = run(pd.read_parquet(folder / "left.parquet", columns=["name"]).name.tolist(), right)
        except Exception as failure:  # noqa: BLE001 - a peer failing on one data set gives nothing there, not a stop
            error = f"{type(failure).__name__}: {failure}".splitlines()[0][:300]
            print(f"peer_tasks: {args.tool} failed on {folder.name}: {error}", file=sys.stderr)
            nothing = link_frame(len(right), [], [], [], [])
            out = {"link": nothing, "join": join_frame(nothing), "dedupe": dedupe_frame(np.arange(len(right)))}[args.task]
        seconds = time.perf_counter() - started
        assert len(out) == len(right), (len(out), len(right))
        out.to_parquet(args.out / f"{folder.name}.parquet", index=False)
        (args.out / f"{folder.name}.json").write_text(json.dumps({"seconds": seconds, "settings": settings,
                                                                  "error": error}))
    sys.stdout.flush()
    stdout.write(json.dumps({"tool": args.tool, "version": version(args.tool), "task": args.task,
                             "settings": settings}) + "\n")
    stdout.flush()


if __name__ == "__main__":
    main()
