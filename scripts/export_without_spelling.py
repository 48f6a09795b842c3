"""Copy an export without its spelling block, to serve as `model.teacher`: the trained vectors alone.

The copy is the export that `average.spelling_weight: 0` would write from the same weights (the block
has none), without re-running training, which depends on that param.

    python scripts/export_without_spelling.py models/pearl-base teachers/pearl-base-noblock
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from pearl.artifacts import atomic_dir
from pearl.model import CONFIG

BLOCK = "SpellingNgrams"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    modules_file = args.export / "modules.json"
    if not modules_file.is_file():
        sys.exit(f"{args.export}: no modules.json; pass a sentence-transformers export such as models/pearl-base")
    modules = json.loads(modules_file.read_text())
    kept = [module for module in modules if not module["type"].endswith(BLOCK)]
    if len(kept) == len(modules):
        sys.exit(f"{args.export}: has no {BLOCK} module; use it as it is")
    with atomic_dir(args.out) as staged:
        shutil.copytree(args.export, staged, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(*(m["path"] for m in modules if m not in kept and m["path"])))
        (staged / "modules.json").write_text(json.dumps(kept, indent=2) + "\n")
        config = json.loads((staged / CONFIG).read_text())
        config["dimension"] -= config["spelling_features"]
        config.update(spelling_weight=0.0, spelling_features=0)
        (staged / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
        # the export's card describes the block: the copy says what it is instead
        (staged / "README.md").write_text(f"{args.export} without its hashed character 3-grams, by "
                                          f"scripts/export_without_spelling.py: vectors of {config['dimension']} "
                                          "dimensions, the trained encoder's alone.\n")
    print(f"{args.out}: {args.export} without its {BLOCK} module ({len(kept)} modules)")


if __name__ == "__main__":
    main()
