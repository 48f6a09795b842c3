"""The fixed 95-label phrase-type set of PEARL (paper §3.3): 5 lexical types × 19 entity types.

Ids are stable and documented: label_id = lex_index * 19 + type_index, with the lexical
types and entity types in the orders below (entity types as the paper lists them, OTHER last).
Changing either order invalidates every trained type head.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

LEX_TYPES: tuple[str, ...] = ("NP", "VP", "PP", "ADVP", "ADJP")
ENTITY_TYPES: tuple[str, ...] = (
    "CARDINAL", "DATE", "PERSON", "NORP", "GPE", "LAW", "PERCENT", "ORDINAL", "MONEY",
    "WORK_OF_ART", "FAC", "TIME", "QUANTITY", "PRODUCT", "LANGUAGE", "ORG", "LOC", "EVENT",
    "OTHER",
)
ONTONOTES_TYPES = frozenset(ENTITY_TYPES[:-1])
LABELS: tuple[str, ...] = tuple(f"{lex}-{ent}" for lex in LEX_TYPES for ent in ENTITY_TYPES)
NUM_LABELS = len(LABELS)
_LABEL_IDS = {label: index for index, label in enumerate(LABELS)}


def label_of(lex_type: str, entity_type: str) -> str:
    return f"{lex_type}-{entity_type}"


def label_id(lex_type: str, entity_type: str) -> int:
    """The id of `<LEX>-<TYPE>`; KeyError names the offending label."""
    return _LABEL_IDS[label_of(lex_type, entity_type)]


def shares(observed: Iterable[str], categories: Iterable[str]) -> dict[str, float]:
    """`share_<category>`: the fraction of `observed` equal to each category (0 when absent)."""
    counts = Counter(observed)
    total = max(sum(counts.values()), 1)
    return {f"share_{c}": round(counts[c] / total, 4) for c in categories}
