"""The committed experiment definitions (`experiments/*.yaml`): named rows of param overrides,
each run once per seed as a DVC experiment named `<table>-<row>-s<seed>`.

A table file holds either `rows` (Tables 3 and 4: row name → overrides) or `sweeps` (Figure 5:
param → values, each value a row with the other params at their defaults; `grid: true` takes
the cartesian product instead). `fixed` overrides apply to every row, and a sweep varies around
the default with them applied: a grid at paper scale sets `train.max_steps: null` there, and a
table kept at an earlier default pins what has moved since. The seed goes to `train.seed`, so the
data stages stay cached and only training varies; the default `base.seed` is the run itself. `system:
burt-small` makes the rows BURT-small's (pearl/experiments/systems.py): they set burt_small.* and burt.*, and
each experiment runs BURT-small's stages instead of PEARL-small's.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pearl.errors import PearlError
from pearl.experiments.systems import SYSTEMS
from pearl.params import Params, load_params, read_yaml

EXPERIMENTS_DIR = Path("experiments")
_TABLE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_ROW_AND_SEED = re.compile(r"^(?P<row>[A-Za-z0-9._-]+)-s(?P<seed>\d+)$")
_ROW = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Run:
    """One row of a table at one seed: one DVC experiment."""

    table: str
    row: str
    seed: int
    overrides: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.table}-{self.row}-s{self.seed}"

    def set_args(self, base_seed: int) -> list[str]:
        """`-S key=value` arguments of `dvc exp run`, values in YAML as DVC parses them."""
        settings = dict(self.overrides)
        if self.seed != base_seed:
            settings["train.seed"] = self.seed
        return [arg for key, value in settings.items() for arg in ("-S", f"{key}={yaml_value(value)}")]


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    rows: dict[str, dict[str, Any]]
    seeds: tuple[int, ...]
    sweeps: dict[str, list[Any]] | None  # param → values, for the line plots of a sweep table
    grid: bool  # the sweeps' cartesian product rather than one param at a time
    recipes: dict[str, str]  # row → recipe_of its params: the runs that count for it
    base: Params  # the default with `fixed` applied: what a sweep varies around
    system: str = "pearl-small"  # what the rows train (pearl.experiments.systems.SYSTEMS)
    earlier: dict[str, frozenset[str]] = field(default_factory=dict)  # row → its recipe's keys under EARLIER_RECIPES

    def keys(self, row: str) -> frozenset[str]:
        """The recipe keys a recorded run may hold to count for `row`: today's, and the same recipe's as earlier
        code keyed it."""
        return frozenset({self.recipes[row], *self.earlier.get(row, ())})

    def runs(self, seeds: tuple[int, ...] | None = None, rows: tuple[str, ...] | None = None) -> list[Run]:
        unknown = sorted(set(rows or []) - set(self.rows))
        if unknown:
            raise PearlError(f"{self.name}: no row {', '.join(unknown)} (rows: {', '.join(self.rows)})")
        chosen = [r for r in self.rows if rows is None or r in rows]
        return [Run(self.name, row, seed, self.rows[row]) for seed in (seeds or self.seeds) for row in chosen]


# Levers added after runs were recorded, each at the value that trains as the recipe did before it
# existed: a run's params without the key are read at that value, and the key at that value stays out
# of the recipe, so that adding a lever, off, keeps every recorded run counting.
# train.cpu_threads: before it, training took torch's default, all cores: the 2 of the machine the runs trained on.
ADDED_OFF: dict[tuple[str, str], Any] = {("model", "pooling"): "mean", ("train", "lr_schedule"): "exponential",
                                         ("train", "cpu_threads"): 2}
# Sections added the same way, off when these keys hold these values: a run without the section is read with
# today's section at them, and the section, off, stays out of the recipe. BURT's objectives, at weight 0.
ADDED_OFF_SECTIONS: dict[str, dict[str, Any]] = {"burt": {"nli_weight": 0.0, "pi_weight": 0.0, "ptc_weight": 0.0}}


# Sections outside every recipe: the benchmark's and Figure 4's, where the work ran (engine, ray: the same rows), and
# PEARL-base's, BURT-small's and PEARL-static's (their own stages; a table's runs train PEARL-small or BURT-small)
OUTSIDE_RECIPES = ("bench", "figure4", "engine", "ray", "pearl_base", "burt_small", "static")

# A run's recipe key is frozen in metrics/experiments.json when it is recorded (its experiment ref does not travel),
# so a change that moves every key without changing what a row trains would leave every recorded run out of every
# table. Each function below turns today's recipe (before hashing) of some params into what earlier code hashed for
# them, for the runs it recorded; newest first.
def _as_burt_table3_was_keyed(recipe: dict, params: Params) -> dict:
    """Until 36146aa (BURT's Table 3 recorded): PEARL-static's section, of two keys then, and train.cpu_threads were in
    every recipe."""
    static = {"vocabulary": params.static.vocabulary, "pca_dims": params.static.pca_dims}
    return {**recipe, "static": static, "train": {**recipe["train"], "cpu_threads": params.train.cpu_threads}}


_DEBIAN_VERA = {"vendor/debian/usr/share/dictd/vera.dict.dz": "/usr/share/dictd/vera.dict.dz"}


def _as_table3_and_figure5_were_keyed(recipe: dict, params: Params) -> dict:
    """Until 356a4c4 (Tables 3 and 4 and Figure 5 recorded): neither of those, and dict-vera read from Debian's own
    path, the same file."""
    vera = recipe["augment"]["vera_path"]
    return {**recipe, "augment": {**recipe["augment"], "vera_path": _DEBIAN_VERA.get(vera, vera)}}


EARLIER_RECIPES: tuple[Callable[[dict, Params], dict], ...] = (_as_burt_table3_was_keyed, _as_table3_and_figure5_were_keyed)


def _key(recipe: dict) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def recipe_of(params: Params, system: str = "pearl-small") -> str:
    """What a run trains and measures with, the seed aside: its typed params but train.seed, the
    `OUTSIDE_RECIPES` sections and the `ADDED_OFF` levers and sections at their off value. A run counts for every row
    of this recipe, whichever table ran it, and for none once the default has moved on. A BURT-small row's recipe is
    that of the params BURT-small trains with, marked as its."""
    return _key(_recipe(params, system))


def recipe_keys(params: Params, system: str = "pearl-small") -> tuple[str, ...]:
    """recipe_of's key, then the keys earlier code gave the same recipe (`EARLIER_RECIPES`)."""
    recipe, trained = _recipe(params, system), SYSTEMS[system].recipe(params)
    return (_key(recipe), *(_key(earlier(recipe, trained)) for earlier in EARLIER_RECIPES))


def _recipe(params: Params, system: str) -> dict:
    params = SYSTEMS[system].recipe(params)
    recipe = {k: v for k, v in asdict(params).items() if k not in OUTSIDE_RECIPES}
    recipe["train"] = {k: v for k, v in recipe["train"].items() if k != "seed"}
    for (section, key), off in ADDED_OFF.items():
        if recipe[section][key] == off:
            del recipe[section][key]
    for section, off in ADDED_OFF_SECTIONS.items():
        if all(recipe[section][key] == value for key, value in off.items()):
            del recipe[section]
    if system != "pearl-small":
        recipe["system"] = system
    return recipe


def yaml_value(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...").strip()


def param_key(param: str) -> str:
    """`section.key` without its section: what names a sweep's rows and its plot columns (a dot in a
    column name is a nested field to Vega-Lite, `dvc plots`)."""
    return param.rsplit(".", 1)[-1]


def row_name(param: str, value: Any) -> str:
    return f"{param_key(param)}-{yaml_value(value)}"


def sweep_row(param: str, value: Any, default: Params) -> str:
    """The row of a one-at-a-time sweep's point: `default` at the param's default value."""
    return "default" if default_value(default, param) == value else row_name(param, value)


def sweep_rows(sweeps: dict[str, list[Any]], grid: bool, default: Params) -> dict[str, dict[str, Any]]:
    """One row per swept value, the default value's row being the default itself (`default`)."""
    rows: dict[str, dict[str, Any]] = {"default": {}}
    if grid:
        for values in itertools.product(*sweeps.values()):
            combo = dict(zip(sweeps, values))
            rows["_".join(row_name(p, v) for p, v in combo.items())] = combo
        return rows
    for param, values in sweeps.items():
        for value in values:
            if (row := sweep_row(param, value, default)) != "default":
                rows[row] = {param: value}
    return rows


_UNKNOWN = object()


def default_value(default: Params, param: str) -> Any:
    """The value of `section.key` in `default`; an unknown key is left to the schema check to name."""
    section, _, key = param.partition(".")
    return getattr(getattr(default, section, None), key, _UNKNOWN)


def load_table(path: Path, params_path: Path = Path("params.yaml")) -> Table:
    """Read and check a table file: every override must make valid params (one line if not)."""
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml"))) or "none"
        raise PearlError(f"{path}: no such experiment table (tables: {known})")
    raw = read_yaml(path)
    if not isinstance(raw, dict) or not ({"rows", "sweeps"} & raw.keys()):
        raise PearlError(f"{path}: expected a mapping with `rows` or `sweeps`")
    unknown = sorted(set(raw) - {"title", "seeds", "rows", "sweeps", "grid", "fixed", "system"})
    if unknown:
        raise PearlError(f"{path}: unknown key(s) {', '.join(unknown)}")
    name = path.stem
    if not _TABLE.match(name):
        raise PearlError(f"{path}: a table's file name must be lowercase letters and digits, words joined by '-' "
                         "(it prefixes experiment names)")
    system = raw.get("system", "pearl-small")
    if system not in SYSTEMS:
        raise PearlError(f"{path}: system {system!r}: expected one of {', '.join(SYSTEMS)}")
    fixed = raw.get("fixed") or {}
    try:
        base = load_params(params_path, fixed)
    except PearlError as error:
        raise PearlError(f"{path}: fixed: {error}") from None
    sweeps = raw.get("sweeps")
    rows = sweep_rows(sweeps, bool(raw.get("grid")), base) if sweeps else raw["rows"]
    checked, recipes, earlier = {}, {}, {}
    for row, overrides in rows.items():
        if not _ROW.match(str(row)):
            raise PearlError(f"{path}: row name {row!r} may hold only letters, digits, '.', '_' and '-'")
        overrides = {**fixed, **(overrides or {})}
        try:
            recipes[str(row)], *keys = recipe_keys(load_params(params_path, overrides), system)
        except PearlError as error:
            raise PearlError(f"{path}: row {row}: {error}") from None
        checked[str(row)], earlier[str(row)] = overrides, frozenset(keys)
    seeds = tuple(int(s) for s in raw.get("seeds") or [base.base.seed])
    return Table(name, raw.get("title", name), checked, seeds, sweeps, bool(raw.get("grid")), recipes, base, system,
                 earlier)


def load_tables(directory: Path = EXPERIMENTS_DIR, params_path: Path = Path("params.yaml")) -> dict[str, Table]:
    paths = sorted(directory.glob("*.yaml"), key=lambda p: (not p.stem.startswith("table"), p.stem))  # tables, then figures
    return {path.stem: load_table(path, params_path) for path in paths}


def parse_name(name: str, tables: Iterable[str]) -> tuple[str, str, int] | None:
    """(table, row, seed) of an experiment this module named for one of `tables`, else None; the longest table
    name that prefixes it wins (a table's name may hold '-', as its rows' may)."""
    for table in sorted(tables, key=len, reverse=True):
        if name.startswith(f"{table}-") and (match := _ROW_AND_SEED.match(name[len(table) + 1:])):
            return table, match["row"], int(match["seed"])
    return None
