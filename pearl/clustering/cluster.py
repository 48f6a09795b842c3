"""Clustering names: KMeans for a given number of clusters, or average-linkage agglomerative
clustering that merges groups while their mean cosine similarity is at least a threshold.

Average linkage merges two groups only when some pair across them is at least the threshold, so
each of its clusters lies within one connected component of the graph of such pairs: the threshold
clusters are the average-linkage clusters of each component apart. The graph comes from each
name's NEIGHBOURS nearest names (faiss for vectors, sparse_dot_topn's top-n product of 3-gram
vectors for `string`), so memory and time grow with the names and the largest component, never
with all n² pairs. The result is the all-pairs clustering unless a name has more than NEIGHBOURS
names at or above the threshold (the log counts them): then a pair beyond them can be missing, and
the component split where no other path joins it.

Average linkage holds all distances of a component: n² floats. A component of more than MAX_COMPONENT
names is first cut into pieces of at most MAX_COMPONENT by size-constrained single linkage: the edges
of its maximum spanning tree (scipy) join names strongest first while the two sides together fit. Each
piece is then clustered apart, so that a cluster cannot span two pieces (the log says when this happens).

`--threshold auto` chooses the cut without labels, in the manner of the join's estimate (pearl.joining.select)
read on the table against itself: a pair kept at a cut is counted right with probability 1 / (the names
that the cut keeps with the name it joins), as any of them could be its twin instead. The cut is the lowest
of AUTO_CUTS candidates (quantiles of the nearest-neighbour scores) at which the pairs it keeps average
AUTO_PRECISION; with none, only names that score 1 are grouped. AutoFJ counts the names within twice the
distance, a bound for a reference table without duplicates; within the distance itself chose the better cut
on both design sets, for `string` and PEARL-small (docs/measurements.md#dedupe-threshold-auto). The count is
of a name's NEIGHBOURS nearest names, and it reads the table's own crowding: among unrelated names, two strangers
can be each other's only near name, and `auto` can join them (it did among 400 GeoNames cities); on a table with
few true twins, give a number.

With a model, a pair's score mixes string evidence in, as `pearl link` does: (1 − w) · its cosine + w · rapidfuzz's
token set ratio of the names in Latin letters, w = `string_weight` (0.5, the link's). The neighbour graph then holds
each name's NEIGHBOURS + 1 nearest by cosine and its NEIGHBOURS + 1 nearest by 3-grams, so that a name the encoder
reads badly still finds its twins through its letters; a pair that reaches the cut by the mix but is in neither
list is missing. Average linkage reads the same mixed score of every two members. `string` takes the same mix
with a weight given, and by default its 3-gram Jaccard alone: on the design sets the mix raised PEARL-small's
pairwise F1 at `auto` on AutoFJ's titles and the aliases (and cost it 0.006 on the generated forms), `string`'s
little, and `string`'s took 12× the time at a fixed cut (docs/measurements.md#dedupe-string-evidence).

Identical strings are embedded once and always share a cluster. Output: the input table with
`cluster` (numbered by first appearance, so the ids are stable), `representative` (the member
nearest its cluster's mean vector; for `string`, the highest mean Jaccard to the others) and
`cluster_size` (rows). Null or blank cells get null in all three.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from pearl.errors import PearlError
from pearl.index import trigrams
from pearl.index.encoder import STRING, Encoder, loaded
from pearl.index.phrase_index import Index
from pearl.latin import latin_all
from pearl.linking.link import CHUNK, STRING_SCORER, STRING_WEIGHT, mixed_top, pooled
from pearl.log import get_logger
from pearl.scores import TIE_TOLERANCE, at_least, check_score, with_string_evidence
from pearl.tables import as_polars, like_input, text_column

log = get_logger("cluster")

MAX_COMPONENT = 20_000  # names: average linkage's condensed distances take 1.6 GB
NEIGHBOURS = 50
# an edge a hair below the cut joins a component, where the exact distances decide: a cosine that faiss and
# scipy compute apart can differ in its last bits
EDGE_MARGIN = 1e-4
AUTO = "auto"
AUTO_PRECISION = 0.9  # the join's default target
AUTO_CUTS = 50
AUTO_RADIUS = 1.0  # a pair's rivals lie within this many times its distance (AutoFJ's bound: 2)
AUTO_PATIENCE = 0.05  # the join's: lower cuts are not tried once the estimate falls this far below the target


def cluster_labels(texts: list[str], encoder: Encoder | str | Callable[[], Encoder], k: int | None,
                   threshold: float | str | None, seed: int = 0,
                   string_weight: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(label of each text, representative text index of each label), for distinct `texts`. `encoder`
    may be a model to load (its name, or a loader): it loads once the flags pass their checks. `threshold`
    may be AUTO; `string_weight` mixes string similarity into every pair's score (the module's doc; None: the
    link's weight with a model, 0 with `string`)."""
    from sklearn.cluster import KMeans

    if (k is None) == (threshold is None):
        raise PearlError("give exactly one of --k (a number of clusters) or --threshold (a cosine similarity, or auto)")
    if string_weight is not None and not 0.0 <= string_weight <= 1.0:
        raise PearlError(f"--string-weight {string_weight}: a weight in [0, 1]")
    threshold = parsed_threshold(threshold)
    if k is not None and not 1 <= k <= len(texts):
        raise PearlError(f"--k {k}: between 1 and the {len(texts)} distinct names")
    encoder = loaded(encoder)
    if string_weight is None:
        string_weight = 0.0 if encoder.kind == STRING else STRING_WEIGHT
    if len(texts) == 1:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if threshold == AUTO:
        index = Index.build(texts, encoder=encoder)
        neighbours = _neighbours(index, string_weight)
        threshold, estimate = auto_threshold(*neighbours)
        if threshold is None:
            log.info("--threshold auto: no cut reaches the target %g (at best %.3f): only names that score 1 with "
                     "each other are grouped", AUTO_PRECISION, estimate)
            threshold = 1.0
        else:
            log.info("--threshold auto: %.4f (estimate %.3f, target %g)", threshold, estimate, AUTO_PRECISION)
        if encoder.kind == STRING and string_weight == 0:
            return _threshold_clusters(texts, None, threshold)
        return _threshold_clusters(texts, index, threshold, neighbours, string_weight)
    if threshold is not None and threshold <= _lowest_score(encoder.kind) and len(texts) > MAX_COMPONENT:
        raise PearlError(f"--threshold {threshold} puts all {len(texts)} names in one cluster, as every pair scores at "
                         "least that: give a higher --threshold")
    if encoder.kind == STRING:
        if k is not None:
            raise PearlError("--k clusters vectors, and `string` has none: use --threshold, or an embedding model")
        if string_weight == 0:
            return _threshold_clusters(texts, None, threshold)
    if threshold is not None:
        index = Index.build(texts, encoder=encoder)  # the neighbour graph's search, and the vectors or 3-grams
        return _threshold_clusters(texts, index, threshold, string_weight=string_weight)
    vectors = encoder.encode(texts)
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors)
    # with duplicate vectors (e.g. case variants under an uncased model) KMeans can leave a
    # cluster empty, so its labels skip numbers: make them 0…m-1
    labels = np.unique(labels, return_inverse=True)[1]
    return labels, _representatives(labels, lambda members: vectors[members] @ vectors[members].mean(axis=0))


def parsed_threshold(threshold: float | str | None) -> float | str | None:
    """`--threshold` as a number or AUTO, checked."""
    if threshold is None or threshold == AUTO:
        return threshold
    try:
        value = float(threshold)
    except ValueError:
        raise PearlError(f"--threshold {threshold!r}: give a cosine similarity in [-1, 1], or auto") from None
    check_score(value, "--threshold")
    return value


def auto_threshold(scores: np.ndarray, found: np.ndarray, radius: float = AUTO_RADIUS) -> tuple[float | None, float]:
    """The lowest cut at which each name's pairs with its nearer names are estimated AUTO_PRECISION precise
    (the module's doc), and that estimate, from each name's nearest names (`search_own_names`: scores and rows,
    best first, the name itself among them). With no cut that precise: None, and the highest estimate."""
    own = found == np.arange(len(found))[:, None]
    neighbour = np.where(own | (found < 0), -np.inf, scores).astype(np.float64)
    columns = np.where(own | (found < 0), 0, found)
    nearest = neighbour.max(axis=1)
    if not np.isfinite(nearest).any():  # no name has another near it
        return None, 0.0
    cuts = np.unique(np.quantile(nearest[np.isfinite(nearest)], np.linspace(0, 1, AUTO_CUTS)))[::-1]
    estimates = []
    for cut in cuts:  # highest first; the estimate falls with the cut, though not strictly
        kept = at_least(neighbour, cut)
        within = at_least(neighbour, 1 - radius * (1 - cut)).sum(axis=1)  # the pair's own name among them
        estimates.append(float((1.0 / np.maximum(within[columns[kept]], 1)).mean()))
        if estimates[-1] < AUTO_PRECISION - AUTO_PATIENCE:
            break
    estimates = np.array(estimates)
    reached = np.flatnonzero(estimates >= AUTO_PRECISION - TIE_TOLERANCE)
    if not len(reached):
        return None, float(estimates.max())
    return float(cuts[reached[-1]]), float(estimates[reached[-1]])


def _neighbours(index: Index, string_weight: float) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows) of each indexed name's NEIGHBOURS + 1 nearest names, best first, the name itself among them.
    With w = `string_weight` > 0 they are scored (1 − w) · cosine (or Jaccard) + w · the link's string similarity
    (pearl.linking.link), and a model's are pooled, by cosine and by 3-grams: a name the encoder reads badly still
    finds its twins through its letters, as the link's mentions do."""
    if string_weight == 0:
        return index.search_own_names(NEIGHBOURS + 1)
    if index.encoder.kind == STRING:
        return mixed_top(*index.search_own_names(NEIGHBOURS + 1), index.latin_names, index.latin_names,
                         NEIGHBOURS + 1, string_weight)
    parts = [mixed_top(*pooled(index, index.names[start:start + CHUNK], NEIGHBOURS + 1,
                               vectors=index.vectors[start:start + CHUNK]),
                       index.latin_names[start:start + CHUNK], index.latin_names, NEIGHBOURS + 1, string_weight)
             for start in range(0, len(index), CHUNK)]
    return np.concatenate([scores for scores, _ in parts]), np.concatenate([rows for _, rows in parts])


def _threshold_clusters(texts: list[str], index: Index | None, threshold: float,
                        neighbours: tuple[np.ndarray, np.ndarray] | None = None,
                        string_weight: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Average linkage at `threshold` within each connected component of the neighbour graph (the module's doc);
    `neighbours`: the index's `_neighbours`, where it was searched already. With an index and `string_weight` > 0,
    a pair's similarity is its mixed score (`_neighbours`); without an index, `string`'s 3-gram Jaccard."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial.distance import pdist

    mixed = index is not None and string_weight > 0
    if index is None:  # `string`: 3-grams of the names in Latin letters
        texts = latin_all(texts)
    elif mixed and neighbours is None:
        neighbours = _neighbours(index, string_weight)
    rows, columns, scores, crowded = _close_pairs(texts, index, threshold, neighbours)
    vectors = None if index is None or index.encoder.kind == STRING else index.vectors
    latin = texts if index is None else index.latin_names
    if crowded:
        log.info("%d names have more than %d neighbours at or above %g: pairs beyond them may be missing",
                 crowded, NEIGHBOURS, threshold)
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, columns)), shape=(len(texts), len(texts)))
    _, component = connected_components(graph, directed=False)
    sizes = np.bincount(component)
    if sizes.max() > MAX_COMPONENT:
        log.info("--threshold %g links %d names into one group, past the %d whose distances average linkage holds: "
                 "%d groups are cut along their strongest links into pieces of at most %d, clustered apart, so "
                 "that a cluster cannot span two pieces", threshold, sizes.max(), MAX_COMPONENT,
                 int((sizes > MAX_COMPONENT).sum()), MAX_COMPONENT)
        component = _pieces(component, sizes > MAX_COMPONENT, rows, columns, scores)
        sizes = np.bincount(component)
    # sklearn merges only below the distance threshold: lift it by the tolerance, so that a similarity
    # tied with the threshold (pearl.scores) merges, as "at least" says
    distance_threshold = 1.0 - threshold + TIE_TOLERANCE
    labels = np.empty(len(texts), dtype=np.int64)
    representative = []
    order = np.argsort(component, kind="stable")  # each component's members in text order
    groups = np.split(order, np.cumsum(sizes)[:-1])
    pairs = [members for members in groups if len(members) == 2]
    pair_merges = iter(_pair_merges(latin, vectors, pairs, distance_threshold, string_weight if mixed else 0.0))
    for members in groups:
        if len(members) <= 2:  # one name, or a pair that average linkage merges exactly when scikit-learn would
            together = len(members) == 2 and next(pair_merges)
            labels[members] = len(representative) + np.array([0, 0 if together else 1])[:len(members)]
            if not together:
                representative += list(members)
            elif vectors is None:  # the two have the same mean Jaccard to the pair: the first wins
                representative.append(members[0])
            else:
                representative.append(members[int(np.argmax(vectors[members] @ vectors[members].mean(axis=0)))])
            continue
        if vectors is None or mixed:
            similarity = (_mixed_similarity(latin, vectors, members, string_weight) if mixed
                          else trigrams.jaccard_matrix([texts[i] for i in members], [texts[i] for i in members]))
            member_labels = _average_linkage(_condensed_distances(similarity), distance_threshold)
            centrality = lambda group: similarity[np.ix_(group, group)].mean(axis=1)  # noqa: E731
        else:
            member_vectors = vectors[members]
            member_labels = _average_linkage(pdist(member_vectors, "cosine"), distance_threshold)
            centrality = lambda group: member_vectors[group] @ member_vectors[group].mean(axis=0)  # noqa: E731
        labels[members] = member_labels + len(representative)
        representative += [members[i] for i in _representatives(member_labels, centrality)]
    return labels, np.array(representative, dtype=np.int64)


def _pair_merges(texts: list[str], vectors: np.ndarray | None, pairs: list[np.ndarray],
                 distance_threshold: float, string_weight: float = 0.0) -> np.ndarray:
    """Whether each two-name component is one cluster: scikit-learn's test on scipy's distance of the pair (a
    linkage call per pair took 1 to 3 ms, most of the time when most components are pairs); with `string_weight`
    > 0, on the pair's mixed score."""
    from scipy.spatial.distance import pdist

    if not pairs:
        return np.zeros(0, dtype=bool)
    if string_weight > 0:
        a, b = np.array(pairs).T
        own = (trigrams.rowwise([texts[i] for i in a], [texts[i] for i in b]) if vectors is None
               else np.einsum("nd,nd->n", vectors[a], vectors[b]))
        distance = 1.0 - with_string_evidence(own[:, None], b[:, None], [texts[i] for i in a], texts, string_weight,
                                              STRING_SCORER)[:, 0].astype(np.float64)
    elif vectors is None:
        similarity = trigrams.rowwise([texts[a] for a, _ in pairs], [texts[b] for _, b in pairs])
        distance = (np.float32(1.0) - similarity).astype(np.float64)
    else:
        distance = np.array([pdist(vectors[pair], "cosine")[0] for pair in pairs])
    return ~(distance >= distance_threshold)


def _mixed_similarity(latin: list[str], vectors: np.ndarray | None, members: np.ndarray,
                      string_weight: float) -> np.ndarray:
    """(1 − w) · cosine (3-gram Jaccard without `vectors`) + w · the link's string similarity of every two of
    `members` (`_neighbours`): two n × n float32 matrices, 3.2 GB at MAX_COMPONENT names."""
    from rapidfuzz import fuzz, process, utils

    names = [latin[i] for i in members]
    similarity = trigrams.jaccard_matrix(names, names) if vectors is None else vectors[members] @ vectors[members].T
    string = process.cdist(names, names, scorer=getattr(fuzz, STRING_SCORER), processor=utils.default_process,
                           dtype=np.float32, workers=-1)
    string /= 100.0
    # in place, in with_string_evidence's order of operations, so that a pair scores here as on its edge
    similarity *= 1 - string_weight
    string *= string_weight
    similarity += string
    # a name's cosine with itself can round past 1, and linkage refuses a negative distance
    return np.minimum(similarity, 1.0, out=similarity)


def _lowest_score(kind: str) -> float:
    return 0.0 if kind == STRING else -1.0  # Jaccard, cosine


def _close_pairs(texts: list[str], index: Index | None, threshold: float,
                 neighbours: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The neighbour graph's edges (rows, columns, scores), and how many names had NEIGHBOURS neighbours that
    close."""
    if threshold <= _lowest_score(STRING if index is None else index.encoder.kind):  # every pair: one group
        others = np.arange(1, len(texts))
        return np.zeros_like(others), others, np.ones(len(others), dtype=np.float32), 0
    if index is None:
        return trigrams.NameSets(texts).close_pairs(threshold - EDGE_MARGIN, NEIGHBOURS)
    scores, found = neighbours or index.search_own_names(NEIGHBOURS + 1)
    close = (scores >= threshold - EDGE_MARGIN) & (found != np.arange(len(texts))[:, None]) & (found >= 0)
    return np.nonzero(close)[0], found[close], scores[close], int((close.sum(axis=1) >= NEIGHBOURS).sum())


def _pieces(component: np.ndarray, large: np.ndarray, rows: np.ndarray, columns: np.ndarray,
            scores: np.ndarray) -> np.ndarray:
    """Components again, each `large` one cut into pieces of at most MAX_COMPONENT names: size-constrained single
    linkage, which joins the names along the edges of the component's maximum spanning tree, strongest first,
    while both sides together fit."""
    from scipy.cluster.hierarchy import DisjointSet
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    n = len(component)
    inside = large[component[rows]]
    # the spanning tree of the least 2 − score, which orders edges as the score does and is never 0 (csgraph's
    # "no edge") for a cosine or a Jaccard
    weights = 2.0 - scores[inside].astype(np.float64)
    tree = minimum_spanning_tree(coo_matrix((weights, (rows[inside], columns[inside])), shape=(n, n)).tocsr()).tocoo()
    order = np.argsort(tree.data, kind="stable")
    members = np.flatnonzero(large[component])
    pieces = DisjointSet(members.tolist())
    for a, b in zip(tree.row[order].tolist(), tree.col[order].tolist()):
        if pieces.subset_size(a) + pieces.subset_size(b) <= MAX_COMPONENT:
            pieces.merge(a, b)
    relabelled = component.copy()
    relabelled[members] = component.max() + 1 + np.array([pieces[i] for i in members.tolist()])
    return np.unique(relabelled, return_inverse=True)[1]


def _average_linkage(distances: np.ndarray, distance_threshold: float) -> np.ndarray:
    """scikit-learn's AgglomerativeClustering(linkage="average", distance_threshold=…) on condensed distances: the
    same scipy linkage and the same cut (the merges below the threshold stay), without the square matrix and
    the index arrays that scikit-learn builds from precomputed distances (8.6 GB at 1M names, 20K in one group)."""
    from scipy.cluster.hierarchy import cut_tree, linkage

    merges = linkage(distances, method="average")
    return cut_tree(merges, n_clusters=int(np.count_nonzero(merges[:, 2] >= distance_threshold)) + 1).ravel()


def _condensed_distances(similarity: np.ndarray) -> np.ndarray:
    """1 − similarity above the diagonal, row by row (scipy's condensed form), in float64 as scikit-learn had it."""
    n = len(similarity)
    distances = np.empty(n * (n - 1) // 2)
    start = 0
    for i in range(n - 1):
        distances[start:start + n - 1 - i] = 1.0 - similarity[i, i + 1:]
        start += n - 1 - i
    return distances


def _representatives(labels: np.ndarray, centrality) -> np.ndarray:
    """Per label, the index of its most central member (the first on ties)."""
    chosen = np.zeros(labels.max() + 1, dtype=np.int64)
    for label in range(labels.max() + 1):
        members = np.flatnonzero(labels == label)
        chosen[label] = members[int(np.argmax(centrality(members)))]
    return chosen


def cluster(table, column: str, model: str = "models/pearl", k: int | None = None, threshold: float | str | None = None,
            seed: int = 0, *, encoder: Encoder | Callable[[], Encoder] | None = None,
            string_weight: float | None = None):
    """Add `cluster`, `representative` and `cluster_size` to a polars or pandas DataFrame."""
    df = as_polars(table)
    cells = text_column(df, column, "the table", require_names=True)
    distinct = list(dict.fromkeys(cells.texts))
    labels, representative = cluster_labels(distinct, encoder or model, k, threshold, seed, string_weight)
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
