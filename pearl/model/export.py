"""Writing a PhraseModel as a sentence-transformers directory, and loading one back."""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict
from pathlib import Path

from pearl.errors import PearlError
from pearl.model.phrase_model import PhraseModel
from pearl.model_ids import resolve_model


def export_sentence_transformer(model: PhraseModel, out_dir: Path) -> None:
    """Write into `out_dir`, a new directory (callers swap it in, e.g. pearl.train.stage._replace_dir).

    modules.json: PhraseTransformer (root), 1_Pooling (mean), 2_CharFeatures when the model has
    a character encoder, 3_Normalize. The prefix becomes the default prompt, so `encode` adds it."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    from pearl.model.st_modules import CharFeatures, PhraseTransformer

    with tempfile.TemporaryDirectory() as scratch:  # PhraseTransformer loads the backbone from a path
        hf_dir = Path(scratch) / "hf"
        model.backbone.save_pretrained(hf_dir)
        model.tokenizer.save_pretrained(hf_dir)
        transformer = PhraseTransformer(str(hf_dir), max_seq_length=backbone_max_seq_length(model))
        hidden = model.backbone.config.hidden_size
        modules = [transformer, Pooling(hidden, pooling_mode="mean")]
        if model.char is not None:
            char = CharFeatures(hidden, model.config.char_dim, model.config.char_weight)
            char.encoder.load_state_dict(model.char.state_dict())
            modules.append(char)
        modules.append(Normalize())
        prompts = {"query": model.config.prefix} if model.config.prefix else None
        st = SentenceTransformer(modules=modules, device="cpu", prompts=prompts,
                                 default_prompt_name="query" if prompts else None)
        st.save(str(out_dir))
    (out_dir / "pearl_model.json").write_text(json.dumps({**asdict(model.config), "dimension": model.dim}, indent=2) + "\n")


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


def is_pearl_export(path: str | Path) -> bool:
    modules = Path(path) / "modules.json"
    return modules.is_file() and "pearl.model.st_modules" in modules.read_text()


def load(path: str | Path, device: str | None = None):
    """The exported model as a SentenceTransformer: `pearl.load(path).encode(texts)`."""
    from sentence_transformers import SentenceTransformer

    if not is_pearl_export(path):
        raise PearlError(f"{path}: not a PEARL export (no modules.json naming pearl's modules); run `dvc repro average`")
    # Our module classes sit outside sentence_transformers.*, which v6 only imports when trusted;
    # they are this installed package's code, nothing is fetched.
    return SentenceTransformer(str(path), device=device, trust_remote_code=True)
