"""scripts/check_repro.py: each metric within or outside the tolerance its rule derives, and every committed metric
under a rule."""

import importlib.util
import json
from fnmatch import fnmatchcase

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("check_repro", ROOT / "scripts" / "check_repro.py")
check_repro = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_repro)
RULES = check_repro.load_rules(ROOT / "scripts" / "repro_tolerances.yaml")


def verdict(name: str, old, new, diff: dict | None = None) -> str:
    file, key = name.split(":")
    rule = next(r for r in RULES["rules"] if fnmatchcase(name, r["pattern"]))
    return check_repro.judge(rule, check_repro.Bounds(RULES, diff or {}), file, key, old, new)[0]


@pytest.mark.parametrize("name, old, new, expected", [
    ("metrics/train.json:seconds", 1016.7, 2000.0, "ignored"),
    ("metrics/parse.json:phrases", 34537, 34537, "within"),
    ("metrics/parse.json:phrases", 34537, 34538, "outside"),  # no float decides it
    ("metrics/augment.json:variants_embedding_synonym", 59260, 59253, "within"),  # the measured CPU spread
    ("metrics/augment.json:variants_embedding_synonym", 59260, 59100, "outside"),
    ("metrics/teacher.json:teacher", "sentence-transformers/all-mpnet-base-v2", "other", "outside"),
    ("metrics/bench/model/yago.json:score", 86.45, 86.5, "within"),  # PEARL-small's seeds: 86.26 and 86.04
    ("metrics/bench/model/yago.json:score", 86.45, 87.5, "outside"),
    ("metrics/bench/model/yago.json:n", 10000, 10001, "outside"),
    ("metrics/bench/ref/yago.json:sentence-transformers/all-mpnet-base-v2.score", 81.06, 81.2, "within"),
    ("metrics/train.json:loss_last_tenth", 2.5095, None, "outside"),  # missing in the working tree
])
def test_a_metric_is_judged_by_its_rule(name, old, new, expected):
    assert verdict(name, old, new) == expected


def test_a_held_out_accuracy_moves_within_its_sampling_error():
    diff = {"metrics/train.json": {"phrases_heldout": {"old": 600, "new": 600}}}  # 2 × sqrt(.8 · .2 / 600) = 0.033
    assert verdict("metrics/train.json:heldout_type_accuracy", 0.80, 0.83, diff) == "within"
    assert verdict("metrics/train.json:heldout_type_accuracy", 0.80, 0.84, diff) == "outside"


def test_every_float_metric_of_the_stages_has_a_rule_of_its_own():
    """A float metric that falls to the last rule (exact, for counts and names) would fail on any other CPU."""
    names = [f"metrics/{stage}.json:{key}"
             for stage in ("corpus", "parse", "typing", "augment", "candidates", "teacher", "negatives", "train",
                           "average", "static")
             for key, value in _flat(json.loads((ROOT / f"metrics/{stage}.json").read_text())).items()
             if isinstance(value, float)]
    assert len(names) > 20
    last = RULES["rules"][-1]
    assert [name for name in names if next(r for r in RULES["rules"] if fnmatchcase(name, r["pattern"])) is last] == []


def _flat(record: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
