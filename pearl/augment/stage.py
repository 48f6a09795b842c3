"""The augment stage: typed phrases → variants.parquet (phrase, level, method, variant)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
from tqdm import tqdm

from pearl.artifacts import SENTENCES_SCHEMA, TYPED_PHRASES_SCHEMA, read_artifact, write_json, write_meta, write_parquet
from pearl.augment import phrase_level, token_level
from pearl.augment.char_level import CharAugmenter
from pearl.device import resolve_device
from pearl.log import Stopwatch, get_logger
from pearl.params import Params
from pearl.spacy_models import describe, load_spacy

PHRASES = Path("data/typed/phrases.parquet")
SENTENCES = Path("data/corpus/sentences.parquet")
OUTPUT = Path("data/augment/variants.parquet")
METRICS = Path("metrics/augment.json")
LEVELS = ("char", "token", "phrase")

log = get_logger("augment")


def _synonym_sources(params: Params, phrases: list[str], sentences: Path) -> tuple[dict, dict, str]:
    a = params.augment
    words = token_level.phrase_words(phrases)
    wordnet = token_level.wordnet_synonyms(words, Path(a.nltk_data))
    if a.fasttext_path:
        vectors = token_level.load_vectors(Path(a.fasttext_path), a.fasttext_limit)
        source = f"pre-trained FastText vectors {a.fasttext_path}"
    else:
        texts = read_artifact(sentences, SENTENCES_SCHEMA)["text"].to_list()
        clock = Stopwatch()
        vectors = token_level.train_fasttext(
            token_level.corpus_tokens(texts), params.base.seed, a.fasttext_dim, a.fasttext_epochs, a.fasttext_min_count
        )
        clock.report(log, len(texts), "fasttext_sentences")
        source = (f"FastText (gensim, skip-gram, dim {a.fasttext_dim}, {a.fasttext_epochs} epochs) trained on "
                  f"our {len(texts)} corpus sentences: an offline stand-in for pre-trained vectors")
    embedding = token_level.embedding_synonyms(vectors, words, a.synonym_threshold, a.synonym_topn)
    return wordnet, embedding, source


def _paraphrases(params: Params, phrases: list[str]) -> tuple[dict[str, dict[str, list[str]]], str]:
    a = params.augment
    device = resolve_device(params.base.device)
    if a.phrase_backend == "parrot":
        parrot = phrase_level.ParrotParaphraser(a, device)
        return {"parrot": parrot.paraphrase(phrases, a.batch_size)}, (
            f"Parrot {a.parrot_model}, adequacy >= {a.parrot_adequacy_threshold} ({a.parrot_adequacy_model}), "
            f"fluency >= {a.parrot_fluency_threshold} ({a.parrot_fluency_model})")
    from pearl.embedder import Embedder

    embedder = Embedder(params.model.backbone, params.model.prefix, a.batch_size, 64, device, param="model.backbone")
    nlp = load_spacy(params.parse.spacy_model, keep=("tok2vec", "parser"))
    heads = phrase_level.head_words(phrases, nlp, params.parse.batch_size)
    mined = phrase_level.mined_paraphrases(phrases, heads, embedder.embed(phrases), a.mined_min_cos,
                                           a.max_variants_per_method)
    abbreviations = {p: forms for p in phrases if (forms := phrase_level.abbreviations(p))}
    lemmas = phrase_level.wordnet_paraphrases(phrases, token_level.load_wordnet(Path(a.nltk_data)))
    description = ("offline substitute for Parrot (no generative paraphraser offline): abbreviation and "
                   "acronym forms, synonyms of single-sense multiword WordNet 3.0 lemmas, and corpus phrases "
                   f"with the same head ({describe(nlp)}) and "
                   f"{params.model.backbone} cosine >= {a.mined_min_cos}")
    return {"abbreviation": abbreviations, "wordnet_lemma": lemmas, "mined": mined}, description


def build_variants(params: Params, phrases: list[str], sentences: Path) -> tuple[pl.DataFrame, dict]:
    a = params.augment
    char_seed, token_seed = np.random.SeedSequence(params.base.seed).spawn(2)  # independent streams
    rng = np.random.default_rng(token_seed)
    rows: list[tuple[str, str, str, str]] = []
    chars = CharAugmenter(char_seed)
    for phrase in tqdm(phrases, desc="char+token", unit=" phrase", mininterval=2):
        rows += [(phrase, "char", method, v) for method, v in chars.variants(phrase).items()]
        swapped = token_level.swap_adjacent(phrase, rng)
        if swapped:
            rows.append((phrase, "token", "token_swap", swapped))
    wordnet, embedding, vector_source = _synonym_sources(params, phrases, sentences)
    for method, synonyms in (("wordnet", wordnet), ("embedding_synonym", embedding)):
        for phrase in phrases:
            for v in token_level.replace_with_synonyms(phrase, synonyms, rng, a.max_variants_per_method):
                rows.append((phrase, "token", method, v))
    paraphrases, phrase_source = _paraphrases(params, phrases)
    for method, found in paraphrases.items():
        for phrase in phrases:
            for v in found.get(phrase, [])[: a.max_variants_per_method]:
                rows.append((phrase, "phrase", method, v))
    variants = (
        pl.DataFrame(rows, schema={"phrase": pl.String, "level": pl.String, "method": pl.String, "variant": pl.String}, orient="row")
        .with_columns(pl.col("variant").str.strip_chars())
        .filter((pl.col("variant") != "") & (pl.col("variant") != pl.col("phrase")))
        .unique(maintain_order=True)
    )
    sources = {"synonym_vectors": vector_source, "wordnet": "WordNet 3.0 through nltk", "phrase_level": phrase_source}
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
        output: Path = OUTPUT, metrics: Path = METRICS) -> dict:
    phrases = read_artifact(source, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    clock = Stopwatch()
    variants, sources = build_variants(params, phrases, sentences)
    timing = clock.report(log, len(phrases), "phrases")
    numbers = {"phrases": len(phrases), "variants": variants.height, **coverage(variants, len(phrases))}
    write_meta(output, {"stage": "augment", "seed": params.base.seed, **sources, **numbers})
    write_parquet(variants, output)
    write_json({**numbers, **timing}, metrics)
    log.info("%d variants: %s", variants.height, numbers)
    return numbers
