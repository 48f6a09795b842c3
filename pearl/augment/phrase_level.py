"""Phrase-level augmentation (paper §3.1): paraphrases from Parrot, or an offline substitute.

Parrot (`prithivida/parrot_paraphraser_on_T5`) is a T5 fine-tuned to rewrite its input; it is
not reachable offline, so the default builds paraphrases without a generative model:

- `abbreviation`: forms a name is also written in — without a leading article
  ("New York Times"), its acronym ("NYT"), and its leading words abbreviated ("NY Times");
- `wordnet_lemma`: for a phrase that is a multiword WordNet lemma of a single synset ("World
  War II"), the synset's other lemmas ("Second World War"). Derivational forms are left out:
  they change what is meant ("the Nobel Prize" → "Nobelist", "South Africa" → "South African");
- `mined`: other phrases of the corpus with the same head word (the root of the phrase's own
  dependency parse) whose backbone embedding is close (cosine ≥ augment.mined_min_cos), e.g.
  "the largest city" for "the biggest city".
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from rapidfuzz.distance import Levenshtein

from pearl.model_ids import load_failure, resolve_model
from pearl.params import AugmentParams
from pearl.scores import at_least, rank, rounded

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


def wordnet_paraphrases(phrases: list[str], wordnet) -> dict[str, list[str]]:
    """Synonyms of multiword WordNet lemmas. A lemma of several synsets is skipped: its synonyms
    would mix senses, the failure the token level shows ("the sum" → "the heart and soul")."""
    found = {}
    for phrase in phrases:
        tokens = phrase.split()
        if tokens and tokens[0].lower() in _ARTICLES:
            tokens = tokens[1:]
        if len(tokens) < 2:
            continue
        key = "_".join(tokens).lower()
        synsets = wordnet.synsets(key)
        if len(synsets) != 1:
            continue
        names = dict.fromkeys(lemma.name().replace("_", " ") for lemma in synsets[0].lemmas())
        close = [name for name in names if _normal(name) != _normal(" ".join(tokens))]
        if close:
            found[phrase] = close
    return found


def head_words(phrases: list[str], nlp, batch_size: int) -> list[str]:
    """Each phrase's head: the root of its own dependency parse, lower-cased ("" if not a word).
    The last word would give "france" for "the capital of France"; the parse gives "capital"."""
    heads = []
    for doc in nlp.pipe(phrases, batch_size=batch_size):
        root = doc[:].root if len(doc) else None
        heads.append(root.text.lower() if root is not None and root.is_alpha else "")
    return heads


def mined_paraphrases(
    phrases: list[str], heads: list[str], vectors: np.ndarray, min_cos: float, limit: int
) -> dict[str, list[str]]:
    """For each phrase, up to `limit` same-head phrases with cosine ≥ min_cos, closest first.

    `heads` and the L2-normalised `vectors` are of `phrases`, row for row. Cosines within
    pearl.scores.TIE_TOLERANCE are one (the earlier phrase first): two casings of a phrase have one
    vector in an uncased backbone, and float noise (BLAS threads, the Ray engine's nodes) must not
    choose between them.
    """
    groups: dict[str, list[int]] = defaultdict(list)
    for i, head in enumerate(heads):
        if head:
            groups[head].append(i)
    found: dict[str, list[str]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        block = vectors[members]
        similarity = rounded(block @ block.T)
        np.fill_diagonal(similarity, -np.inf)
        ranked = rank(similarity, min(limit, len(members) - 1))
        for row, i in enumerate(members):
            close = [phrases[members[j]] for j in ranked[row]
                     if at_least(similarity[row, j], min_cos) and _normal(phrases[members[j]]) != _normal(phrases[i])]
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


def _load(kind: str, param: str, model: str):
    """A tokenizer and model from an HF id or directory, or a one-line error naming the param."""
    import transformers

    source = resolve_model(model, f"augment.{param}")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source)
        return tokenizer, getattr(transformers, kind).from_pretrained(source)
    except Exception as error:
        raise load_failure(f"augment.{param}", model, error,
                           "; or set augment.phrase_backend=offline to use the offline substitute") from None


class ParrotParaphraser:
    """Parrot (T5 paraphraser) through transformers' generate, batched, with Parrot's filters:
    adequacy (its NLI model's entailment-vs-contradiction probability for input → paraphrase),
    fluency (its acceptability model's "good" probability), both at least their thresholds;
    the survivors are ranked most diverse first (Levenshtein distance to the input), Parrot's
    default ranker. Our own filters drop near-copies and runaway lengths before them."""

    PREFIX = "paraphrase: "

    def __init__(self, settings: AugmentParams, device: str):
        self.tokenizer, self.model = _load("AutoModelForSeq2SeqLM", "parrot_model", settings.parrot_model)
        self.adequacy_tokenizer, self.adequacy_model = _load(
            "AutoModelForSequenceClassification", "parrot_adequacy_model", settings.parrot_adequacy_model)
        self.fluency_tokenizer, self.fluency_model = _load(
            "AutoModelForSequenceClassification", "parrot_fluency_model", settings.parrot_fluency_model)
        for model in (self.model, self.adequacy_model, self.fluency_model):
            model.to(device).eval()
        self.device, self.settings = device, settings

    def _logits(self, tokenizer, model, *texts: list[str]):
        import torch

        inputs = tokenizer(*texts, return_tensors="pt", padding=True, truncation=True, max_length=128).to(self.device)
        with torch.inference_mode():
            return model(**inputs).logits.float()

    def adequacy(self, phrases: list[str], paraphrases: list[str]) -> list[float]:
        """P(entailment) against P(contradiction), the NLI model's labels 2 and 0 (as Parrot reads them)."""
        logits = self._logits(self.adequacy_tokenizer, self.adequacy_model, phrases, paraphrases)
        return logits[:, [0, 2]].softmax(dim=1)[:, 1].tolist()

    def fluency(self, paraphrases: list[str]) -> list[float]:
        """P(label 1 = fluent) of Parrot's fluency classifier, whose inputs start with "Sentence: "."""
        logits = self._logits(self.fluency_tokenizer, self.fluency_model, ["Sentence: " + p for p in paraphrases])
        return logits.softmax(dim=1)[:, 1].tolist()

    def paraphrase(self, phrases: list[str], batch_size: int) -> dict[str, list[str]]:
        import torch

        s = self.settings
        found: dict[str, list[str]] = {}
        for start in range(0, len(phrases), batch_size):
            batch = phrases[start:start + batch_size]
            inputs = self.tokenizer([self.PREFIX + p for p in batch], return_tensors="pt", padding=True,
                                    truncation=True, max_length=64).to(self.device)
            with torch.inference_mode():
                output = self.model.generate(
                    **inputs, num_beams=s.parrot_beams, num_return_sequences=s.parrot_returns, max_new_tokens=32,
                    do_sample=False,
                )
            texts = self.tokenizer.batch_decode(output, skip_special_tokens=True)
            pairs = [
                (phrase, candidate)
                for k, phrase in enumerate(batch)
                for candidate in dict.fromkeys(t.strip() for t in texts[k * s.parrot_returns:(k + 1) * s.parrot_returns])
                if keep_paraphrase(phrase, candidate, s.parrot_max_similarity)
            ]
            if not pairs:
                continue
            adequate = self.adequacy([p for p, _ in pairs], [c for _, c in pairs])
            fluent = self.fluency([c for _, c in pairs])
            for (phrase, candidate), a, f in zip(pairs, adequate, fluent):
                if a >= s.parrot_adequacy_threshold and f >= s.parrot_fluency_threshold:
                    found.setdefault(phrase, []).append(candidate)
        for phrase, kept in found.items():
            kept.sort(key=lambda c: (-Levenshtein.distance(phrase.lower(), c.lower()), c))
        return found
