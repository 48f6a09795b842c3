"""The spelling block (`average.spelling_weight`, pearl.model.st_modules.SpellingNgrams) screened on the tune
suite only: hashed character 3-grams beside an encoder's vector at weight w, so that the dot product of two
phrases is (1 − w) · their cosine + w · the cosine of their 3-gram counts.

The block has no weights, so any encoder can take it: this screens untuned ones, each embedding every text
once for all the weights and gates. Prints a Markdown table; --out also writes it.

    python benchmarks/spelling_screen.py                         # all-MiniLM-L6-v2, w in 0 … 0.5
    python benchmarks/spelling_screen.py --models sentence-transformers/all-mpnet-base-v2 --weights 0,0.2
    python benchmarks/spelling_screen.py --weights 0,0.2,0.4 --gates none,split_words   # a per-text share
    python benchmarks/spelling_screen.py --weights 0.2 --gates none,idf               # rare 3-grams weigh more
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfTransformer

from pearl.artifacts import PHRASES_SCHEMA, read_artifact
from pearl.bench.run import build_context, run_task
from pearl.bench.task_names import TUNE_TASKS
from pearl.embedder import Embedder
from pearl.log import configure_logging
from pearl.model.st_modules import TEXTS, SpellingNgrams
from pearl.params import load_params
from pearl.report.summary import TITLES, with_means

# "split_words" scales each text's share of spelling by the share of its words that the encoder's tokenizer cuts
# into pieces: words held whole have a learned vector, names and codes spelled from pieces are where 3-grams add.
# "idf" keeps the fixed share but weighs each 3-gram by its inverse document frequency over the corpus's phrases
# (sublinear counts): grams every phrase shares ("ing", "the") count less than a name's rare ones.
# Screened here only; the export has the fixed block ("none").
# "common_words" gives each text's share of spelling in proportion to its words that are not everyday English
# (not among wordfreq's most frequent words with a WordNet sense that is not a proper name): the rest of the
# block's unit length goes to a direction of the text's own, pseudo-random, so that two texts of everyday
# words score by their cosine alone, with no change of scale between pairs. "common_words_axis" puts that rest on
# one axis all texts share instead (no noise, but two texts of everyday words then score w above a pair of
# uncommon ones that spell nothing alike).
GATES = ("none", "split_words", "idf", "common_words", "common_words_axis")
WORD = re.compile(r"\w+")


class CachedEmbedder:
    """An encoder's normalised vectors, each text encoded once across the screen's weights."""

    def __init__(self, embedder: Embedder):
        # an export's own block is taken out: each row adds the block it screens to the trained vectors alone
        for index in reversed([i for i, module in enumerate(embedder.model) if isinstance(module, SpellingNgrams)]):
            del embedder.model[index]
        self.embedder = embedder
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        new = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if new:
            self.cache.update(zip(new, self.embedder.embed(new)))
        return np.stack([self.cache[text] for text in texts]) if texts else self.embedder.embed([])


class WithSpelling:
    """An encoder's vectors passed through the export's SpellingNgrams module (w = 0: the vectors alone)."""

    def __init__(self, dense: CachedEmbedder, weight: float, n_features: int, gate: str,
                 idf: TfidfTransformer | None = None, common: frozenset[str] = frozenset()):
        self.dense, self.weight, self.n_features, self.gate, self.idf = dense, weight, n_features, gate, idf
        self.common = common

    def embed(self, texts: list[str]) -> np.ndarray:
        dense = self.dense.embed(texts)
        if self.weight == 0:
            return dense
        block = SpellingNgrams(dense.shape[1], self.n_features, self.weight)
        if self.gate == "none":
            return block({"sentence_embedding": torch.from_numpy(dense), TEXTS: texts})["sentence_embedding"].numpy()
        if self.gate == "split_words":
            share = self.weight * split_share(self.dense.embedder.model.tokenizer, texts)[:, None]
            vectors = np.hstack([np.sqrt(1 - share) * dense, np.sqrt(share) * block.ngrams.transform(texts).toarray()])
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.hstack([np.sqrt(1 - self.weight) * dense, np.sqrt(self.weight) * self.spelling(block, texts)])

    def spelling(self, block: SpellingNgrams, texts: list[str]) -> np.ndarray:
        """The unit-length block of a gate that keeps spelling's fixed share w of every score."""
        if self.gate == "idf":
            block.ngrams.set_params(norm=None)
            return self.idf.transform(block.ngrams.transform(texts)).toarray()
        share = uncommon_share(texts, self.common)[:, None]
        grams, rest = share * block.ngrams.transform(texts).toarray(), np.sqrt(1 - share ** 2)
        if self.gate == "common_words":
            return grams + rest * private_directions(texts, grams.shape[1])
        return np.hstack([grams, rest])


def split_share(tokenizer, texts: list[str]) -> np.ndarray:
    """Per text, the share of its words that `tokenizer` cuts into more than one piece (1 without a word)."""
    words = [WORD.findall(text) for text in texts]
    flat = [word for text_words in words for word in text_words]
    pieces = tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else []
    return word_share(words, (len(word_pieces) > 1 for word_pieces in pieces))


def uncommon_share(texts: list[str], common: frozenset[str]) -> np.ndarray:
    """Per text, the share of its words (lower-cased) not in `common` (1 without a word)."""
    words = [WORD.findall(text.lower()) for text in texts]
    return word_share(words, (word not in common for text_words in words for word in text_words))


def word_share(words: list[list[str]], marked: Iterable[bool]) -> np.ndarray:
    """Per text, the share of its words marked (`marked`: one flag per word, in order; 1 without a word)."""
    flags = iter(marked)
    return np.array([sum(next(flags) for _ in text_words) / len(text_words) if text_words else 1.0
                     for text_words in words])


def private_directions(texts: list[str], dim: int) -> np.ndarray:
    """A unit vector per text, pseudo-random but fixed by the text after case and space folding."""
    out = np.empty((len(texts), dim))
    for i, text in enumerate(texts):
        rng = np.random.default_rng(zlib.crc32(" ".join(text.casefold().split()).encode()))
        out[i] = rng.standard_normal(dim)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def common_words(top: int) -> frozenset[str]:
    """wordfreq's `top` most frequent English words that have a WordNet sense other than a proper name's."""
    import wordfreq
    from nltk.corpus import wordnet as wn
    return frozenset(word for word in wordfreq.top_n_list("en", top)
                     if any(not synset.instance_hypernyms() for synset in wn.synsets(word)))


def fit_idf(phrases: Path, n_features: int) -> TfidfTransformer:
    """IDF of the hashed 3-grams over the corpus's phrases (the parse stage's output)."""
    texts = read_artifact(phrases, PHRASES_SCHEMA)["phrase"].to_list()
    counts = SpellingNgrams(1, n_features, 0.5).ngrams.set_params(norm=None).transform(texts)
    return TfidfTransformer(sublinear_tf=True).fit(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="sentence-transformers/all-MiniLM-L6-v2", help="comma-separated encoders")
    parser.add_argument("--weights", default="0,0.1,0.2,0.3,0.5", help="comma-separated w in [0, 1)")
    parser.add_argument("--n-features", type=int, default=1024, help="hashed 3-gram buckets")
    parser.add_argument("--gates", default="none", help=f"comma-separated gates ({', '.join(GATES)})")
    parser.add_argument("--common-top", type=int, default=30000, help="the common_words gate's wordfreq list length")
    parser.add_argument("--phrases", type=Path, default=Path("data/phrases/phrases.parquet"), help="the idf gate's corpus")
    parser.add_argument("--tasks", default=",".join(TUNE_TASKS), help="comma-separated tune tasks")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    if any(not 0 <= w < 1 for w in weights):
        parser.error("--weights: each w must be in [0, 1)")
    gates = args.gates.split(",")
    if any(gate not in GATES for gate in gates):
        parser.error(f"--gates: each gate must be one of {', '.join(GATES)}")
    tasks = args.tasks.split(",")
    unknown = sorted(set(tasks) - set(TUNE_TASKS))
    if unknown:
        parser.error(f"--tasks: {unknown[0]!r} is not a tune task ({', '.join(TUNE_TASKS)})")
    configure_logging(False)
    params = load_params("params.yaml")
    idf = fit_idf(args.phrases, args.n_features) if "idf" in gates else None
    common = common_words(args.common_top) if {"common_words", "common_words_axis"} & set(gates) else frozenset()
    columns = [*tasks, "tune", "tune_names"]
    lines = ["| model | w | gate | " + " | ".join(TITLES[c] for c in columns) + " |", "|---" * (len(columns) + 3) + "|"]
    print(*lines, sep="\n")
    for model in args.models.split(","):
        context = build_context(params, model, "")
        dense = CachedEmbedder(context.load_embedder())
        # w = 0 is the encoder alone, whatever the gate
        for weight, gate in [(w, g) for w in weights for g in (["none"] if w == 0 else gates)]:
            channel = WithSpelling(dense, weight, args.n_features, gate, idf, common)
            ctx = dataclasses.replace(context, load_embedder=lambda channel=channel: channel)
            scores = with_means({task: run_task(ctx, task)["score"] for task in tasks})
            lines.append(f"| {model.split('/')[-1]} | {weight:g} | {gate if weight else '–'} | "
                         + " | ".join(f"{scores[c]:.2f}" if c in scores else "–" for c in columns) + " |")
            print(lines[-1], flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
