"""PEARL-static's vectors without torch: model2vec's own numpy inference, then the export's 3-gram block.

The verbs encode a PEARL-static export with this, so that the core install (no torch, transformers or
sentence-transformers) indexes, links, joins, clusters and embeds with it, and so that a command does not pay
torch's import for a model that runs no transformer. It reads the same files as pearl.model.st_modules'
PhraseStaticEmbedding → SpellingNgrams → Normalize and gives their vectors to float rounding (tests/test_static.py),
and its weights' sha256 is the one sentence-transformers' state_dict gives (an index built either way accepts
queries from the other).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from pearl.errors import PearlError
from pearl.model import CONFIG

STATE_NAME = "0.embedding.weight"  # the token vectors' name in the export's sentence-transformers state_dict
NORM_EPS = 1e-12  # torch.nn.functional.normalize's, which the export's modules use


def is_static_export(folder: str | Path) -> bool:
    """A PEARL export whose first module is PEARL-static's token vectors (pearl.model.export.check_export passed)."""
    from pearl.model.export import OUR_REFS

    modules = json.loads((Path(folder) / "modules.json").read_text(encoding="utf-8"))
    return OUR_REFS.get(str(modules[0].get("type"))) == "PhraseStaticEmbedding"


class StaticEmbedder:
    """What pearl.embedder.Embedder gives for a PEARL-static export (L2-normalised float32 rows, duplicates
    encoded once, batches of `batch_size` texts), computed by model2vec and scikit-learn."""

    static = True  # reads whole texts: no token limit, nothing truncated

    def __init__(self, folder: str | Path, prefix: str, batch_size: int):
        from model2vec import StaticModel

        root = Path(folder)
        # normalize=False, max_length=None: the mean of all the text's known tokens, as the export's module takes it
        self.model = StaticModel.from_pretrained(root, normalize=False, max_length=None)
        config = json.loads((root / CONFIG).read_text(encoding="utf-8"))
        self.spelling_weight = float(config.get("spelling_weight") or 0.0)
        buckets = int(config["spelling_features"]) if self.spelling_weight else 0
        self.spelling = _spelling_vectorizer(buckets) if buckets else None
        self.prompt = _default_prompt(root)
        self.prefix = prefix
        self.batch_size = batch_size
        self.dimension = self.model.dim + buckets
        if self.dimension != config.get("dimension", self.dimension):
            raise PearlError(f"{root / CONFIG}: dimension {config['dimension']}, but its token vectors and 3-gram "
                             f"block make {self.dimension}; the export is damaged: run `dvc repro static`")

    def weights_sha256(self) -> str:
        """pearl.index.encoder's digest of the sentence-transformers state_dict, from the same bytes."""
        digest = hashlib.sha256(STATE_NAME.encode())
        digest.update(np.ascontiguousarray(self.model.embedding, dtype=np.float32).tobytes())
        return digest.hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        vectors = np.concatenate([self._encode([unique[i] for i in batch]) for batch in self.batches(unique)])
        position = {text: i for i, text in enumerate(unique)}
        return vectors[[position[text] for text in texts]]

    def batches(self, texts: list[str]) -> list[np.ndarray]:
        return [np.arange(start, min(start + self.batch_size, len(texts)))
                for start in range(0, len(texts), self.batch_size)]

    def _encode(self, texts: list[str]) -> np.ndarray:
        own = [self.prefix + text for text in texts]
        tokens = self.model.encode([self.prompt + text for text in own], use_multiprocessing=False,
                                   batch_size=len(own)).astype(np.float32, copy=False)
        if self.spelling is None:
            return _normalised(tokens)
        # the 3-grams of the texts without the model's prompt, as SpellingNgrams reads them
        grams = self.spelling.transform(own).toarray().astype(np.float32)
        return _normalised(np.hstack([math.sqrt(1 - self.spelling_weight) * _normalised(tokens),
                                      math.sqrt(self.spelling_weight) * grams]))


def _spelling_vectorizer(n_features: int):
    """pearl.model.st_modules.SpellingNgrams' hashing, which is fixed (no weights)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3), n_features=n_features, alternate_sign=False,
                             norm="l2", lowercase=True)


def _default_prompt(root: Path) -> str:
    """The prompt sentence-transformers adds to every text: the export's default prompt (PEARL's prefix), or none."""
    settings = root / "config_sentence_transformers.json"
    if not settings.is_file():
        return ""
    config = json.loads(settings.read_text(encoding="utf-8"))
    name = config.get("default_prompt_name")
    return (config.get("prompts") or {}).get(name, "") if name else ""


def _normalised(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), NORM_EPS)
