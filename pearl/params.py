"""The typed schema of params.yaml, read once per run and passed down as frozen dataclasses.

Every key must be present (DVC tracks only what the file lists, so a default hidden here
would change results without `dvc params diff` showing it) and no unknown key is allowed
(a typo such as `parse.min_frek` must fail, not be ignored). Values are cast the way DVC
writes them: `-S train.lr=3e-5` arrives as the string "3e-5".
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from pearl.bench.task_names import ALL_TASKS, STRING_TASKS, TUNE_TASKS
from pearl.errors import PearlError

_SCHEMA = ConfigDict(extra="forbid", frozen=True)

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


@dataclass(config=_SCHEMA)
class BaseParams:
    seed: NonNegativeInt
    device: Literal["auto", "cpu", "cuda"]


@dataclass(config=_SCHEMA)
class CorpusParams:
    source: Literal["wiki-vital", "wikipedia", "files"]
    max_docs: PositiveInt | None
    files: list[str]
    text_field: str
    hf_dataset: str
    hf_config: str
    spacy_model: str
    batch_size: PositiveInt
    min_sentence_chars: PositiveInt
    max_sentence_chars: PositiveInt
    long_sentences: Literal["skip", "error"]


@dataclass(config=_SCHEMA)
class ParseParams:
    backend: Literal["spacy", "benepar"]
    spacy_model: str
    benepar_model: str
    min_freq: PositiveInt
    min_words: PositiveInt
    max_words: PositiveInt
    max_chars: PositiveInt
    batch_size: PositiveInt
    n_process: PositiveInt


@dataclass(config=_SCHEMA)
class RayStageParams:
    workers: PositiveInt
    batch_size: PositiveInt
    cpus_per_worker: Annotated[float, Field(gt=0)]
    gpus_per_worker: Annotated[float, Field(ge=0)]


@dataclass(config=_SCHEMA)
class RayParams:
    address: str | None
    num_cpus: PositiveInt | None
    shared_storage: bool
    shard_rows: PositiveInt
    corpus: RayStageParams
    parse: RayStageParams
    typing: RayStageParams
    augment: RayStageParams
    candidates: RayStageParams
    teacher: RayStageParams


@dataclass(config=_SCHEMA)
class TypingParams:
    backend: Literal["spacy", "transformers"]
    spacy_model: str
    hf_model: str
    batch_size: PositiveInt


@dataclass(config=_SCHEMA)
class AugmentParams:
    max_variants_per_method: PositiveInt
    nltk_data: str
    synonym_threshold: Annotated[float, Field(gt=0, lt=1)]
    synonym_topn: PositiveInt
    fasttext_path: str | None
    fasttext_limit: PositiveInt
    fasttext_dim: PositiveInt
    fasttext_epochs: PositiveInt
    fasttext_min_count: PositiveInt
    phrase_backend: Literal["offline", "parrot"]
    mined_min_cos: Annotated[float, Field(gt=0, le=1)]
    parrot_model: str
    parrot_beams: PositiveInt
    parrot_returns: PositiveInt
    parrot_max_similarity: Annotated[float, Field(gt=0, le=1)]
    parrot_adequacy_model: str
    parrot_adequacy_threshold: Annotated[float, Field(ge=0, le=1)]
    parrot_fluency_model: str
    parrot_fluency_threshold: Annotated[float, Field(ge=0, le=1)]
    batch_size: PositiveInt
    alias_sources: list[Literal["geonames", "airports", "vera", "schwartz_hearst", "moby"]]
    vera_path: str
    moby_min_cos: Annotated[float, Field(ge=-1, le=1)]


@dataclass(config=_SCHEMA)
class TeacherParams:
    batch_size: PositiveInt
    variant_levels: list[Literal["token", "phrase"]]


@dataclass(config=_SCHEMA)
class NegativesParams:
    top_k: PositiveInt
    min_edit_sim: Annotated[float, Field(ge=0, le=1)]
    scorer: Literal["lookalike", "wratio", "levenshtein"]
    block_top_m: PositiveInt
    block_key_cap: PositiveInt
    block_dim: PositiveInt
    block_nprobe: PositiveInt
    rule: Literal["max_cos", "margin"]
    max_cos: Annotated[float, Field(ge=-1, le=1)]
    margin: float
    batch_size: PositiveInt
    n_threads: NonNegativeInt


@dataclass(config=_SCHEMA)
class ModelParams:
    backbone: str
    prefix: str
    max_length: PositiveInt
    char_encoder: bool
    char_dim: PositiveInt
    char_weight: Annotated[float, Field(gt=0)]
    teacher: str | None
    teacher_prefix: str
    pooling: Literal["mean", "cls", "max"]


Probability = Annotated[float, Field(ge=0, le=1)]


@dataclass(config=_SCHEMA)
class TrainParams:
    seed: NonNegativeInt | None
    batch_size: Annotated[int, Field(ge=2)]
    hard_negatives: NonNegativeInt
    epochs: PositiveInt
    max_steps: PositiveInt | None
    lr: Annotated[float, Field(gt=0)]
    head_lr: Annotated[float, Field(gt=0)]
    lr_schedule: Literal["exponential", "warmup_linear"]
    lr_decay_rate: Annotated[float, Field(gt=0, le=1)]
    lr_decay_steps: PositiveInt
    temperature: Annotated[float, Field(gt=0)]
    contrastive_weight: Annotated[float, Field(ge=0)]
    type_weight: Annotated[float, Field(ge=0)]
    distill_weight: Annotated[float, Field(ge=0)]
    distill_loss: Literal["kl", "correlation"]
    view_min_cos: Annotated[float, Field(ge=-1, le=1)] | None
    p_char: Probability
    p_token: Probability
    p_phrase: Probability
    p_alias: Probability
    p_identity: Probability
    heldout_fraction: Annotated[float, Field(gt=0, lt=0.5)]
    precision: Literal["auto", "fp32", "bf16"]
    grad_cache: bool
    grad_cache_chunk: PositiveInt
    cpu_threads: NonNegativeInt
    num_workers: NonNegativeInt | Literal["auto"]
    checkpoint_dir: str
    checkpoint_every: PositiveInt
    log_every: PositiveInt


PairFeature = Literal["u", "v", "abs_diff", "product"]


class _ObjectiveWeights:
    """BURT's three objectives' weights, on a params section that has them."""

    @property
    def weights(self) -> dict[str, float]:
        """The objectives that are on, by name, in BURT's order."""
        return {task: w for task, w in (("nli", self.nli_weight), ("pi", self.pi_weight), ("ptc", self.ptc_weight))
                if w > 0}


@dataclass(config=_SCHEMA)
class BurtParams(_ObjectiveWeights):
    nli_weight: Annotated[float, Field(ge=0)]
    pi_weight: Annotated[float, Field(ge=0)]
    ptc_weight: Annotated[float, Field(ge=0)]
    batch_size: Annotated[int, Field(ge=2)]
    max_length: PositiveInt
    pi_negatives: PositiveInt
    features: Annotated[list[PairFeature], Field(min_length=1)]
    nli_source: Literal["offline", "hub"]
    nli_hub: Annotated[list[str], Field(min_length=1)]
    ppdb_file: str | None
    ptc_pairs_per_label: PositiveInt


@dataclass(config=_SCHEMA)
class BurtSmallParams(_ObjectiveWeights):
    nli_weight: Annotated[float, Field(ge=0)]
    pi_weight: Annotated[float, Field(ge=0)]
    ptc_weight: Annotated[float, Field(ge=0)]
    pooling: Literal["mean", "cls", "max"]
    max_steps: PositiveInt


@dataclass(config=_SCHEMA)
class PearlBaseParams:
    enabled: bool
    backbone: str
    prefix: str
    batch_size: Annotated[int, Field(ge=2)]
    max_steps: PositiveInt | None


@dataclass(config=_SCHEMA)
class AverageParams:
    alpha: Probability
    spelling_weight: Annotated[float, Field(ge=0, lt=1)]
    spelling_features: Annotated[int, Field(ge=16, le=1 << 20)]


@dataclass(config=_SCHEMA)
class StaticParams:
    vocabulary: Literal["tokenizer", "tokenizer+phrases"]
    pca_dims: Annotated[int, Field(ge=2)] | None
    fit: Literal["none", "source_vectors"]
    spelling_weight: Annotated[float, Field(gt=0, lt=1)] | None


@dataclass(config=_SCHEMA)
class Figure4Params:
    per_type: Annotated[int, Field(ge=2)]
    phrase_types: Annotated[int, Field(ge=2)]
    perplexity: Annotated[float, Field(gt=0)]


@dataclass(config=_SCHEMA)
class BenchParams:
    data_dir: str
    short_text_dir: str
    general_dir: str
    tune_dir: str
    burt_dir: str
    tasks: list[str]
    tune_tasks: list[str]
    string_tasks: list[str]
    burt_tasks: list[str]
    burt_tune_tasks: list[str]
    reference_models: list[str]
    batch_size: PositiveInt
    max_length: PositiveInt
    yago_kb: str | None
    umls_kb: str | None
    hf_dataset: str
    ppdb_seeds: PositiveInt
    atis_seeds: PositiveInt
    probe_lrs: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=1)]
    probe_batch_size: PositiveInt
    probe_patience: PositiveInt
    probe_max_epochs: PositiveInt
    kmeans_inits: PositiveInt


@dataclass(config=_SCHEMA)
class Params:
    engine: Literal["local", "ray"]
    base: BaseParams
    ray: RayParams
    corpus: CorpusParams
    parse: ParseParams
    typing: TypingParams
    augment: AugmentParams
    teacher: TeacherParams
    negatives: NegativesParams
    model: ModelParams
    train: TrainParams
    burt: BurtParams
    average: AverageParams
    pearl_base: PearlBaseParams
    burt_small: BurtSmallParams
    static: StaticParams
    bench: BenchParams
    figure4: Figure4Params

    @property
    def shard_rows(self) -> int | None:
        """Rows per shard of a data stage's Parquet output; None (one file) under the local engine."""
        return self.ray.shard_rows if self.engine == "ray" else None

    def __post_init__(self) -> None:
        if self.parse.min_words > self.parse.max_words:
            raise PearlError(
                f"params: parse.min_words ({self.parse.min_words}) exceeds "
                f"parse.max_words ({self.parse.max_words})"
            )
        if self.augment.parrot_returns > self.augment.parrot_beams:
            raise PearlError("params: augment.parrot_returns exceeds augment.parrot_beams")
        if self.corpus.min_sentence_chars > self.corpus.max_sentence_chars:
            raise PearlError(
                "params: corpus.min_sentence_chars exceeds corpus.max_sentence_chars"
            )
        t = self.train
        if not (pearl_objectives(self) or self.burt.weights):
            raise PearlError("params: train.contrastive_weight, train.type_weight, train.distill_weight (or model.teacher) "
                             "and burt.*_weight leave no loss to train on: set one above 0")
        if len(set(self.burt.features)) < len(self.burt.features):
            raise PearlError(f"params: burt.features {self.burt.features} names a feature twice")
        if self.corpus.source == "files" and not self.corpus.files:
            raise PearlError("params: corpus.source is 'files' but corpus.files is empty")
        if not self.burt_small.weights:
            raise PearlError("params: burt_small.nli_weight, pi_weight and ptc_weight are all 0: BURT-small trains on "
                             "BURT's objectives alone, so set one above 0")
        for key, allowed in (("tasks", ALL_TASKS), ("tune_tasks", TUNE_TASKS), ("string_tasks", STRING_TASKS),
                             ("burt_tasks", ALL_TASKS), ("burt_tune_tasks", TUNE_TASKS)):
            unknown = [t for t in getattr(self.bench, key) if t not in allowed]
            if unknown:
                raise PearlError(
                    f"params: bench.{key} has unknown task(s) {', '.join(unknown)} (valid: {', '.join(allowed)})"
                )
        # the report reads the folder their stages write (a DVC dep): one task at least must write it. BURT's tune
        # tasks write metrics/tune too, so the tune suite may be left empty (the report says it has no task)
        for keys, folder in ((("tasks",), "metrics/bench"), (("tune_tasks", "burt_tune_tasks"), "metrics/tune")):
            if not any(getattr(self.bench, key) for key in keys):
                named = " and ".join(f"bench.{key}" for key in keys)
                raise PearlError(f"params: {named} {'is' if len(keys) == 1 else 'are'} empty: the report reads {folder}, "
                                 f"which their stages write; name at least one task "
                                 f"(valid: {', '.join(ALL_TASKS if folder == 'metrics/bench' else TUNE_TASKS)})")


def pearl_objectives(params: Params) -> bool:
    """Whether any of PEARL's own losses is on: without one, training encodes no phrase batch (BURT alone)."""
    t = params.train
    return t.contrastive_weight > 0 or t.type_weight > 0 or (t.distill_weight > 0 and params.model.teacher is not None)


_ADAPTER = TypeAdapter(Params)
TOP_LEVEL_VALUES = ("engine",)  # the one key that is a value, not a section (`-S engine=ray`)


_UNKNOWN_KEY = {"extra_forbidden", "unexpected_keyword_argument"}


def _one_line(error: ValidationError, origin: str) -> str:
    # An unknown key often comes with the "missing" of the key it misspells: name the typo.
    first = min(error.errors(), key=lambda e: e["type"] not in _UNKNOWN_KEY)
    key = ".".join(str(part) for part in first["loc"])
    kind = first["type"]
    if kind in _UNKNOWN_KEY:
        return f"{origin}: unknown key '{key}' (a typo? see params.yaml for the valid keys)"
    if kind == "missing":
        return f"{origin}: key '{key}' is missing"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{origin}: {key}={first.get('input')!r}: {first['msg']}{more}"


def parse_params(raw: Any, origin: str = "params") -> Params:
    if not isinstance(raw, dict):
        raise PearlError(f"{origin}: expected a mapping of sections, got {type(raw).__name__}")
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as error:
        raise PearlError(_one_line(error, origin)) from None


def set_key(raw: dict, dotted: str, value: Any, origin: str = "params") -> None:
    """Set `section.key` in a raw params mapping, as `dvc exp run -S` does; only existing sections."""
    *parents, leaf = dotted.split(".")
    if not all(dotted.split(".")) or not (parents or leaf in TOP_LEVEL_VALUES):
        raise PearlError(f"-S {dotted}={value!r}: expected section.key=value, e.g. -S train.lr=3e-5")
    node = raw
    for depth, part in enumerate(parents):
        if part not in node:
            raise PearlError(f"-S {dotted}: unknown section '{'.'.join(parents[:depth + 1])}' (a typo? see {origin})")
        node = node[part]
        if not isinstance(node, dict):
            raise PearlError(f"-S {dotted}: '{'.'.join(parents[:depth + 1])}' is a value ({node!r}), "
                             "not a section")
    node[leaf] = value


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise PearlError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None


def load_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None) -> Params:
    path = Path(path)
    if not path.is_file():
        raise PearlError(f"{path}: params file not found (run from the project root or pass --params)")
    raw = read_yaml(path)
    # overrides go into a mapping of sections only, so `-S` on an empty file or through a value fails in one line
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for k, v in raw.items() if k not in TOP_LEVEL_VALUES):
        parse_params(raw, origin=str(path))
    for dotted, value in (overrides or {}).items():
        set_key(raw, dotted, value, origin=str(path))
    return parse_params(raw, origin=str(path))
