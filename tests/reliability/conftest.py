"""A scratch pearl project with every artifact made once, and the tools to break one copy of it per case.

Copies share the project's files through hard links: pearl replaces a file by renaming a new one
over it, never by writing in place, so a run in one copy cannot change another. A case breaks its
copy the same way (`replace`), never by editing a linked file in place.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

PEARL = str(Path(sys.executable).parent / "pearl")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"  # resolves offline to its PyPI copy
LONG = "long " * 20_000  # 100,000 characters
# odd but valid text: right-to-left marks, combining sequences, NUL, a ZWJ emoji, and a lone surrogate
# (JSON "\ud800", which is not a character at all)
ODD_SENTENCES = [
    "The city of Cairo (\u200fالقاهرة\u200f) is the capital of Egypt.",
    "The cafe\u0301 serves naïve art and Zu\u0308rich chocolate.",
    "A NUL byte\u0000 sits inside the annual report of the company.",
    "The family \U0001F468\u200D\U0001F469\u200D\U0001F467 visited the capital of Egypt.",
    "A lone \ud800 surrogate sits inside the annual report of the company.",
]
SENTENCES = [
    "The New York Times is a newspaper in New York City.",
    "Stanley Kubrick directed the film in 1968.",
    "The capital of France is Paris, and the capital of Japan is Tokyo.",
    "The annual report of the company was published in New York City.",
    "Stanley Kubrick directed another film about the capital of France.",
]
# blocks every outgoing connection in a pearl process and records the attempt
NO_NETWORK = '''
import os, socket, sys, traceback
def _refuse(self, address, *args, **kwargs):
    caller = [f"{frame.filename.rsplit('/', 2)[-1]}:{frame.lineno}" for frame in traceback.extract_stack()[-12:-1]]
    with open(os.environ["PEARL_TEST_CONNECTIONS"], "a") as log:
        log.write(f"{address!r} from `{' '.join(sys.argv[1:])}` at {' < '.join(reversed(caller))}\\n")
    raise OSError("network blocked by the test")
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = lambda address, *a, **k: _refuse(None, address)
'''


def toy_benchmark(folder: Path) -> None:
    """One small valid file per benchmark task the suite breaks."""
    (folder / "turney").mkdir(parents=True)
    (folder / "turney" / "turney.txt").write_text(
        "double star | binary | double | star | dual | lumen | neutralism\n"
        "bass fiddle | contrabass | bass | fiddle | pitch | violin | speedway\n")
    (folder / "bird").mkdir()
    rows = [("access information", "information access", 0.62), ("acid rain", "rain", 0.4), ("acid rain", "banana", 0.05)]
    (folder / "bird" / "bird.txt").write_text(
        "pair\tterm1\tterm2\tterm2: unigram or bigram\tsource\trelation\trelatedness score\tpos\n"
        + "".join(f"x\t{a}\t{b}\tbigram\ts\tNone\t{r}\tn-n\n" for a, b, r in rows))
    (folder / "ppdb").mkdir()
    # 600 pairs: enough that each probe seed takes a while; test_interrupts.py stops the bench while they run
    pairs = [pair for i in range(300) for pair in ([f"big dog {i}", f"large dog {i}", "pos"], [f"big dog {i}", f"small cat {i}", "neg"])]
    (folder / "ppdb" / "ppdb.json").write_text(json.dumps(pairs))
    (folder / "yago").mkdir()
    (folder / "yago" / "yago_test_samples.txt").write_text("NYC\tNew York City\nBig Apple\tNew York City\nParis\tParis\n")
    (folder / "umls").mkdir()
    (folder / "umls" / "umls_test_samples.txt").write_text("heart attack\tMyocardial infarction\nflu\tInfluenza\n")
    # three mentions of each type: enough distinct phrases for figure4's silhouette
    (folder / "conll2003").mkdir()
    (folder / "conll2003" / "test.json").write_text("".join(
        json.dumps({"sentences": [[person, "visited", city, "with", company]], "ner": [[[0, 0, "PER"], [2, 2, "LOC"], [4, 4, "ORG"]]]}) + "\n"
        for person, city, company in [("Obama", "Paris", "Google"), ("Merkel", "Berlin", "Siemens"), ("Macron", "Lyon", "Renault")]))
    (folder / "bc5cdr").mkdir()
    (folder / "bc5cdr" / "test.json").write_text("".join(
        json.dumps({"sentences": [[chemical, "induced", disease]], "ner": [[[0, 0, "Chemical"], [2, 2, "Disease"]]]}) + "\n"
        for chemical, disease in [("Aspirin", "asthma"), ("Naloxone", "hypotension"), ("Cocaine", "seizures")]))


def toy_general(folder: Path) -> None:
    (folder / "word-sim").mkdir(parents=True)
    (folder / "word-sim" / "EN-SIMLEX-999.txt").write_text("old\tnew\t1.58\nsmart\tintelligent\t9.2\nhard\tdifficult\t8.77\n")
    (folder / "stsbenchmark").mkdir()
    (folder / "stsbenchmark" / "sts-test.csv").write_text("".join(
        f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score}\t{left}\t{right}\n" for i, (score, left, right) in enumerate(
            [(5.0, "A girl is styling her hair.", "A girl is brushing her hair."),
             (0.5, "A man is playing a flute.", "A woman is slicing an onion."),
             (2.5, "A dog runs in a field.", "A cat sits on a wall.")])))
    (folder / "stsbenchmark" / "sts-dev.csv").write_text("".join(  # the tune task typing keeps out of training
        f"main-captions\tMSRvid\t2012dev\t{i:04d}\t{score}\t{left}\t{right}\n" for i, (score, left, right) in enumerate(
            [(4.5, "A boy is riding a bike.", "A child rides a bicycle."),
             (0.2, "A woman is cooking rice.", "A plane lands at night.")])))


def toy_short_text(folder: Path) -> None:
    for split in ("train", "dev", "test"):
        atis = folder / "atis" / split
        atis.mkdir(parents=True)
        (atis / "seq.in").write_text("show flights to boston\nwhat does fare code q mean\nflights from denver\nfare codes\n" * 3)
        (atis / "label").write_text("atis_flight\natis_abbreviation\natis_flight\natis_abbreviation\n" * 3)


@dataclass
class Project:
    root: Path

    def copy(self, to: Path) -> Path:
        shutil.copytree(self.root, to, copy_function=os.link, symlinks=True)
        return to


def replace(path: Path, data: bytes | str) -> None:
    """Give `path` new content without touching the file it may share with other copies."""
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def pearl(cwd: Path, *args: str, preexec=None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the real `pearl` command in `cwd`, with no network (attempts are logged to cwd/../connections.log)."""
    return subprocess.run([PEARL, *map(str, args)], cwd=cwd, env=offline_env(cwd), capture_output=True, text=True,
                          preexec_fn=preexec, timeout=timeout)


# `pearl` commands one after another in one Python process: each pays the model libraries' import (11 s on a
# 2-core CI machine) once instead of once per command. It exits with the first failure's code, at once unless
# keep_going; a line "$ pearl …" on stderr opens each command's output. The project is built this way and
# test_interrupts re-runs its stages in processes of their own: a stage whose bytes depend on what ran before it
# in the process (a library setting left behind) fails there.
CHAIN = """
import json, sys
from pearl.cli import main
commands, keep_going = json.loads(sys.argv[1]), sys.argv[2] == "1"
failed = 0
for args in commands:
    print("$ pearl " + " ".join(args), file=sys.stderr, flush=True)
    try:
        main(args)
    except SystemExit as stop:
        failed = failed or stop.code
        if stop.code and not keep_going:
            break
sys.exit(failed)
"""


def pearl_chain(cwd: Path, *commands: tuple[str, ...], keep_going: bool = False,
                timeout: int = 1200) -> subprocess.CompletedProcess:
    """`pearl(cwd, *command)` for each command in turn, in one process, offline as `pearl` is."""
    return subprocess.run([sys.executable, "-c", CHAIN, json.dumps([list(map(str, c)) for c in commands]),
                           "1" if keep_going else "0"],
                          cwd=cwd, env=offline_env(cwd), capture_output=True, text=True, timeout=timeout)


def offline_env(cwd: Path) -> dict:
    blocker = cwd.parent / "no-network"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(NO_NETWORK)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_", "HUGGINGFACE"))}
    env.update(PYTHONPATH=str(blocker), PEARL_TEST_CONNECTIONS=str(cwd.parent / "connections.log"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return env


def commit_all(root: Path) -> None:
    """Make `root` a git repository with every file committed: DVC and the experiments commands need one."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["git", "init", "-q"], [*git, "add", "-A"], [*git, "commit", "-qm", "scratch"]):
        subprocess.run(command, cwd=root, check=True, capture_output=True)


def connections(cwd: Path) -> list[str]:
    log = cwd.parent / "connections.log"
    return log.read_text().splitlines() if log.is_file() else []


def tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file under `root` with its size, modification time and inode: any write or rename shows."""
    listing = {}
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and ".git" not in path.parts:
            stat = path.stat()
            listing[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    return listing


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """Non-zero exit, no traceback, and exactly one `error: …` line, the last on stderr."""
    assert result.returncode != 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr[-3000:]
    return errors[0]


def scratch_params(root: Path) -> dict:
    """Inputs inside the project, named relatively, so that a copy of the project is self-contained."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    data = root / "inputs"
    data.mkdir()
    corpus = data / "corpus.jsonl"
    # 30 copies: enough sentences that parse is still at work when tests/reliability/test_interrupts.py stops it
    corpus.write_text("".join(json.dumps({"text": " ".join(SENTENCES + ODD_SENTENCES)}) + "\n" for _ in range(30))
                      + json.dumps({"text": LONG}) + "\n")
    toy_benchmark(data / "bench")
    toy_short_text(data / "short-text")
    toy_general(data / "general")
    params["corpus"].update(source="files", files=["inputs/corpus.jsonl"])
    params["parse"]["n_process"] = 1
    params["augment"]["nltk_data"] = str(ROOT / "nltk_data")  # git-ignored: prepared by scripts/setup.sh
    params["model"].update(teacher=MINILM)
    params["train"].update(batch_size=2, max_steps=6, num_workers=0, checkpoint_every=2)
    params["bench"].update(data_dir="inputs/bench", short_text_dir="inputs/short-text", general_dir="inputs/general",
                           tasks=["turney", "bird", "ppdb", "yago", "umls", "conll2003", "bc5cdr", "atis_s", "simlex", "stsb"],
                           string_tasks=["turney", "bird", "yago", "umls"], tune_tasks=["stsb_dev"], reference_models=[MINILM],
                           ppdb_seeds=1, atis_seeds=1)
    return params


FRONT_HALF = ["corpus", "parse", "typing", "augment", "candidates", "teacher", "negatives", "train", "average"]


@pytest.fixture(scope="session")
def project(tmp_path_factory, worker_id) -> Project:
    """Every stage run once, for real, on a small corpus with odd unicode and a 100,000-character document.
    Under pytest-xdist the first worker builds it in the session's shared folder and the others wait for it."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    root, built = shared / "reliability" / "project", shared / "reliability" / "built"
    with FileLock(shared / "reliability.lock"):
        if not built.exists():
            _build(root)
            built.touch()
    return Project(root)


def _build(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)  # a worker that failed to build it left half a project
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if (name.startswith(("data/", "metrics/", "models/")) and not name.startswith("data/reference/")
                and not name.endswith(".gitignore") or name == "dvc.lock"):
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    (root / "params.yaml").write_text(yaml.safe_dump(scratch_params(root), sort_keys=False))
    result = pearl_chain(root, *([stage] for stage in FRONT_HALF))
    assert result.returncode == 0, result.stderr[-3000:]
    assert connections(root) == [], "the default pipeline tried to reach the network"
