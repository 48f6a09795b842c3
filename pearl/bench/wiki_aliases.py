"""The tune suite's name-linking task, built from data the project owns: the other names an
article's lead gives its subject ("Tamerlane" for Timur, "Formosa" for Taiwan, "Hansen's disease"
for Leprosy), each linked to its title among every title of the Vital Articles leads.

Only names the lead introduces with a cue ("also known as", "formerly called", …) are taken, so
the pairs are what the article says, not a guess. The leads are also the default corpus: a model
trained on them has read these sentences, and 23 of the 613 pairs are (phrase, variant) pairs of
the default augment cache too (mined same-head phrases, embedding synonyms), so a run with phrase
or token views may have trained on those few.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pearl.bench.data import RetrievalData
from pearl.corpus.sources import Document, iter_wiki_vital

LEAD_CHARS = 400  # the cues that name the subject sit in the first sentence or two
_CUE = re.compile(
    r"\b(?:also|commonly|more commonly|better|formerly|officially|simply|often|sometimes|popularly|usually)"
    r" (?:known|called|referred to|abbreviated|named) as:? ((?:the |an? )?[A-Z0-9][^,;.()\"“”:]{1,80})")
# where a name ends and the sentence goes on
_NAME_END = re.compile(r" (?:is|was|are|were|has|had|in|from|by|after|because|which|who|for)\b")
_ALTERNATIVES = re.compile(r",? (?:or|and) (?:the |simply |also )?")
_ARTICLE = re.compile(r"^(?:the|an?) ", re.IGNORECASE)


def _key(name: str) -> str:
    """A name compared without case, a leading article or a disambiguation in parentheses."""
    return _ARTICLE.sub("", re.sub(r"\s*\(.*?\)", "", name).strip()).lower()


def mine_aliases(articles: Iterable[Document]) -> list[tuple[str, str]]:
    """(alias, title) pairs, in article order, each once; an alias that is the title itself is left out."""
    pairs = []
    for title, text in articles:
        for cue in _CUE.finditer(text[:LEAD_CHARS]):
            for alias in _ALTERNATIVES.split(_NAME_END.split(cue.group(1))[0]):
                alias = _ARTICLE.sub("", alias.strip()).strip()
                if 2 <= len(alias) <= 60 and (alias[0].isupper() or alias[0].isdigit()) and _key(alias) != _key(title):
                    pairs.append((alias, title))
    return list(dict.fromkeys(pairs))


def load_wiki_aliases() -> RetrievalData:
    articles = list(iter_wiki_vital())
    pairs = mine_aliases(articles)
    return RetrievalData([alias for alias, _ in pairs], [title for _, title in pairs],
                         list(dict.fromkeys(title for title, _ in articles)), "every Vital Articles title")
