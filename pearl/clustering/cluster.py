"""Clustering names: KMeans for a given number of clusters, or average-linkage agglomerative
clustering that merges groups while their mean cosine similarity is at least a threshold.

Identical strings are embedded once and always share a cluster. Output: the input table with
`cluster` (numbered by first appearance, so the ids are stable), `representative` (the member
nearest its cluster's mean vector; for `string`, the highest mean Jaccard to the others) and
`cluster_size` (rows). Null or blank cells get null in all three.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pearl.errors import PearlError
from pearl.index import trigrams
from pearl.index.encoder import STRING, Encoder, load_encoder
from pearl.log import get_logger
from pearl.scores import TIE_TOLERANCE, check_score
from pearl.tables import as_polars, like_input, text_column

log = get_logger("cluster")

# Agglomerative clustering holds all pairwise distances: n² floats.
MAX_AGGLOMERATIVE = 20_000


def cluster_labels(texts: list[str], encoder: Encoder | str, k: int | None, threshold: float | None,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(label of each text, representative text index of each label), for distinct `texts`. `encoder`
    may be a model to load: it loads once the flags pass their checks."""
    from sklearn.cluster import AgglomerativeClustering, KMeans

    if (k is None) == (threshold is None):
        raise PearlError("give exactly one of --k (a number of clusters) or --threshold (a cosine similarity)")
    check_score(threshold, "--threshold")
    if k is not None and not 1 <= k <= len(texts):
        raise PearlError(f"--k {k}: between 1 and the {len(texts)} distinct names")
    if threshold is not None and len(texts) > MAX_AGGLOMERATIVE:
        raise PearlError(f"--threshold on {len(texts)} distinct names needs their {len(texts)}² distances; "
                         f"above {MAX_AGGLOMERATIVE} use --k")
    if isinstance(encoder, str):
        encoder = load_encoder(encoder)
    if len(texts) == 1:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    # sklearn merges only below the distance threshold: lift it by the tolerance, so that a similarity
    # tied with the threshold (pearl.scores) merges, as "at least" says
    distance_threshold = None if threshold is None else 1.0 - threshold + TIE_TOLERANCE
    if encoder.kind == STRING:
        if k is not None:
            raise PearlError("--k clusters vectors, and `string` has none: use --threshold, or an embedding model")
        similarity = trigrams.jaccard_matrix(texts, texts)
        labels = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average",
                                         distance_threshold=distance_threshold).fit_predict(1.0 - similarity)
        return labels, _representatives(labels, lambda members: similarity[np.ix_(members, members)].mean(axis=1))
    vectors = encoder.encode(texts)
    if k is not None:
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors)
        # with duplicate vectors (e.g. case variants under an uncased model) KMeans can leave a
        # cluster empty, so its labels skip numbers: make them 0…m-1
        labels = np.unique(labels, return_inverse=True)[1]
    else:
        labels = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                         distance_threshold=distance_threshold).fit_predict(vectors)
    return labels, _representatives(labels, lambda members: vectors[members] @ vectors[members].mean(axis=0))


def _representatives(labels: np.ndarray, centrality) -> np.ndarray:
    """Per label, the index of its most central member (the first on ties)."""
    chosen = np.zeros(labels.max() + 1, dtype=np.int64)
    for label in range(labels.max() + 1):
        members = np.flatnonzero(labels == label)
        chosen[label] = members[int(np.argmax(centrality(members)))]
    return chosen


def cluster(table, column: str, model: str = "models/pearl", k: int | None = None, threshold: float | None = None,
            seed: int = 0, *, encoder: Encoder | None = None):
    """Add `cluster`, `representative` and `cluster_size` to a polars or pandas DataFrame."""
    df = as_polars(table)
    cells = text_column(df, column, "the table", require_names=True)
    distinct = list(dict.fromkeys(cells.texts))
    labels, representative = cluster_labels(distinct, encoder or model, k, threshold, seed)
    label_of = dict(zip(distinct, labels))
    renumber: dict[int, int] = {}  # sklearn's label order → first appearance in the table
    cluster_of_row = [None] * len(df)
    for row, text in zip(cells.rows, cells.texts):
        cluster_of_row[row] = renumber.setdefault(int(label_of[text]), len(renumber))
    name_of = {renumber[label]: distinct[i] for label, i in enumerate(representative)}
    result = df.with_columns(pl.Series("cluster", cluster_of_row, dtype=pl.Int64))
    result = result.with_columns(
        pl.col("cluster").replace_strict(name_of, default=None, return_dtype=pl.String).alias("representative"),
        pl.len().over("cluster").cast(pl.Int64).alias("cluster_size"))
    result = result.with_columns(pl.when(pl.col("cluster").is_null()).then(None).otherwise(pl.col("cluster_size"))
                                 .alias("cluster_size"))
    log.info("%d rows (%d distinct names, %d blank) → %d clusters", len(df), len(distinct), cells.blank, len(renumber))
    return like_input(result, table)
