"""The PEARL phrase model: backbone (masked mean pooling, or BURT's CLS or max) ⊕ character encoder, plus the type head.

The embedding is the concatenation (u, v) of the pooled backbone vector and the character
vector (section 3.2), each L2-normalised and v weighted by `char_weight`; the type head is a
linear layer from (u, v) to the 95 phrase types (equation 1). Similarities are cosines of the
concatenation.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from pearl.errors import MissingModelError, PearlError, first_line
from pearl.labels import NUM_LABELS
from pearl.model import CONFIG
from pearl.model.char_encoder import CharEncoder, char_ids, combine
from pearl.model.finetuned import EXTRA_WEIGHTS, check_finetuned
from pearl.model_ids import load_failure, resolve_model


@dataclass(frozen=True)
class ModelConfig:
    backbone: str  # the HF id or directory the backbone was initialised from
    prefix: str
    max_length: int
    char_encoder: bool
    char_dim: int
    char_weight: float
    pooling: str = "mean"  # mean | cls | max; models saved before it was a choice pooled by mean


def saved_config(config: ModelConfig) -> dict:
    """The config as pearl_model.json holds it: `pooling` only where it is not mean, so that a mean-pooled model is
    saved byte for byte as before pooling was a choice (and the DAG's recorded outputs stay valid)."""
    fields = asdict(config)
    if fields["pooling"] == "mean":
        del fields["pooling"]
    return fields


def mean_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
    return (token_embeddings * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """One vector per text, as sentence-transformers' Pooling of the same mode computes it in the export."""
    if pooling == "cls":
        return token_embeddings[:, 0]
    if pooling == "max":
        padding = (attention_mask == 0).unsqueeze(-1)
        return token_embeddings.masked_fill(padding, torch.finfo(token_embeddings.dtype).min).max(1).values
    return mean_pool(token_embeddings, attention_mask)


class PhraseTokenizer:
    """Texts → backbone tokens (with the prefix) and character ids (without); picklable, so
    DataLoader workers can tokenise."""

    def __init__(self, tokenizer, prefix: str, max_length: int, with_chars: bool):
        self.tokenizer, self.prefix, self.max_length, self.with_chars = tokenizer, prefix, max_length, with_chars

    def __call__(self, texts: list[str]) -> dict[str, torch.Tensor]:
        features = dict(self.tokenizer(
            [self.prefix + t for t in texts], padding=True, truncation=True,
            max_length=self.max_length, return_tensors="pt",
        ))
        if self.with_chars:
            features["char_ids"] = char_ids(texts)  # the character encoder never sees the prefix
        return features


class PhraseModel(nn.Module):
    def __init__(self, config: ModelConfig, backbone_path: str | None = None):
        """`backbone_path` overrides where the backbone weights are read (a saved fine-tuned copy)."""
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.config = config
        source = backbone_path or resolve_model(config.backbone, "model.backbone")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source)
            self.backbone = AutoModel.from_pretrained(source)
        except Exception as error:  # unknown id, hub unreachable, broken directory
            raise load_failure("model.backbone", backbone_path or config.backbone, error) from None
        hidden = self.backbone.config.hidden_size
        self.char = CharEncoder(config.char_dim) if config.char_encoder else None
        self.dim = hidden + (config.char_dim if config.char_encoder else 0)
        self.type_head = nn.Linear(self.dim, NUM_LABELS)
        self.tokenize = PhraseTokenizer(self.tokenizer, config.prefix, config.max_length, config.char_encoder)

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Phrase vectors (u/|u|, w · v/|v|)."""
        inputs = {k: v for k, v in features.items() if k != "char_ids"}
        output = self.backbone(**inputs)
        u = pool(output.last_hidden_state, features["attention_mask"], self.config.pooling)
        return combine(u, None if self.char is None else self.char(features["char_ids"]), self.config.char_weight)

    @torch.no_grad()
    def inference(self, texts: list[str], batch_size: int = 128) -> torch.Tensor:
        """forward() on all texts in eval mode (no dropout), batch by batch; float32 on CPU."""
        device = next(self.parameters()).device
        was_training = self.training
        self.eval()
        chunks = []
        for start in range(0, len(texts), batch_size):
            features = {k: v.to(device) for k, v in self.tokenize(texts[start:start + batch_size]).items()}
            chunks.append(self(features).float().cpu())
        self.train(was_training)
        return torch.cat(chunks) if chunks else torch.zeros((0, self.dim))

    def encode(self, texts: list[str], batch_size: int = 128) -> torch.Tensor:
        """Normalised float32 vectors, in input order."""
        return nn.functional.normalize(self.inference(texts, batch_size), dim=-1)

    def save(self, directory: Path) -> None:
        """Backbone in HF format, the rest in pearl_heads.pt, the config in pearl_model.json."""
        directory.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        heads = {"type_head": self.type_head.state_dict()}
        if self.char is not None:
            heads["char"] = self.char.state_dict()
        torch.save(heads, directory / EXTRA_WEIGHTS)
        (directory / CONFIG).write_text(json.dumps(saved_config(self.config), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> PhraseModel:
        check_finetuned(directory)
        try:
            # the small files first: a damaged one fails before the backbone loads
            config = ModelConfig(**json.loads((directory / CONFIG).read_text()))
            heads = torch.load(directory / EXTRA_WEIGHTS, map_location="cpu", weights_only=True)
            model = cls(config, backbone_path=str(directory))
            model.type_head.load_state_dict(heads["type_head"])
            if model.char is not None:
                model.char.load_state_dict(heads["char"])
        except PearlError:
            raise
        except Exception as error:  # truncated weights, edited config
            raise MissingModelError(f"{directory}: the saved model is unreadable ({type(error).__name__}: "
                                    f"{first_line(error)}); run `dvc repro train`") from None
        return model
