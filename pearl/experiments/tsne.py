"""Figure 4: phrases of known types embedded by the untuned backbone and by the trained model,
projected with sklearn's t-SNE and coloured by type, one image per dataset. Beside each picture
the same thing as one number: the silhouette of the types in embedding space (cosine) over all
the set's distinct phrases, which unlike the picture depends neither on the phrases drawn nor on
t-SNE's perplexity or seed.

The paper draws 100 YAGO 4 names of each of six types; we draw the CoNLL 03 and BC5CDR test
mentions (the clustering tasks' types) and our own phrases of the most frequent entity types.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import TYPED_PHRASES_SCHEMA, atomic_dir, read_artifact, write_json
from pearl.bench import data
from pearl.device import resolve_device
from pearl.embedder import Embedder
from pearl.errors import PearlError
from pearl.log import get_logger
from pearl.params import Params

log = get_logger("experiments")
MODEL = "models/pearl"
TYPED = Path("data/typed/phrases.parquet")
OUT_DIR = Path("metrics/figure4")
METRICS = Path("metrics/figure4.json")
SILHOUETTE_SAMPLE = 5000  # pairwise distances of more phrases cost more memory than they add precision


@dataclass(frozen=True)
class Sample:
    name: str
    texts: list[str]  # every distinct phrase of the kept types, for the silhouette
    types: list[str]
    drawn: list[int]  # up to figure4.per_type of each type, for the picture


def _sample(name: str, source: Path, texts: list[str], types: list[str], per_type: int, seed: int) -> Sample:
    """Distinct texts (a text under two types is left out) and a draw of `per_type` of each type."""
    # sorted before drawing: polars' unique() and group_by() keep no order, and the draw must not vary
    frame = pl.DataFrame({"text": texts, "type": types}).unique().sort("type", "text")
    frame = frame.filter(pl.col("text").is_in(frame.group_by("text").len().filter(pl.col("len") == 1)["text"].to_list()))
    kinds = frame["type"].n_unique()
    if not 2 <= kinds < frame.height:  # what a silhouette is defined for
        raise PearlError(f"{source}: {frame.height} distinct phrases of {kinds} types; figure4 needs at least 2 types "
                         "and more phrases than types")
    frame = frame.with_row_index("i")
    drawn = pl.concat([frame.filter(pl.col("type") == kind).sample(min(per_type, count), seed=seed)
                       for kind, count in frame.group_by("type").len().sort("type").iter_rows()])
    return Sample(name, frame["text"].to_list(), frame["type"].to_list(), sorted(drawn["i"].to_list()))


def samples(params: Params, typed: Path = TYPED) -> list[Sample]:
    f, seed = params.figure4, params.base.seed
    found = []
    for task in ("conll2003", "bc5cdr"):
        mentions = data.load_clustering(Path(params.bench.data_dir), task)
        found.append(_sample(task, Path(params.bench.data_dir) / task / "test.json", mentions.phrases,
                             [mentions.types[i] for i in mentions.labels], f.per_type, seed))
    phrases = read_artifact(typed, TYPED_PHRASES_SCHEMA).select("phrase", "ent_type").filter(pl.col("ent_type") != "OTHER")
    common = phrases.group_by("ent_type").len().sort(["len", "ent_type"], descending=[True, False])
    if common.height < 2:
        raise PearlError(f"{typed}: phrases of {common.height} entity type(s) besides OTHER; figure4 needs 2")
    kept = phrases.filter(pl.col("ent_type").is_in(common["ent_type"].head(f.phrase_types).to_list()))
    found.append(_sample("phrases", typed, kept["phrase"].to_list(), kept["ent_type"].to_list(), f.per_type, seed))
    return found


def silhouette(vectors: np.ndarray, types: list[str], seed: int) -> float:
    """Over every phrase, or a draw of SILHOUETTE_SAMPLE of them (sklearn's own sampling)."""
    from sklearn.metrics import silhouette_score

    size = SILHOUETTE_SAMPLE if len(vectors) > SILHOUETTE_SAMPLE else None
    return round(float(silhouette_score(vectors, types, metric="cosine", sample_size=size, random_state=seed)), 4)


def project(vectors: np.ndarray, perplexity: float, seed: int) -> np.ndarray:
    from sklearn.manifold import TSNE

    return TSNE(n_components=2, metric="cosine", init="pca", perplexity=min(perplexity, len(vectors) - 1),
                random_state=seed).fit_transform(vectors)


def draw(sample: Sample, panels: list[tuple[str, np.ndarray, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    types = [sample.types[i] for i in sample.drawn]
    kinds = sorted(set(types))
    colours = plt.get_cmap("tab10")
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5.2))
    for axis, (title, points, score) in zip(np.atleast_1d(axes), panels):
        for k, kind in enumerate(kinds):
            mask = np.array([t == kind for t in types])
            axis.scatter(points[mask, 0], points[mask, 1], s=9, color=colours(k % 10), label=kind, alpha=0.8)
        axis.set_title(f"{title}\nsilhouette of the types (all phrases): {score:.3f}", fontsize=10)
        axis.set_xticks([])
        axis.set_yticks([])
    np.atleast_1d(axes)[-1].legend(loc="best", fontsize=8, markerscale=2)
    figure.suptitle(f"{sample.name}: {len(types)} of {len(sample.texts)} phrases, t-SNE (cosine)", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def run(params: Params, model: str = MODEL, typed: Path = TYPED, out_dir: Path = OUT_DIR,
        metrics: Path = METRICS) -> dict:
    b, seed = params.bench, params.base.seed
    drawn = samples(params, typed)  # before the models load: a file too small to draw fails at once
    device = resolve_device(params.base.device)
    encoders = [(f"{params.model.backbone} (untuned)", Embedder(params.model.backbone, params.model.prefix,
                                                                 b.batch_size, b.max_length, device, "model.backbone")),
                ("PEARL (trained)", Embedder(model, "", b.batch_size, b.max_length, device))]
    result = {"backbone": params.model.backbone, "model": model, "per_type": params.figure4.per_type}
    with atomic_dir(out_dir) as tmp:
        for sample in drawn:
            panels, scores = [], {}
            for (title, encoder), key in zip(encoders, ("backbone", "model")):
                vectors = encoder.embed(sample.texts)
                scores[key] = silhouette(vectors, sample.types, seed)
                panels.append((title, project(vectors[sample.drawn], params.figure4.perplexity, seed), scores[key]))
            draw(sample, panels, tmp / f"{sample.name}.png")
            result[sample.name] = {**scores, "phrases": len(sample.texts), "drawn": len(sample.drawn),
                                   "types": sorted(set(sample.types))}
            log.info("%s: silhouette of the types %.3f untuned → %.3f trained (%d phrases)",
                     sample.name, scores["backbone"], scores["model"], len(sample.texts))
    write_json(result, metrics)
    return result
