"""A cost model for the front half on full English Wikipedia, from per-core rates measured here.

Each stage runs on a slice of the offline data in a fresh process pinned to 1 core, then to 2
(os.sched_setaffinity), side by side in one run, and its rate leaves start-up out (Ray, pools,
loading models): on 1 core a stage runs locally in one process, on the slice and on its first half,
and its rate is that of the second half (items / extra seconds): the per-core rate. On 2 cores it
runs with 2 workers of the mechanism that spreads it over a cluster: corpus, parse, typing and the
teacher as 2 Ray actors (`engine: ray`; items / the actors' busy window, `ray_busy_seconds`, from the
first batch started to the last one ended), candidates with 2 threads (negatives.n_threads; second half, as
on 1 core). augment runs its models (head parse, backbone vectors) on 2 Ray actors and the rest on the
driver, so its 2-worker rate is the whole stage's (second half, as on 1 core), not the actors'.

- corpus (sentence splitting of the offline leads, `corpus.max_docs` documents): sentences/s;
- parse (spaCy dependency constituents): sentences/s;
- typing with spaCy's OntoNotes NER, and with the transformers NER on CPU: phrases/s. The paper's
  DeBERTa-v3-large (tner/deberta-v3-large-ontonotes5) is not reachable here, so the second is a
  model of its shape (24 layers, hidden 1024, 37 OntoNotes BIO labels) with random weights and
  MiniLM's WordPiece tokenizer: its compute, not its predictions;
- augment (all three levels): phrases/s. FastText is trained on the same sentences in both runs,
  so its cost cancels out too: on Wikipedia, use pre-trained vectors (augment.fasttext_path), as
  the paper does;
- candidates (blocking and edit-distance mining): phrases/s;
- teacher (model.teacher, all-mpnet-base-v2, encoding each phrase once): phrases/s.

Wikipedia is taken as 150M sentences and the paper's 3.8M phrases (those kept at freq >= 2: what
typing, augment and mining see). Core-hours = items / rate at 1 core; wall time on N cores assumes
each stage keeps the 1→2-worker efficiency measured here (at most linear). Run
`dvc repro typing augment candidates` first.

    python benchmarks/wikipedia_cost.py
    python benchmarks/wikipedia_cost.py --only augment      # one row
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pearl.artifacts import CANDIDATES_SCHEMA, SENTENCES_SCHEMA, TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact

WIKIPEDIA = {"sentences": 150e6, "phrases": 3.8e6}
CORES = (8, 32, 128)


def deberta_large_shaped(folder: Path) -> Path:
    """A token classifier of tner/deberta-v3-large-ontonotes5's shape, random weights, saved offline."""
    import torch
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForTokenClassification

    from pearl.labels import ONTONOTES_TYPES
    from pearl.model_ids import resolve_model

    labels = ["O"] + [f"{prefix}-{t}" for t in ONTONOTES_TYPES for prefix in "BI"]
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("sentence-transformers/all-MiniLM-L6-v2", "model.backbone"))
    config = DebertaV2Config(  # deberta-v3-large's config.json
        vocab_size=128100, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
        max_position_embeddings=512, relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
        share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False, type_vocab_size=0,
        num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)})
    torch.manual_seed(0)
    DebertaV2ForTokenClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def measure(job: tuple[str, int, dict, dict]) -> dict:
    """The metrics of one stage's run, in this (child) process pinned to `cores` cores."""
    name, cores, overrides, paths = job
    os.sched_setaffinity(0, set(range(cores)))
    import torch

    torch.set_num_threads(cores)
    from pearl.augment import stage as augment
    from pearl.corpus import stage as corpus
    from pearl.entity_typing import stage as typing
    from pearl.negatives import stage as negatives
    from pearl.params import load_params
    from pearl.parse import stage as parse
    from pearl.teacher import stage as teacher

    params = load_params("params.yaml", overrides)
    out = Path(paths["out"])
    if name == "corpus":
        corpus.run(params, output=out / "s.parquet", metrics=out / "m.json")
    elif name == "parse":
        parse.run(params, source=paths["sentences"], output=out / "p.parquet", metrics=out / "m.json")
    elif name.startswith("typing"):
        typing.run(params, source=paths["phrases"], output=out / "t.parquet", metrics=out / "m.json")
    elif name == "augment":
        augment.run(params, source=paths["phrases"], sentences=paths["sentences"], output=out / "a.parquet",
                    metrics=out / "m.json")
    elif name.startswith("teacher"):
        teacher.run(params, phrases=paths["phrases"], candidates=paths["candidates"], variants=paths["variants"],
                    output=out / "v.parquet", metrics=out / "m.json")
    else:
        negatives.run_candidates(params, source=paths["phrases"], output=out / "c.parquet", metrics=out / "m.json")
    return json.loads((out / "m.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=20_000, help="parse slice (and half of it)")
    parser.add_argument("--phrases", type=int, default=20_000, help="typing (spaCy), augment and candidates slice")
    parser.add_argument("--deberta-phrases", type=int, default=512, help="typing (transformers) slice")
    parser.add_argument("--docs", type=int, default=10_000, help="corpus slice: documents (and half of them)")
    parser.add_argument("--teacher-phrases", type=int, default=2_000, help="teacher slice")
    parser.add_argument("--only", nargs="+", metavar="STAGE", help="measure only the stages whose name starts so "
                        "(their rows, without the front half's totals)")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs 2 cores")

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        sentences = read_artifact("data/corpus/sentences.parquet", SENTENCES_SCHEMA).head(args.sentences)
        typed = read_artifact("data/typed/phrases.parquet", TYPED_PHRASES_SCHEMA).sample(args.phrases, seed=0).sort("phrase")
        slices = {}  # (items, count) → file: a slice and its first half
        for unit, table, count in (("sentences", sentences, args.sentences), ("phrases", typed, args.phrases),
                                   ("phrases", typed, args.deberta_phrases), ("phrases", typed, args.teacher_phrases)):
            for n in (count // 2, count):
                slices[unit, n] = scratch / f"{unit}-{n}.parquet"
                table.head(n).write_parquet(slices[unit, n])
        # the teacher's other inputs, empty: at the default they add no text to the phrases
        no_candidates, no_variants = scratch / "candidates.parquet", scratch / "variants.parquet"
        read_artifact("data/negatives/candidates.parquet", CANDIDATES_SCHEMA).head(0).write_parquet(no_candidates)
        read_artifact("data/augment/variants.parquet", VARIANTS_SCHEMA).head(0).write_parquet(no_variants)
        deberta = scratch / "deberta"  # written below when its row is measured
        on_ray = {"engine": "ray", "ray.num_cpus": 2, "ray.corpus.workers": 2, "ray.parse.workers": 2,
                  "ray.typing.workers": 2, "ray.augment.workers": 2, "ray.teacher.workers": 2}
        deberta_params = {"typing.backend": "transformers", "typing.hf_model": str(deberta), "typing.batch_size": 32,
                          "ray.typing.batch_size": 32, "base.device": "cpu"}
        stages = {  # name → (items, count, overrides, 2-worker overrides)
            "corpus": ("sentences", args.docs, {}, on_ray),  # a slice of documents, its rate in sentences
            "parse": ("sentences", args.sentences, {}, on_ray),
            "typing, spaCy NER": ("phrases", args.phrases, {}, on_ray),
            "typing, DeBERTa-v3-large-shaped NER on CPU": ("phrases", args.deberta_phrases, deberta_params, on_ray),
            "augment": ("phrases", args.phrases, {}, on_ray),
            "candidates (mining)": ("phrases", args.phrases, {}, {"negatives.n_threads": 2}),
            # one teacher batch per actor call: the actor that loads its model first takes more of them
            "teacher, all-mpnet-base-v2 on CPU": ("phrases", args.teacher_phrases,
                                                  {"base.device": "cpu", "ray.teacher.batch_size": 256}, on_ray),
        }
        if args.only:
            stages = {name: stage for name, stage in stages.items() if name.startswith(tuple(args.only))}
        if any("DeBERTa" in name for name in stages):
            deberta_large_shaped(deberta)
        one_worker = {"engine": "local", "parse.n_process": 1, "negatives.n_threads": 1}
        rates = {}
        context = multiprocessing.get_context("spawn")

        def run(name: str, unit: str, n: int, cores: int, overrides: dict) -> tuple[int, dict]:
            """The items the run handled, and its metrics."""
            out = scratch / f"{len(rates)}-{cores}-{n}"
            out.mkdir()
            if name == "corpus":
                overrides = {**overrides, "corpus.max_docs": n}
                paths = {"out": str(out)}
            else:
                paths = {"sentences": str(slices["sentences", n if unit == "sentences" else args.sentences]),
                         "phrases": str(slices["phrases", n]), "candidates": str(no_candidates),
                         "variants": str(no_variants), "out": str(out)}
            # a fresh (non-daemonic: parse starts its own pool) process per run: nothing carried over
            with ProcessPoolExecutor(1, mp_context=context) as pool:
                metrics = pool.submit(measure, (name, cores, overrides, paths)).result()
            return (metrics["sentences"] if name == "corpus" else n), metrics

        for name, (unit, count, overrides, two_workers) in stages.items():
            for cores, workers in ((1, one_worker), (2, two_workers)):
                if workers.get("engine") == "ray" and name != "augment":  # augment: part of it on the driver
                    items, metrics = run(name, unit, count, cores, {**overrides, **workers})
                    rates[name, cores] = items / metrics["ray_busy_seconds"]
                    continue
                (half_items, half), (whole_items, whole) = (
                    (items, metrics["seconds"]) for items, metrics in
                    (run(name, unit, n, cores, {**overrides, **workers}) for n in (count // 2, count)))
                if whole <= half:
                    raise SystemExit(f"{name}: the whole slice took no longer than its half; use larger slices")
                rates[name, cores] = (whole_items - half_items) / (whole - half)

    print(f"\nRates without start-up on {os.cpu_count()} cores; "
          f"Wikipedia = {WIKIPEDIA['sentences'] / 1e6:.0f}M sentences, {WIKIPEDIA['phrases'] / 1e6:.1f}M phrases\n")
    print("| stage | 1 worker: items/s | 2 workers: items/s | speed-up | core-hours | "
          + " | ".join(f"wall on {n} cores" for n in CORES) + " |")
    print("|---|---|---|---|---|" + "---|" * len(CORES))
    costs = []
    for name, (unit, count, overrides, two_workers) in stages.items():
        rate1, rate2 = rates[name, 1], rates[name, 2]
        efficiency = min(rate2 / rate1 / 2, 1.0)  # kept at scale: the linear assumption
        core_hours = WIKIPEDIA[unit] / rate1 / 3600
        costs.append((name, core_hours, {n: core_hours / (n * efficiency) for n in CORES}))
        print(f"| {name} | {rate1:,.1f} {unit}/s | {rate2:,.1f} | {rate2 / rate1:.2f}× | {core_hours:,.1f} | "
              + " | ".join(_hours(costs[-1][2][n]) for n in CORES) + " |")
    for typing_with, left_out in () if args.only else (("spaCy", "DeBERTa"), ("DeBERTa", "spaCy")):
        kept = [c for c in costs if left_out not in c[0]]
        print(f"| **front half, typing with {typing_with}** | | | | {sum(c[1] for c in kept):,.1f} | "
              + " | ".join(_hours(sum(c[2][n] for c in kept)) for n in CORES) + " |")


def _hours(hours: float) -> str:
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:.0f} min"


if __name__ == "__main__":
    main()
