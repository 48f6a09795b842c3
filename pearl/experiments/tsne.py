"""Figure 4: phrases of known types embedded by the untuned backbone and by the trained model,
projected with sklearn's t-SNE and coloured by type, one image per dataset. Beside each picture
the same thing as one number: the silhouette of the types in embedding space (cosine), which
unlike the picture does not depend on t-SNE's perplexity or seed.

The paper draws 100 YAGO 4 names of each of six types; we draw the CoNLL 03 and BC5CDR test
mentions (the clustering tasks' types) and our own phrases of the most frequent entity types.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from pearl.artifacts import atomic_dir, write_json
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


@dataclass(frozen=True)
class Sample:
    name: str
    texts: list[str]
    types: list[str]


def _balanced(texts: list[str], types: list[str], per_type: int, seed: int) -> tuple[list[str], list[str]]:
    """Up to `per_type` distinct texts of each type, drawn with `seed`; a text under two types is left out."""
    frame = pl.DataFrame({"text": texts, "type": types}).unique()
    frame = frame.filter(pl.col("text").is_in(frame.group_by("text").len().filter(pl.col("len") == 1)["text"].to_list()))
    parts = [group.sample(min(per_type, group.height), seed=seed).sort("text")
             for _, group in sorted(frame.group_by("type"), key=lambda g: str(g[0][0]))]
    drawn = pl.concat(parts)
    return drawn["text"].to_list(), drawn["type"].to_list()


def samples(params: Params, typed: Path = TYPED) -> list[Sample]:
    f, seed = params.figure4, params.base.seed
    found = []
    for task in ("conll2003", "bc5cdr"):
        mentions = data.load_clustering(Path(params.bench.data_dir), task)
        found.append(Sample(task, *_balanced(mentions.phrases, [mentions.types[i] for i in mentions.labels],
                                            f.per_type, seed)))
    phrases = pl.read_parquet(typed, columns=["phrase", "ent_type"]).filter(pl.col("ent_type") != "OTHER")
    common = phrases.group_by("ent_type").len().sort(["len", "ent_type"], descending=[True, False])
    if common.height < 2:
        raise PearlError(f"{typed}: phrases of {common.height} entity type(s) besides OTHER; figure4 needs 2")
    kept = phrases.filter(pl.col("ent_type").is_in(common["ent_type"].head(f.phrase_types).to_list()))
    found.append(Sample("phrases", *_balanced(kept["phrase"].to_list(), kept["ent_type"].to_list(), f.per_type, seed)))
    return found


def silhouette(vectors: np.ndarray, types: list[str]) -> float:
    from sklearn.metrics import silhouette_score

    return round(float(silhouette_score(vectors, types, metric="cosine")), 4)


def project(vectors: np.ndarray, perplexity: float, seed: int) -> np.ndarray:
    from sklearn.manifold import TSNE

    return TSNE(n_components=2, metric="cosine", init="pca", perplexity=min(perplexity, len(vectors) - 1),
                random_state=seed).fit_transform(vectors)


def draw(sample: Sample, panels: list[tuple[str, np.ndarray, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    kinds = sorted(set(sample.types))
    colours = plt.get_cmap("tab10")
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5.2))
    for axis, (title, points, score) in zip(np.atleast_1d(axes), panels):
        for k, kind in enumerate(kinds):
            mask = np.array([t == kind for t in sample.types])
            axis.scatter(points[mask, 0], points[mask, 1], s=9, color=colours(k % 10), label=kind, alpha=0.8)
        axis.set_title(f"{title}\nsilhouette of the types: {score:.3f}", fontsize=10)
        axis.set_xticks([])
        axis.set_yticks([])
    np.atleast_1d(axes)[-1].legend(loc="best", fontsize=8, markerscale=2)
    figure.suptitle(f"{sample.name}: {len(sample.texts)} phrases, t-SNE (cosine)", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def run(params: Params, model: str = MODEL, typed: Path = TYPED, out_dir: Path = OUT_DIR,
        metrics: Path = METRICS) -> dict:
    b, seed = params.bench, params.base.seed
    device = resolve_device(params.base.device)
    encoders = [(f"{params.model.backbone} (untuned)", Embedder(params.model.backbone, params.model.prefix,
                                                                 b.batch_size, b.max_length, device, "model.backbone")),
                ("PEARL (trained)", Embedder(model, "", b.batch_size, b.max_length, device))]
    result = {"backbone": params.model.backbone, "model": model, "per_type": params.figure4.per_type}
    with atomic_dir(out_dir) as tmp:
        for sample in samples(params, typed):
            panels, scores = [], {}
            for (title, encoder), key in zip(encoders, ("backbone", "model")):
                vectors = encoder.embed(sample.texts)
                scores[key] = silhouette(vectors, sample.types)
                panels.append((title, project(vectors, params.figure4.perplexity, seed), scores[key]))
            draw(sample, panels, tmp / f"{sample.name}.png")
            result[sample.name] = {**scores, "phrases": len(sample.texts), "types": sorted(set(sample.types))}
            log.info("%s: silhouette of the types %.3f untuned → %.3f trained (%d phrases)",
                     sample.name, scores["backbone"], scores["model"], len(sample.texts))
    write_json(result, metrics)
    return result
