"""Phrase-level augmentation (paper §3.1): paraphrases from Parrot, or an offline substitute.

Parrot (`prithivida/parrot_paraphraser_on_T5`) is a T5 fine-tuned to rewrite its input; it is
not reachable offline, so the default builds paraphrases without a generative model:

- `abbreviation`: forms a name is also written in — without a leading article
  ("New York Times"), its acronym ("NYT"), and its leading words abbreviated ("NY Times");
- `mined`: other phrases of the corpus with the same head word whose backbone embedding is
  close (cosine ≥ augment.mined_min_cos), e.g. "the capital city" for "the capital".
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from rapidfuzz.distance import Levenshtein

from pearl.errors import PearlError

_ARTICLES = {"the", "a", "an"}
_FUNCTION = {"of", "the", "and", "for", "in", "on", "at", "to", "a", "an", "&"}


def _normal(text: str) -> str:
    return " ".join("".join(ch for ch in text.lower() if ch.isalnum() or ch.isspace()).split())


def abbreviations(phrase: str) -> list[str]:
    """Article-less form, acronym and partial abbreviation of a capitalised multi-word name."""
    tokens = phrase.split()
    if tokens and tokens[0].lower() in _ARTICLES and len(tokens) > 1:
        tokens = tokens[1:]
    forms = [" ".join(tokens)]
    content = [t for t in tokens if t.lower() not in _FUNCTION]
    if len(content) >= 2 and all(t[0].isupper() and t[0].isalpha() for t in content):
        forms.append("".join(t[0] for t in content))  # New York Times → NYT
        if len(content) >= 3:
            forms.append("".join(t[0] for t in content[:-1]) + " " + content[-1])  # NY Times
    return [f for f in dict.fromkeys(forms) if f and _normal(f) != _normal(phrase)]


def head_word(phrase: str) -> str:
    """The last word, lower-cased: the head of most English noun phrases."""
    words = [w for w in _normal(phrase).split() if w.isalpha()]
    return words[-1] if words else ""


def mined_paraphrases(
    phrases: list[str], vectors: np.ndarray, min_cos: float, limit: int
) -> dict[str, list[str]]:
    """For each phrase, up to `limit` same-head phrases with cosine ≥ min_cos, closest first.

    `vectors` are L2-normalised embeddings of `phrases`, row for row.
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for i, phrase in enumerate(phrases):
        head = head_word(phrase)
        if head:
            groups[head].append(i)
    found: dict[str, list[str]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        block = vectors[members]
        similarity = block @ block.T
        np.fill_diagonal(similarity, -1.0)
        for row, i in enumerate(members):
            order = np.argsort(-similarity[row], kind="stable")[:limit]
            close = [phrases[members[j]] for j in order
                     if similarity[row, j] >= min_cos and _normal(phrases[members[j]]) != _normal(phrases[i])]
            if close:
                found[phrases[i]] = close
    return found


def keep_paraphrase(phrase: str, candidate: str, max_similarity: float) -> bool:
    """Parrot-style filters: not the input again, not a near-copy, not runaway length."""
    a, b = _normal(phrase), _normal(candidate)
    if not b or a == b:
        return False
    if Levenshtein.normalized_similarity(a, b) > max_similarity:
        return False
    return len(candidate) <= 3 * max(len(phrase), 10)


class ParrotParaphraser:
    """A T5 paraphraser (Parrot by default) through transformers' generate, batched."""

    PREFIX = "paraphrase: "

    def __init__(self, model: str, device: str, beams: int, returns: int, max_similarity: float):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForSeq2SeqLM.from_pretrained(model).to(device).eval()
        except Exception as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise PearlError(
                f"augment.parrot_model={model!r} could not be loaded ({first}); "
                "set augment.phrase_backend=offline to use the offline substitute"
            ) from None
        self.device, self.beams, self.returns, self.max_similarity = device, beams, returns, max_similarity

    def paraphrase(self, phrases: list[str], batch_size: int) -> dict[str, list[str]]:
        import torch

        found: dict[str, list[str]] = {}
        for start in range(0, len(phrases), batch_size):
            batch = phrases[start:start + batch_size]
            inputs = self.tokenizer([self.PREFIX + p for p in batch], return_tensors="pt", padding=True,
                                    truncation=True, max_length=64).to(self.device)
            with torch.inference_mode():
                output = self.model.generate(
                    **inputs, num_beams=self.beams, num_return_sequences=self.returns, max_new_tokens=32,
                    do_sample=False,
                )
            texts = self.tokenizer.batch_decode(output, skip_special_tokens=True)
            for k, phrase in enumerate(batch):
                candidates = [t.strip() for t in texts[k * self.returns:(k + 1) * self.returns]]
                kept = [c for c in dict.fromkeys(candidates) if keep_paraphrase(phrase, c, self.max_similarity)]
                if kept:
                    found[phrase] = kept
        return found
