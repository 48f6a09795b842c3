"""sentence-transformers module classes of an exported PEARL model.

modules.json of an export: 0 `PhraseTransformer` (the averaged backbone, saved in the root like
sentence-transformers' Transformer), 1 `Pooling` (mean), 2 `CharFeatures` (the character
encoder, appends its vector), then `SpellingNgrams` (hashed character 3-grams, when
`average.spelling_weight` > 0) and `Normalize`. PEARL-static's: 0 `PhraseStaticEmbedding` (static
token vectors, saved in the root as sentence-transformers' StaticEmbedding, a layout model2vec reads
too), then `SpellingNgrams` and `Normalize`.

The export ships this file and char_encoder.py in its root as Hugging Face remote code, so a
user with only sentence-transformers loads it with `trust_remote_code=True`. That is why the
two files import each other relatively and nothing beyond torch, sentence-transformers (with its
own dependency scikit-learn) and the standard library; `pearl.load` maps the same refs to this installed copy and runs no shipped code.
"""

from __future__ import annotations

from typing import Any

import itertools
import math

import torch
from sentence_transformers.base.modules import Module, Transformer
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from sklearn.feature_extraction.text import HashingVectorizer

from .char_encoder import CharEncoder, char_ids, combine

CHAR_IDS = "pearl_char_ids"
TEXTS = "pearl_texts"  # the texts without the prompt, for SpellingNgrams (a list: sentence-transformers moves only tensors)


class PhraseTransformer(Transformer):
    """The Transformer input module, also handing each text's bytes to `CharFeatures`.

    The bytes come from the texts without the prompt: the character encoder never saw
    prefixes in training.
    """

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, Any]:
        features = super().preprocess(inputs, prompt=prompt, **kwargs)
        if inputs and all(isinstance(text, str) for text in inputs):
            features[CHAR_IDS] = char_ids(list(inputs))
            features[TEXTS] = list(inputs)
        return features

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        ours = {key: features.pop(key) for key in (CHAR_IDS, TEXTS) if key in features}  # not inputs of the HF model
        features = super().forward(features, **kwargs)
        features.update(ours)
        return features


class PhraseStaticEmbedding(StaticEmbedding):
    """sentence-transformers' StaticEmbedding (the mean of the text's token vectors), also handing the texts to
    `SpellingNgrams`. Unknown tokens are left out, as model2vec leaves them: one shared [UNK] vector would make
    every two texts of unknown symbols alike; a text of nothing else gets a zero vector."""

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, Any]:
        texts = self._prepend_prompt(inputs, prompt) if prompt else inputs
        unknown = self.tokenizer.token_to_id(getattr(self.tokenizer.model, "unk_token", None) or "")
        ids = [[i for i in encoding.ids if i != unknown]
               for encoding in self.tokenizer.encode_batch(texts, add_special_tokens=False)]
        features = {"input_ids": torch.tensor([i for row in ids for i in row], dtype=torch.long),
                    "offsets": torch.tensor([0, *itertools.accumulate(len(row) for row in ids[:-1])], dtype=torch.long)}
        if inputs and all(isinstance(text, str) for text in inputs):
            features[TEXTS] = list(inputs)
        return features

    @classmethod
    def load(cls, model_name_or_path: str, *args, **kwargs) -> PhraseStaticEmbedding:
        plain = StaticEmbedding.load(model_name_or_path, *args, **kwargs)  # which builds a StaticEmbedding, not cls
        return cls(plain.tokenizer, embedding_weights=plain.embedding.weight.detach())


class CharFeatures(Module):
    """Concatenates the character encoder's vector to `sentence_embedding` (as pearl.model.char_encoder.combine)."""

    config_keys = ["input_dim", "dim", "weight"]

    def __init__(self, input_dim: int, dim: int, weight: float):
        super().__init__()
        self.input_dim = input_dim  # the pooled backbone vector's size
        self.dim = dim
        self.weight = weight
        self.encoder = CharEncoder(dim)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        if CHAR_IDS not in features:
            raise ValueError("CharFeatures needs the PhraseTransformer input module before it (text inputs only)")
        pooled = features["sentence_embedding"]
        features["sentence_embedding"] = combine(pooled, self.encoder(features[CHAR_IDS].to(pooled.device)), self.weight)
        return features

    def get_embedding_dimension(self) -> int:
        return self.input_dim + self.dim

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None,
             revision=None, local_files_only: bool = False, **kwargs) -> CharFeatures:
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder,
               "revision": revision, "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path, **hub))
        cls.load_torch_weights(model_name_or_path, model=module, **hub)
        return module


class SpellingNgrams(Module):
    """[√(1 − w) · u/|u|, √w · g/|g|], g the counts of the text's character 3-grams (lower-cased, within words,
    hashed into `n_features` buckets): two texts' dot product is (1 − w) · the cosine of the vectors before
    it + w · the cosine of their 3-gram counts, so spelling gets a fixed share of every score. No weights:
    the hashing is fixed."""

    config_keys = ["input_dim", "n_features", "weight"]

    def __init__(self, input_dim: int, n_features: int, weight: float):
        super().__init__()
        if not 0 < weight < 1:
            raise ValueError(f"SpellingNgrams weight must be in (0, 1), not {weight}")
        self.input_dim, self.n_features, self.weight = input_dim, n_features, weight
        self.ngrams = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3), n_features=n_features,
                                        alternate_sign=False, norm="l2", lowercase=True)

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        if TEXTS not in features:
            raise ValueError("SpellingNgrams needs the PhraseTransformer input module before it (text inputs only)")
        vectors = features["sentence_embedding"]
        grams = torch.from_numpy(self.ngrams.transform(features[TEXTS]).toarray()).to(vectors.device, vectors.dtype)
        features["sentence_embedding"] = torch.cat([math.sqrt(1 - self.weight) * torch.nn.functional.normalize(vectors, dim=-1),
                                                    math.sqrt(self.weight) * grams], dim=-1)
        return features

    def get_embedding_dimension(self) -> int:
        return self.input_dim + self.n_features

    def save(self, output_path: str, *args, **kwargs) -> None:
        self.save_config(output_path)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None,
             revision=None, local_files_only: bool = False, **kwargs) -> SpellingNgrams:
        return cls(**cls.load_config(model_name_or_path, subfolder=subfolder, token=token, cache_folder=cache_folder,
                                     revision=revision, local_files_only=local_files_only))
