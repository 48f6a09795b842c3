"""Offline resolution of hub ids: a model folder zipped and split over several PyPI packages."""

import hashlib
import io
import zipfile
from importlib import metadata

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
