"""The sentence-transformers export: loading without pearl, what pearl.load trusts, the type head."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pearl.errors import MissingModelError, PearlError
from pearl.labels import ENTITY_TYPES, LABELS, LEX_TYPES
from pearl.model.export import SHIPPED, TYPE_HEAD, export_sentence_transformer, is_pearl_export, load
from pearl.model.phrase_model import ModelConfig, PhraseModel

TEXTS = ["new york times", "NYTimes", "Zürich café 🎉", "", "grown man", "x" * 300]

# Plain sentence-transformers with pearl (and the pipeline's dvc and spaCy) unimportable: the
# shipped code is all the export has.
WITHOUT_PEARL = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pearl", "dvc", "spacy"):
            raise ImportError(f"{name} is blocked")
sys.meta_path.insert(0, Blocked())
import numpy as np
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], trust_remote_code=True)
assert type(model[0]).__module__.startswith("transformers_modules."), type(model[0]).__module__
np.save(sys.argv[2], model.encode(sys.argv[3:]))
"""

# A module whose import would leave a marker: proof that loading ran the directory's code.
MARKER_CODE = """
from pathlib import Path
Path({marker!r}).write_text("imported")
from sentence_transformers.base.modules import Module
class Evil(Module):
    pass
class PhraseTransformer(Module):
    pass
"""


@pytest.fixture(scope="module")
def tiny_model(tiny_encoder):
    torch.manual_seed(0)
    model = PhraseModel(ModelConfig(str(tiny_encoder), "query: ", 64, True, 8, 0.5))
    torch.nn.init.normal_(model.char.project.weight)
    torch.nn.init.normal_(model.type_head.weight, std=2.0)  # a random head spread over several labels
    return model.eval()


@pytest.fixture(scope="module")
def export(tiny_model, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("export") / "pearl"
    export_sentence_transformer(tiny_model, directory)
    return directory


def _copy(export: Path, to: Path) -> Path:
    shutil.copytree(export, to)
    return to


def _modules(directory: Path) -> list[dict]:
    return json.loads((directory / "modules.json").read_text())


def test_export_loads_in_plain_sentence_transformers_without_pearl(export, tmp_path):
    assert [m["type"] for m in _modules(export)][::2] == ["st_modules.PhraseTransformer", "st_modules.CharFeatures"]
    package = Path(__file__).resolve().parents[1] / "pearl" / "model"
    for name in SHIPPED:  # copies of the package's own files, not a second implementation
        assert (export / name).read_bytes() == (package / name).read_bytes()
    out = tmp_path / "vectors.npy"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    run = subprocess.run([sys.executable, "-c", WITHOUT_PEARL, str(export), str(out), *TEXTS],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    plain = np.load(out)
    ours = load(export).encode(TEXTS)
    assert plain.shape == ours.shape == (len(TEXTS), 32 + 8)
    assert np.abs(plain - ours).max() < 1e-6


def test_the_spelling_block_gives_3_grams_a_fixed_share_of_every_cosine(tiny_model, export, tmp_path):
    from sklearn.feature_extraction.text import HashingVectorizer

    spelled = tmp_path / "spelled"
    export_sentence_transformer(tiny_model, spelled, spelling_weight=0.3, spelling_features=64)
    assert [m["type"] for m in _modules(spelled)][-2:] == ["st_modules.SpellingNgrams",
                                                            "sentence_transformers.base.modules.normalize.Normalize"]
    texts = ["acme corp", "Acme Corp", "Acme Corporation", "zebra"]
    vectors, plain = load(spelled).encode(texts), load(export).encode(texts)
    grams = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 3), n_features=64, alternate_sign=False,
                              norm="l2").transform(texts).toarray()
    assert vectors.shape == (4, 32 + 8 + 64) == (4, json.loads((spelled / "pearl_model.json").read_text())["dimension"])
    assert np.allclose(vectors @ vectors.T, 0.7 * (plain @ plain.T) + 0.3 * (grams @ grams.T), atol=1e-5)
    # what sentence-transformers alone computes from the shipped code
    out = tmp_path / "vectors.npy"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    run = subprocess.run([sys.executable, "-c", WITHOUT_PEARL, str(spelled), str(out), *texts],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert np.abs(np.load(out) - vectors).max() < 1e-6


def test_export_without_spelling_is_the_export_at_weight_0(tiny_model, export, tmp_path):
    script = Path(__file__).resolve().parents[1] / "scripts" / "export_without_spelling.py"
    spelled, copy = tmp_path / "spelled", tmp_path / "teacher"
    export_sentence_transformer(tiny_model, spelled, spelling_weight=0.3, spelling_features=64)
    run = subprocess.run([sys.executable, str(script), str(spelled), str(copy)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    texts = ["acme corp", "Acme Corporation", "zebra"]
    assert np.array_equal(load(copy).encode(texts), load(export).encode(texts))
    assert json.loads((copy / "pearl_model.json").read_text())["dimension"] == 32 + 8
    again = subprocess.run([sys.executable, str(script), str(copy), str(tmp_path / "again")], capture_output=True,
                           text=True)
    assert again.returncode != 0 and "has no SpellingNgrams module" in again.stderr


def _write_modules(directory: Path, modules: list[dict]) -> None:
    (directory / "modules.json").write_text(json.dumps(modules))


def test_is_pearl_export_reads_modules_json_not_a_substring(export, tmp_path):
    assert is_pearl_export(export) and is_pearl_export(str(export))
    mention = _copy(export, tmp_path / "mention")
    _write_modules(mention, [{"idx": 0, "name": "st_modules.PhraseTransformer", "path": "",
                              "type": "modeling_other.PhraseTransformer", "note": "pearl.model.st_modules"}])
    foreign = _copy(export, tmp_path / "foreign")
    _write_modules(foreign, [*_modules(export), {"idx": 4, "name": "4", "path": "", "type": "modeling_other.Evil"}])
    not_first = _copy(export, tmp_path / "not-first")
    _write_modules(not_first, _modules(export)[1:] + _modules(export)[:1])
    corrupt = _copy(export, tmp_path / "corrupt")
    (corrupt / "modules.json").write_text(json.dumps(_modules(export))[:-5])
    bad_config = _copy(export, tmp_path / "bad-config")
    (bad_config / "pearl_model.json").write_text("{")
    no_config = _copy(export, tmp_path / "no-config")
    (no_config / "pearl_model.json").unlink()
    for directory in (mention, foreign, not_first, corrupt, bad_config, no_config, tmp_path / "missing"):
        assert not is_pearl_export(directory), directory.name
    with pytest.raises(PearlError, match=r"corrupt/modules.json: not a PEARL export \(invalid JSON") as error:
        load(corrupt)
    assert "\n" not in str(error.value)
    with pytest.raises(MissingModelError, match=r"no-config: not a PEARL export \(no pearl_model.json\)"):
        load(no_config)


def test_pearl_load_never_runs_code_from_the_directory(export, tmp_path):
    from pearl.embedder import Embedder
    from pearl.model.st_loader import PearlSentenceTransformer

    marker = tmp_path / "imported"
    code = MARKER_CODE.format(marker=str(marker))
    tampered = _copy(export, tmp_path / "tampered")  # our refs, but the shipped files replaced
    for name in SHIPPED:
        (tampered / name).write_text(code)
    assert np.abs(load(tampered).encode(TEXTS) - load(export).encode(TEXTS)).max() < 1e-6
    assert Embedder(str(tampered), "", 8, 64, "cpu").embed(TEXTS).shape == (len(TEXTS), 32 + 8)

    foreign = _copy(export, tmp_path / "foreign")
    (foreign / "modeling_evil.py").write_text(code)
    _write_modules(foreign, [*_modules(export)[:3], {"idx": 3, "name": "3", "path": "", "type": "modeling_evil.Evil"}])
    with pytest.raises(PearlError, match="modeling_evil.Evil"):
        load(foreign)
    with pytest.raises(PearlError, match="'modeling_evil.Evil' is neither PEARL's nor sentence-transformers'"):
        PearlSentenceTransformer(str(foreign))  # the loader refuses it even past load's check
    with pytest.raises(PearlError, match="could not be loaded"):
        Embedder(str(foreign), "", 8, 64, "cpu")  # not a PEARL export: nothing trusted either
    assert not marker.exists()


def test_predict_types_applies_the_trained_head_to_the_training_vector(tiny_model, export):
    from pearl.types.predict import predict_types

    frame = predict_types(export, TEXTS[:5], batch_size=2)
    with torch.no_grad():  # what training feeds the head: PhraseModel.forward, before any normalisation
        probs = torch.softmax(tiny_model.type_head(tiny_model.inference(TEXTS[:5])), dim=-1).double()
    assert frame["text"].to_list() == TEXTS[:5]
    assert frame["label"].to_list() == [LABELS[i] for i in probs.argmax(-1).tolist()]
    assert len(set(frame["label"])) > 1
    grid = probs.reshape(len(probs), len(LEX_TYPES), len(ENTITY_TYPES))  # label id = lex · 19 + entity
    lex, entity = grid.sum(2), grid.sum(1)
    assert torch.allclose(lex.sum(1), torch.ones(len(probs), dtype=torch.double))
    assert frame["lex_type"].to_list() == [LEX_TYPES[i] for i in lex.argmax(1).tolist()]
    assert frame["entity_type"].to_list() == [ENTITY_TYPES[i] for i in entity.argmax(1).tolist()]
    for column, want in (("label_prob", probs.max(1).values), ("lex_prob", lex.max(1).values),
                         ("entity_prob", entity.max(1).values)):
        assert np.allclose(frame[column].to_numpy(), want.numpy(), atol=1e-5), column
    assert predict_types(export, []).columns == frame.columns


def test_predict_types_needs_a_pearl_export(export, tiny_encoder, tmp_path):
    from pearl.types.predict import predict_types

    headless = _copy(export, tmp_path / "headless")
    (headless / TYPE_HEAD).unlink()
    for directory in (tiny_encoder, headless, tmp_path / "missing"):
        with pytest.raises(MissingModelError, match="phrase types need a PEARL export") as error:
            predict_types(directory, ["new york"])
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("pooling", ["cls", "max"])
def test_burts_other_poolings_export_the_vectors_pearl_trains(pooling, tiny_encoder, tmp_path):
    torch.manual_seed(0)
    model = PhraseModel(ModelConfig(str(tiny_encoder), "", 64, True, 8, 0.5, pooling)).eval()
    export_sentence_transformer(model, tmp_path / "export")
    assert json.loads((tmp_path / "export" / "1_Pooling" / "config.json").read_text())["pooling_mode"] == pooling
    texts = TEXTS[:3] + ["a b", "a much longer phrase than the others"]  # padding, which max pooling must skip
    assert np.abs(load(tmp_path / "export").encode(texts) - model.encode(texts).numpy()).max() < 1e-5
    assert json.loads((tmp_path / "export" / "pearl_model.json").read_text())["pooling"] == pooling
    model.save(tmp_path / "saved")
    assert PhraseModel.load(tmp_path / "saved").config.pooling == pooling


def test_a_mean_pooled_model_saves_the_config_it_saved_before_pooling_was_a_choice(tiny_model, export, tmp_path):
    assert "pooling" not in json.loads((export / "pearl_model.json").read_text())
    tiny_model.save(tmp_path / "saved")
    assert "pooling" not in json.loads((tmp_path / "saved" / "pearl_model.json").read_text())
    assert PhraseModel.load(tmp_path / "saved").config.pooling == "mean"
