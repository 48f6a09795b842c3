"""Writing a PhraseModel as a sentence-transformers directory, and loading one back.

The directory ships the code of its own modules (SHIPPED, copies of this package's files) as
Hugging Face remote code, so plain sentence-transformers loads it with `trust_remote_code=True`.
`load` never runs that copy: our refs map to the installed classes and any other custom ref is
refused, so a directory cannot get its code trusted by naming ours.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pearl.errors import MissingModelError, PearlError
from pearl.labels import LABELS
from pearl.model import CONFIG
from pearl.model_ids import resolve_model

if TYPE_CHECKING:
    from pearl.model.phrase_model import PhraseModel

SHIPPED = ("st_modules.py", "char_encoder.py")
# ref in modules.json → class in pearl.model.st_modules
SHIPPED_REFS = {"st_modules.PhraseTransformer": "PhraseTransformer", "st_modules.CharFeatures": "CharFeatures",
                "st_modules.SpellingNgrams": "SpellingNgrams", "st_modules.PhraseStaticEmbedding": "PhraseStaticEmbedding"}
INPUT_MODULES = ("PhraseTransformer", "PhraseStaticEmbedding")  # an export's first module: PEARL's or PEARL-static's
# exports written before the code was shipped name the installed module; only pearl loads those
OUR_REFS = {**SHIPPED_REFS, **{f"pearl.model.{ref}": name for ref, name in SHIPPED_REFS.items()}}
TYPE_HEAD = "pearl_type_head.safetensors"


def export_sentence_transformer(model: PhraseModel, out_dir: Path, spelling_weight: float = 0.0,
                                spelling_features: int = 1024, type_head: bool = True) -> None:
    """Write into `out_dir`, a new directory (callers swap it in with pearl.artifacts.atomic_dir).

    modules.json: PhraseTransformer (root), Pooling (model.pooling's mode), CharFeatures when the model has a
    character encoder, SpellingNgrams when spelling_weight > 0, Normalize. The prefix becomes the
    default prompt, so `encode` adds it. The type head goes to pearl_type_head.safetensors, its
    label names to pearl_model.json; `type_head=False` (a model trained without the type loss, whose head
    is its random start) ships none, so that `pearl types` refuses the export instead of guessing."""
    from safetensors.torch import save_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    from pearl.model.phrase_model import saved_config
    from pearl.model.st_modules import CharFeatures, PhraseTransformer, SpellingNgrams

    with tempfile.TemporaryDirectory() as scratch:  # PhraseTransformer loads the backbone from a path
        hf_dir = Path(scratch) / "hf"
        model.backbone.save_pretrained(hf_dir)
        model.tokenizer.save_pretrained(hf_dir)
        transformer = PhraseTransformer(str(hf_dir), max_seq_length=backbone_max_seq_length(model))
        hidden = model.backbone.config.hidden_size
        modules = [transformer, Pooling(hidden, pooling_mode=model.config.pooling)]
        if model.char is not None:
            char = CharFeatures(hidden, model.config.char_dim, model.config.char_weight)
            char.encoder.load_state_dict(model.char.state_dict())
            modules.append(char)
        if spelling_weight > 0:
            modules.append(SpellingNgrams(model.dim, spelling_features, spelling_weight))
        modules.append(Normalize())
        prompts = {"query": model.config.prefix} if model.config.prefix else None
        st = SentenceTransformer(modules=modules, device="cpu", prompts=prompts,
                                 default_prompt_name="query" if prompts else None)
        # sentence-transformers' own card asks the hub about the base model: an export makes no connection
        st.save(str(out_dir), create_model_card=False)
    _ship_code(out_dir)
    spelling = {"spelling_weight": spelling_weight, "spelling_features": spelling_features if spelling_weight > 0 else 0}
    dimension = model.dim + spelling["spelling_features"]
    (out_dir / "README.md").write_text(model_card(model, dimension, spelling_weight, type_head))
    if type_head:
        head = model.type_head
        save_file({"weight": head.weight.detach().float().cpu().contiguous(),
                   "bias": head.bias.detach().float().cpu().contiguous()}, out_dir / TYPE_HEAD)
    labels = {"type_labels": list(LABELS)} if type_head else {}
    config = {**saved_config(model.config), **spelling, "dimension": dimension, **labels}
    (out_dir / CONFIG).write_text(json.dumps(config, indent=2) + "\n")


def export_static(vectors, tokenizer, source: Path, out_dir: Path, config: dict,
                  spelling_weight: float | None = None) -> None:
    """PEARL-static into `out_dir`, a new directory: PhraseStaticEmbedding (these token vectors and `tokenizer`, a
    tokenizers.Tokenizer), then the source export's SpellingNgrams (same buckets; `spelling_weight`, or the
    source's weight where it is None) and Normalize, with its prompts. pearl_model.json holds `config` and no type
    head is written: `pearl types` needs PEARL-small."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize

    from pearl.model.st_modules import PhraseStaticEmbedding, SpellingNgrams

    source_model = load(source, "cpu")
    modules = [PhraseStaticEmbedding(tokenizer, embedding_weights=vectors)]
    spelling = [m for m in source_model if isinstance(m, SpellingNgrams)]
    if spelling:
        modules.append(SpellingNgrams(modules[0].get_embedding_dimension(), spelling[0].n_features,
                                      spelling[0].weight if spelling_weight is None else spelling_weight))
    modules.append(Normalize())
    st = SentenceTransformer(modules=modules, device="cpu", prompts=source_model.prompts or None,
                             default_prompt_name=source_model.default_prompt_name)
    st.save(str(out_dir), create_model_card=False)
    _ship_code(out_dir)
    spelling_config = {"spelling_weight": modules[1].weight if spelling else 0.0,
                       "spelling_features": spelling[0].n_features if spelling else 0}
    dimension = st.get_embedding_dimension()
    (out_dir / "README.md").write_text(static_card(config, dimension, spelling_config["spelling_weight"]))
    (out_dir / CONFIG).write_text(json.dumps({**config, **spelling_config, "dimension": dimension}, indent=2) + "\n")


def static_card(config: dict, dimension: int, spelling_weight: float) -> str:
    spelling = (f", then hashed character 3-grams that carry a share of {spelling_weight} of every cosine"
                if spelling_weight > 0 else "")
    fit = (f"; trained after, so that a text's mean points where PEARL-small's own vector of it does, over "
           f"{config['fit_texts']:,} training phrases and their variants"
           if config.get("fit") == "source_vectors" else "")
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, model2vec, static-embeddings, phrase-embeddings, pearl]
---

# PEARL-static phrase embeddings

Phrase vectors of {dimension} dimensions: the mean of static token vectors that model2vec distilled from
PEARL-small's transformer (`{config["source"]}`; {config["vocabulary_size"]:,} tokens, PCA to
{config["pca_dims"] or "no"} dimensions{fit}){spelling}, L2-normalised. No transformer runs when it encodes.

```python
from sentence_transformers import SentenceTransformer
model = SentenceTransformer("path/to/this/folder", trust_remote_code=True)  # the code is st_modules.py here
vectors = model.encode(["New York Times", "NYTimes"])

from model2vec import StaticModel  # the token vectors alone, without the 3-gram block
static = StaticModel.from_pretrained("path/to/this/folder")
```

or, with pearl installed, `pearl.load(path)`, `pearl link`, `pearl join` and `pearl cluster`.
"""


def model_card(model: PhraseModel, dimension: int, spelling_weight: float, type_head: bool = True) -> str:
    c = model.config
    char = f"a character encoder ({c.char_dim} dimensions, weight {c.char_weight})" if c.char_encoder else "no character encoder"
    if spelling_weight > 0:
        char += (f", then hashed character 3-grams ({dimension - model.dim} buckets) that carry a share of"
                 f" {spelling_weight} of every cosine")
    about = (f"""Phrase vectors of {dimension} dimensions, trained with the PEARL recipe (Chen et al., 2024) by `pearl`:
the backbone `{c.backbone}` fine-tuned and averaged with its original weights, plus {char},
L2-normalised. `pearl_type_head.safetensors` holds the {len(LABELS)}-way phrase-type head.""" if type_head else
             f"""Phrase vectors of {dimension} dimensions, trained by `pearl` without PEARL's type loss (BURT-small, or
an ablation): the backbone `{c.backbone}` fine-tuned, plus {char}, L2-normalised. It has no phrase-type head.""")
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, feature-extraction, phrase-embeddings, pearl]
---

# PEARL phrase embeddings

{about}

```python
from sentence_transformers import SentenceTransformer
model = SentenceTransformer("path/to/this/folder", trust_remote_code=True)  # the code is st_modules.py here
vectors = model.encode(["New York Times", "NYTimes"])
```

or, with pearl installed, `pearl.load(path)`, `pearl link`, `pearl join`, `pearl cluster` and `pearl types`.
"""


def _ship_code(out_dir: Path) -> None:
    """Copy our module files into `out_dir` and name them by file there, as remote code is named."""
    source = Path(__file__).parent
    for name in SHIPPED:
        shutil.copyfile(source / name, out_dir / name)
    installed = {f"pearl.model.{ref}": ref for ref in SHIPPED_REFS}  # what SentenceTransformer.save wrote
    modules_file = out_dir / "modules.json"
    modules = json.loads(modules_file.read_text())
    for module in modules:
        module["type"] = installed.get(module["type"], module["type"])
    modules_file.write_text(json.dumps(modules, indent=2))


def backbone_max_seq_length(model: PhraseModel) -> int:
    """The tokens per text that the untuned backbone reads as a sentence-transformer.

    Training truncates phrases at model.max_length, but the export must read as much as its
    backbone does: a shorter cut would make the two unequal on longer inputs (ATIS-L)."""
    config = Path(resolve_model(model.config.backbone)) / "sentence_bert_config.json"
    if config.is_file():
        limit = json.loads(config.read_text()).get("max_seq_length")
        if limit:
            return int(limit)
    positions = getattr(model.backbone.config, "max_position_embeddings", 512)
    return int(min(model.tokenizer.model_max_length, positions, 512))


def check_export(path: str | Path) -> None:
    """PearlError naming the file unless `path` is a PEARL export: pearl_model.json parses, and
    modules.json lists our PhraseTransformer (PhraseStaticEmbedding for PEARL-static) first and otherwise only
    our modules or sentence-transformers' own."""
    root = Path(path)
    for name in ("modules.json", CONFIG):
        if not (root / name).is_file():
            raise MissingModelError(f"{root}: not a PEARL export (no {name}); run `dvc repro average`")
    modules = _read_json(root / "modules.json")
    if not isinstance(_read_json(root / CONFIG), dict):
        raise PearlError(f"{root / CONFIG}: not a PEARL export (not a JSON object); run `dvc repro average`")
    types = [str(m.get("type")) if isinstance(m, dict) else "" for m in modules] if isinstance(modules, list) else []
    if not types or OUR_REFS.get(types[0]) not in INPUT_MODULES:
        raise PearlError(f"{root / 'modules.json'}: not a PEARL export (its first module is not PEARL's "
                         "PhraseTransformer or PhraseStaticEmbedding)")
    for ref in types:
        if ref not in OUR_REFS and not ref.startswith("sentence_transformers."):
            raise PearlError(f"{root / 'modules.json'}: not a PEARL export (module type {ref!r} is neither PEARL's "
                             "nor sentence-transformers'); load it with sentence-transformers if you trust its code")


def _read_json(file: Path):
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise PearlError(f"{file}: not a PEARL export (invalid JSON: {error}); run `dvc repro average`") from None


def is_pearl_export(path: str | Path) -> bool:
    try:
        check_export(path)
    except PearlError:
        return False
    return True


def load(path: str | Path, device: str | None = None):
    """The exported model as a SentenceTransformer: `pearl.load(path).encode(texts)`."""
    check_export(path)
    from pearl.model.st_loader import PearlSentenceTransformer

    return PearlSentenceTransformer(str(path), device=device)
