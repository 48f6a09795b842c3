"""Token-level augmentation (paper §3.1): adjacent swap, WordNet synonyms, embedding synonyms."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import numpy as np

from pearl.errors import MissingModelError, PearlError
from pearl.scores import DECIMALS

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def swap_adjacent(phrase: str, rng: np.random.Generator) -> str | None:
    tokens = phrase.split()
    spots = [i for i in range(len(tokens) - 1) if tokens[i] != tokens[i + 1]]
    if not spots:
        return None
    i = spots[rng.integers(len(spots))]
    tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    return " ".join(tokens)


@cache
def _stop_words() -> frozenset[str]:
    # on first use, not at import: spaCy (and torch, through thinc) take 3 s, and the stage checks its inputs first
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _replaceable(token: str) -> bool:
    # Lower-case content words only: WordNet senses of capitalised words ("Times" →
    # "multiplication") would corrupt names rather than paraphrase them.
    return token.isalpha() and token.islower() and token not in _stop_words()


def replace_with_synonyms(
    phrase: str, synonyms: dict[str, list[str]], rng: np.random.Generator, limit: int
) -> list[str]:
    """Up to `limit` distinct variants, each replacing one token by one of its synonyms."""
    tokens = phrase.split()
    options = [(i, s) for i, t in enumerate(tokens) if _replaceable(t) for s in synonyms.get(t, ())]
    variants: list[str] = []
    for j in rng.permutation(len(options)):
        i, synonym = options[j]
        variant = " ".join([*tokens[:i], synonym, *tokens[i + 1:]])
        if variant != phrase and variant not in variants:
            variants.append(variant)
        if len(variants) == limit:
            break
    return variants


def phrase_words(phrases: Iterable[str]) -> set[str]:
    return {t for phrase in phrases for t in phrase.split() if _replaceable(t)}


@cache
def load_wordnet(nltk_data: Path):
    """nltk's WordNet reader over `nltk_data`, or a one-line error saying how to install it."""
    import warnings

    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            # nltk maps WordNet 3.0's synsets onto the loaded version's for the multilingual (OMW) data, which
            # pearl never reads: reading index.sense twice for that took 3.6 s of the 6.1 s load
            return None

    if str(nltk_data) not in nltk.data.path:  # nltk reads corpora only from its data folders
        nltk.data.path.insert(0, str(nltk_data))
    try:
        folder = nltk.data.find("corpora/wordnet", paths=[str(nltk_data)])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The multilingual functions are not available")
            return EnglishWordNet(folder, None)
    except (LookupError, OSError):
        raise PearlError(
            f"WordNet is not in {nltk_data}/corpora/wordnet: run `bash scripts/setup.sh` "
            "(it unpacks Debian's wordnet-base and prepares the folder) or set augment.nltk_data"
        ) from None


def wordnet_synonyms(words: set[str], nltk_data: Path) -> dict[str, list[str]]:
    """Lemma names of every WordNet synset of each word, other than the word itself."""
    wordnet = load_wordnet(nltk_data)
    found = {}
    for word in sorted(words):
        names = dict.fromkeys(
            lemma.name().replace("_", " ")
            for synset in wordnet.synsets(word) for lemma in synset.lemmas()
        )
        names = [n for n in names if n.lower() != word]
        if names:
            found[word] = names
    return found


def _stable_hash(text: str) -> int:
    # gensim seeds each word's initial vector with this; Python's hash() changes per process
    return zlib.crc32(text.encode("utf-8"))


def corpus_tokens(sentences: Iterable[str]) -> list[list[str]]:
    return [_WORD.findall(sentence.lower()) for sentence in sentences]


def train_fasttext(sentences: list[list[str]], seed: int, dim: int, epochs: int, min_count: int):
    """FastText skip-gram vectors on our own corpus: the offline stand-in for pre-trained ones."""
    from gensim.models import FastText

    model = FastText(
        sentences=sentences, vector_size=dim, window=5, min_count=min_count, sg=1, epochs=epochs,
        seed=seed, workers=1, hashfxn=_stable_hash,  # one worker: thread scheduling reorders updates
    )
    return model.wv


def load_vectors(path: Path, limit: int | None):
    """Pre-trained FastText vectors: a .bin model or a .vec text file."""
    from gensim.models import KeyedVectors
    from gensim.models.fasttext import load_facebook_vectors

    if not path.is_file():
        raise MissingModelError(f"{path} is missing: set augment.fasttext_path to a .vec or .bin file, or null")
    if path.suffix == ".bin":
        return load_facebook_vectors(str(path))
    if path.suffix == ".vec":
        return KeyedVectors.load_word2vec_format(str(path), limit=limit)
    raise PearlError(f"augment.fasttext_path={path}: expected a .vec or .bin file")


def embedding_synonyms(vectors, words: set[str], threshold: float, topn: int) -> dict[str, list[str]]:
    """Words whose cosine with each word exceeds `threshold` (the paper's embedding synonyms)."""
    found = {}
    for word in sorted(words):
        if word not in vectors.key_to_index:
            continue
        # rounded, ties in vocabulary order (pearl.scores.DECIMALS): float noise must not reorder them
        scored = [(round(cos, DECIMALS), vectors.key_to_index[w], w) for w, cos in vectors.most_similar(word, topn=topn)]
        close = [w for cos, _, w in sorted(scored, key=lambda s: (-s[0], s[1])) if cos > threshold and w != word]
        if close:
            found[word] = close
    return found
