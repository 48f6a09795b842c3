"""The training stage's input artifacts, checked before torch and the model load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pearl.artifacts import (EVALUATION_TEXTS_SCHEMA, HARD_NEGATIVES_SCHEMA, TEACHER_VECTORS_SCHEMA,
                             TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, artifact_files)
from pearl.errors import PearlError
from pearl.params import Params


@dataclass(frozen=True)
class TrainInputs:
    typed: Path
    variants: Path
    negatives: Path
    teacher: Path
    evaluation: Path  # the test and tune texts (typing): no character view may be one

    def check(self, params: Params) -> None:
        """A missing or unreadable input fails in one line before torch imports (seconds on 2 cores): the files'
        footers and column types are read here, their rows when training loads them."""
        needed = [(self.typed, TYPED_PHRASES_SCHEMA), (self.variants, VARIANTS_SCHEMA),
                  (self.negatives, HARD_NEGATIVES_SCHEMA), (self.evaluation, EVALUATION_TEXTS_SCHEMA)]
        if uses_teacher(params):
            needed.append((self.teacher, TEACHER_VECTORS_SCHEMA))
        for path, schema in needed:
            artifact_files(path, schema)
        check_burt_sources(params)


def check_burt_sources(params: Params) -> None:
    """The files BURT's objectives that are on read (SICK and SNLI also to keep their test splits out): one line
    each if missing or unreadable, before torch imports."""
    burt = params.burt
    if not burt.weights:
        return
    from pearl.bench.data import load_sick, load_snli

    burt_dir = Path(params.bench.burt_dir)
    load_sick(burt_dir, "TEST"), load_snli(burt_dir, "test")
    if burt.ppdb_file is not None and ({"pi", "ptc"} & burt.weights.keys()) and not Path(burt.ppdb_file).is_file():
        raise PearlError(f"{burt.ppdb_file} is missing: set burt.ppdb_file to a PPDB 2.0 file, or to null")
    if "ptc" in burt.weights and burt.ppdb_file is None:
        from pearl.augment.token_level import load_wordnet

        load_wordnet(Path(params.augment.nltk_data))


def uses_teacher(params: Params) -> bool:
    """Whether training reads model.teacher's vectors: to distil them, or to filter views by them. Without
    model.teacher neither happens, whatever train.distill_weight and train.view_min_cos say: the recipe
    without a teacher."""
    return params.model.teacher is not None and (distils(params) or params.train.view_min_cos is not None)


def distils(params: Params) -> bool:
    """Whether the loss asks for the teacher's cosines (used only where `uses_teacher`)."""
    return params.train.distill_weight > 0
