"""A persistent, searchable set of names embedded by one encoder.

Folder layout (written into a staging folder and swapped in whole, so a crash leaves the old
index or none, never half of one):

- `rows.parquet`: `id`, `name` and, for embedding models, `vector` (Array(Float32, dimension));
- `index.faiss`: inner product over the L2-normalised vectors (cosine), exact below
  `exact_below` names, HNSW above; none for `string`, which is searched exhaustively;
- `manifest.json`: format and pearl version, the encoder (id, weights sha256, dimension,
  prefix), the count and the index kind with its params.

Results are ordered by score, then by row (the order names were added): equal scores (the
benchmark's tie rule, pearl.scores) never depend on the search structure. `add` embeds only the new names.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from pearl.artifacts import atomic_dir
from pearl.errors import PearlError
from pearl.index import trigrams
from pearl.index.encoder import STRING, Encoder, ModelCard, load_encoder
from pearl.index.vector_search import SEARCH_ROWS, VectorSearch, VectorSearchActor, search_on_ray
from pearl.latin import latin_all
from pearl.log import get_logger
from pearl.scores import rank
from pearl.tables import as_polars, check_output_folder, require_column, text_column

if TYPE_CHECKING:
    from pearl.ray_encoding import RayEncoding

log = get_logger("index")

FORMAT = "pearl-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ROWS = "rows.parquet"
FAISS = "index.faiss"
STATS = ("rows_read", "blank_skipped", "truncated")


@dataclass(frozen=True)
class IndexSettings:
    """Exact search up to `exact_below` names; above, HNSW with these params (measured in
    benchmarks/index_scale.py: recall@10 against exact search)."""

    exact_below: int = 100_000
    hnsw_m: int = 32
    hnsw_ef_construction: int = 80
    hnsw_ef_search: int = 128


def pearl_version() -> str:
    return metadata.version("pearl")


def new_faiss_index(dimension: int, exact: bool, settings: IndexSettings):
    """An empty inner-product index: exact, or HNSW with `settings`."""
    import faiss

    if exact:
        return faiss.IndexFlatIP(dimension)
    index = faiss.IndexHNSWFlat(dimension, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = settings.hnsw_ef_construction
    index.hnsw.efSearch = settings.hnsw_ef_search
    return index


class Index:
    """Names with their ids and vectors, searchable by cosine (or 3-gram Jaccard for `string`).

    Make one with `build` or `from_table`, grow it with `add` / `add_table`, query it with
    `search`, and keep it with `save` / `load`; `pearl.link` turns its results into a table."""

    def __init__(self, encoder: Encoder, ids: list[str], names: list[str], vectors: np.ndarray | None,
                 settings: IndexSettings, faiss_index=None, stats: dict | None = None):
        self.encoder = encoder
        self.ids = ids
        self.names = names
        self.vectors = vectors
        self.settings = settings
        self._faiss = faiss_index
        self._name_sets: trigrams.NameSets | None = None  # `string`'s 3-gram sets, fitted at the first search
        self._latin_names: list[str] | None = None
        self._actors = None  # with the encoder on Ray: the actors that search, each holding the faiss index
        self.stats = stats or {"rows_read": 0, "blank_skipped": 0, "truncated": 0}

    # ---- building -------------------------------------------------------------------------

    @classmethod
    def build(cls, names: list[str], ids: list[str] | None = None, model: str = "models/pearl", *,
              encoder: Encoder | None = None, settings: IndexSettings = IndexSettings(),
              dedupe: bool = False, prefix: str = "", batch_size: int = 128, device: str | None = None) -> Index:
        """Embed `names` (with `ids`, default their positions) into a new index.

        Duplicate names fail unless `dedupe` keeps each name's first row; duplicate ids always fail."""
        encoder = encoder or load_encoder(model, prefix, batch_size, device)
        index = cls(encoder, [], [], None, settings)
        index.add(names, ids, dedupe=dedupe)
        return index

    @classmethod
    def from_table(cls, table, column: str, id_column: str | None = None, model: str = "models/pearl", *,
                   encoder: Encoder | None = None, settings: IndexSettings = IndexSettings(), dedupe: bool = False,
                   prefix: str = "", batch_size: int = 128, device: str | None = None) -> Index:
        """An index of a polars or pandas DataFrame's `column`; null or blank names are skipped and counted."""
        index = cls(encoder or load_encoder(model, prefix, batch_size, device), [], [], None, settings)
        index.add_table(table, column, id_column, dedupe=dedupe)
        return index

    def add_table(self, table, column: str, id_column: str | None = None, *, dedupe: bool = False) -> int:
        df = as_polars(table)
        cells = text_column(df, column, "the names table")
        # without an id column, a name's id is its row: its table row, counted on across `add`s
        ids = [str(self.stats["rows_read"] + row) for row in cells.rows]
        if id_column is not None:
            require_column(df, id_column, "the names table")
            values = df.get_column(id_column).cast(pl.String, strict=False).to_list()
            ids = [values[row] for row in cells.rows]
            if None in ids:
                row = cells.rows[ids.index(None)]
                raise PearlError(f"row {row} has a name but no {id_column!r}: give every named row an id")
        added = self.add(cells.texts, ids, dedupe=dedupe)
        self.stats["blank_skipped"] += cells.blank
        self.stats["rows_read"] += len(df)
        if cells.blank:
            log.info("skipped %d null or blank names", cells.blank)
        return added

    def add(self, names: list[str], ids: list[str] | None = None, *, dedupe: bool = False) -> int:
        """Append rows; only the new names are embedded. Returns how many were added."""
        if not names:
            raise PearlError("no names to index: every cell is empty")
        given_ids = ids is not None
        if not given_ids:
            ids = [str(self.stats["rows_read"] + i) for i in range(len(names))]
        if len(ids) != len(names):
            raise PearlError(f"{len(names)} names but {len(ids)} ids")
        read = len(names)
        names, ids = self._checked_rows(list(names), [str(i) for i in ids], dedupe)
        if not given_ids:  # dropped duplicates count too: the next default id is past every row read
            self.stats["rows_read"] += read
        if not names:  # every one already indexed, and dedupe asked to skip them
            return 0
        truncated = self.encoder.truncated(names)
        if truncated:
            log.info("names longer than the model reads: %d; it embeds their first %s tokens", truncated,
                     self.encoder.card.max_tokens)
        self.stats["truncated"] += truncated
        if self.encoder.kind != STRING:
            new = self.encoder.encode(names)
            self.vectors = new if self.vectors is None else np.vstack([self.vectors, new])
        self.ids += ids
        self.names += names
        self._name_sets = self._latin_names = None
        self._update_faiss(len(names))
        return len(names)

    def _checked_rows(self, names: list[str], ids: list[str], dedupe: bool) -> tuple[list[str], list[str]]:
        first_id = dict(zip(self.names, self.ids))
        kept_names, kept_ids = [], []
        for name, row_id in zip(names, ids):
            if name in first_id:
                if dedupe:
                    continue
                raise PearlError(f"name {name!r} appears twice (ids {first_id[name]!r} and {row_id!r}): "
                                 "deduplicate the names or pass --dedupe to keep each name's first row")
            first_id[name] = row_id
            kept_names.append(name)
            kept_ids.append(row_id)
        duplicated = _first_duplicate(self.ids + kept_ids)
        if duplicated is not None:
            raise PearlError(f"id {duplicated!r} appears twice: ids must be unique in an index")
        return kept_names, kept_ids

    def _update_faiss(self, added: int) -> None:
        if self.encoder.kind == STRING:
            return
        import faiss

        exact = len(self.names) < self.settings.exact_below
        self._actors = None  # they hold the index as it was
        if self._faiss is None or (not exact and isinstance(self._faiss, faiss.IndexFlatIP)):
            # a new index, or an exact one that grew past the cut: (re)build from the stored vectors
            self._faiss = new_faiss_index(self.vectors.shape[1], exact, self.settings)
            self._faiss.add(np.ascontiguousarray(self.vectors))
        else:
            self._faiss.add(np.ascontiguousarray(self.vectors[-added:]))

    # ---- searching ------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        if self.encoder.kind == STRING:
            return "exhaustive-jaccard"
        import faiss

        return "exact-ip" if isinstance(self._faiss, faiss.IndexFlatIP) else "hnsw-ip"

    def __len__(self) -> int:
        return len(self.names)

    @property
    def latin_names(self) -> list[str]:
        """The names as the string evidence reads them (pearl.latin)."""
        if self._latin_names is None:
            self._latin_names = latin_all(self.names)
        return self._latin_names

    def search(self, queries: list[str], k: int, vectors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (len(queries), min(k, len(self))), best first; ties by row. `vectors`: the queries'
        own, where the caller encoded them already."""
        return self._search(queries, k, vectors)

    def search_strings(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """As `search`, by the 3-gram Jaccard of the names in Latin letters, whatever the encoder: `string`'s own
        search, and the string side of a link's candidates."""
        if self._name_sets is None:
            self._name_sets = trigrams.NameSets(self.latin_names)
        return self._name_sets.top_k(latin_all(queries), min(k, len(self)))

    def search_own_names(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """`search(self.names, k)` from the stored vectors, without embedding the names again."""
        return self._search(self.names, k, self.vectors)

    def _search(self, queries: list[str], k: int, vectors: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if k < 1:
            raise PearlError(f"--k {k}: ask for at least 1 neighbour")
        k = min(k, len(self))
        if not queries:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        if self.encoder.kind == STRING:
            return self.search_strings(queries, k)
        # a few more than k, so that ties at the k-th place can be ordered by row
        wide = min(len(self), k + 8)
        vectors = self.encoder.encode(queries) if vectors is None else vectors
        scores, rows = self._vector_search(vectors, wide)
        scores = np.where(rows < 0, -np.inf, scores)  # a result HNSW did not find (row -1) comes last
        by_row = np.argsort(np.where(rows < 0, len(self), rows), axis=1)  # rank wants the columns in row order
        scores, rows = np.take_along_axis(scores, by_row, axis=1), np.take_along_axis(rows, by_row, axis=1)
        order = rank(scores, k)
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)

    def _vector_search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss's k nearest: with the encoder on Ray, searched by Ray actors that each hold the index."""
        ray = getattr(self.encoder, "ray", None)
        if ray is None:
            return VectorSearch(self._faiss).search(vectors, k)
        if self._actors is None:
            self._actors = ray.actors(VectorSearchActor, (VectorSearch(self._faiss), 1), "index search", SEARCH_ROWS)
        return search_on_ray(self._actors, vectors, k)

    # ---- persistence ----------------------------------------------------------------------

    def manifest(self) -> dict:
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION, "pearl_version": pearl_version(),
            "model": asdict(self.encoder.card), "count": len(self), "dimension": self.encoder.card.dimension,
            "index": {"kind": self.kind, **asdict(self.settings)},
            **self.stats,
        }

    def save(self, path: str | Path) -> None:
        import faiss

        path = check_output_folder(path)
        with atomic_dir(path, replaces=lambda old: (old / MANIFEST).is_file()) as staged:
            columns = {"id": self.ids, "name": self.names}
            schema = {"id": pl.String, "name": pl.String}
            if self.vectors is not None:
                columns["vector"] = self.vectors
                schema["vector"] = pl.Array(pl.Float32, self.vectors.shape[1])
            pl.DataFrame(columns, schema=schema).write_parquet(staged / ROWS, compression="zstd")
            if self._faiss is not None:
                # through a Python file: faiss's own writer prints a failed close to stderr and carries on, so a
                # full disk could leave a truncated index; Python raises the OSError, which atomic_dir words
                with open(staged / FAISS, "wb") as file:
                    faiss.write_index(self._faiss, faiss.PyCallbackIOWriter(file.write))
            (staged / MANIFEST).write_text(json.dumps(self.manifest(), indent=2, ensure_ascii=False) + "\n")
        log.info("index of %d names (%s) → %s", len(self), self.kind, path)

    @classmethod
    def load(cls, path: str | Path, model: str | None = None, *, batch_size: int = 128,
             device: str | None = None, ray: RayEncoding | None = None) -> Index:
        """Load an index and its encoder (on Ray actors with `ray`). `model`, when given, must be the one the index
        was built with."""
        import faiss

        path = Path(path)
        manifest = read_manifest(path)
        card = ModelCard(**manifest["model"])
        encoder = load_encoder(model or card.id, card.prefix, batch_size, device, ray)
        if encoder.card.sha256 != card.sha256 or encoder.card.kind != card.kind:
            raise PearlError(f"index {path} was built with model {card.id!r} (weights {card.sha256[:12]}…), "
                             f"not {model or card.id!r} (weights {encoder.card.sha256[:12]}…): query it with its own "
                             "model, or rebuild it with `pearl index build --model …`")
        try:
            rows = pl.read_parquet(path / ROWS)
            faiss_index = faiss.read_index(str(path / FAISS)) if card.kind != STRING else None
        except Exception as error:
            raise PearlError(f"index {path} is damaged ({type(error).__name__}): rebuild it with `pearl index build`") from None
        vectors = None if card.kind == STRING else rows.get_column("vector").to_numpy().astype(np.float32)
        if len(rows) != manifest["count"] or (faiss_index is not None and faiss_index.ntotal != len(rows)):
            raise PearlError(f"index {path} is damaged (row counts disagree): rebuild it with `pearl index build`")
        settings = IndexSettings(**{key: value for key, value in manifest["index"].items() if key != "kind"})
        if faiss_index is not None and hasattr(faiss_index, "hnsw"):
            faiss_index.hnsw.efSearch = settings.hnsw_ef_search
        stats = {key: manifest[key] for key in STATS}
        return cls(encoder, rows["id"].to_list(), rows["name"].to_list(), vectors, settings, faiss_index, stats)


def read_manifest(path: Path) -> dict:
    file = path / MANIFEST
    if not file.is_file():
        raise PearlError(f"{path} is not a pearl index (no {MANIFEST}): build one with `pearl index build`")
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise PearlError(f"{file} is not valid JSON: rebuild the index with `pearl index build`") from None
    if not isinstance(manifest, dict):
        raise PearlError(f"{file} is not a pearl index manifest (a JSON object): rebuild the index with `pearl index build`")
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        raise PearlError(f"{path} holds format {manifest.get('format')!r} v{manifest.get('format_version')}, "
                         f"this pearl reads {FORMAT!r} v{FORMAT_VERSION}: rebuild it with `pearl index build`")
    if manifest.get("pearl_version") != pearl_version():
        raise PearlError(f"{path} was built by pearl {manifest.get('pearl_version')}, this is pearl {pearl_version()}: "
                         "rebuild it with `pearl index build`")
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise PearlError(f"{file} {problem}: rebuild it with `pearl index build`")
    return manifest


def _manifest_problem(manifest: dict) -> str | None:
    """The first key `Index.load` reads that the manifest lacks, or one in its model or index that it does not
    know, dotted."""
    wanted = {"model": {f.name for f in fields(ModelCard)}, "index": {"kind"} | {f.name for f in fields(IndexSettings)},
              "count": None, **{key: None for key in STATS}}
    for key, inner in wanted.items():
        if key not in manifest:
            return f"has no {key!r}"
        if inner is None:
            continue
        if not isinstance(manifest[key], dict):
            return f"has {key!r} that is not a JSON object"
        if missing := sorted(inner - manifest[key].keys()):
            return f"has no '{key}.{missing[0]}'"
        if unknown := sorted(manifest[key].keys() - inner):
            return f"has an unknown key '{key}.{unknown[0]}'"
    return None


def _first_duplicate(values: list[str]) -> str | None:
    seen = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
