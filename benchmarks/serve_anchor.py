"""`pearl serve` against Infinity: the same all-MiniLM-L6-v2 on the same cores, through OpenAI's
embeddings route, then a soak of `pearl serve`.

1. Throughput. Each server runs alone (never both at once: on 2 cores their threads would fight):
   `pearl serve` on an index of that model, and Infinity (`infinity_emb v2`, its defaults, access
   log off as pearl's is) from its own environment (`bash benchmarks/setup_infinity_env.sh`).
   1, 8 and 64 client threads each send `POST /v1/embeddings` with 1–32 GeoNames names, vectors
   asked in base64 as the `openai` client asks for them (names and sizes
   drawn with --seed; no name sent twice in a run, so that no cache or shared batch flatters
   either) for --seconds after a warm-up. Texts/s, and p50 and p99 of the request latency.
2. Soak. `pearl serve` alone, 64 clients for --soak-seconds; one request in 8 is invalid (a blank
   text, a number, too many texts, a body that is not JSON, an unknown model). Counted: every 5xx,
   every lost answer (a transport error or timeout, a valid request not answered 200 with one vector
   per text, an invalid one not answered 4xx), and the server's resident memory every 5 s: the
   bar is at most 10% above where it settled (its value after the first minute).

The table is printed and written to --out (docs/serve.md includes it).

    bash benchmarks/setup_infinity_env.sh && python benchmarks/serve_anchor.py
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import httpx
import numpy as np

from pearl.index.phrase_index import Index
from pearl.model_ids import resolve_model
from serve_latency import free_port, start_server, wait_until_up
from verbs_scale import Names

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
INFINITY = Path(__file__).with_name(".infinity-venv") / "bin" / "infinity_emb"
INVALID = [{"input": ""}, {"input": [7]}, {"input": ["a"] * 1001}, "{input: [", {"input": "a", "model": "other"}]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    texts: int = 0
    server_errors: int = 0
    lost: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def start_infinity(model_dir: str, port: int) -> subprocess.Popen:
    command = [str(INFINITY), "v2", "--model-id", model_dir, "--served-model-name", "all-MiniLM-L6-v2",
               "--port", str(port), "--engine", "torch", "--device", "cpu", "--url-prefix", "/v1",
               "--no-bettertransformer", "--log-level", "warning"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wait_until_up(process, f"http://127.0.0.1:{port}/v1/models", "infinity_emb")
    return process


def requests_from(names: list[str], seed: int):
    """An endless stream of requests of 1–32 names; names are not repeated until all were sent."""
    rng = np.random.default_rng(seed)
    order = itertools.cycle(rng.permutation(len(names)).tolist())
    while True:
        yield [names[next(order)] for _ in range(int(rng.integers(1, 33)))]


def drive(base: str, model: str, clients: int, seconds: float, stream, invalid_every: int = 0) -> Tally:
    """`clients` threads posting requests from `stream` until `seconds` pass; every `invalid_every`-th is a bad one."""
    tally, take = Tally(), threading.Lock()
    deadline = time.monotonic() + seconds
    counter = itertools.count()

    def client() -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            while time.monotonic() < deadline:
                with take:
                    texts, number = next(stream), next(counter)
                bad = invalid_every and number % invalid_every == invalid_every - 1
                body = INVALID[number // invalid_every % len(INVALID)] if bad else \
                    {"model": model, "input": texts, "encoding_format": "base64"}
                began = time.perf_counter()
                try:
                    if isinstance(body, str):
                        answer = http.post("/v1/embeddings", content=body, headers={"content-type": "application/json"})
                    else:
                        answer = http.post("/v1/embeddings", json=body)
                except httpx.HTTPError:
                    with tally.lock:
                        tally.lost += 1
                    continue
                took = time.perf_counter() - began
                with tally.lock:
                    if answer.status_code >= 500:
                        tally.server_errors += 1
                    if bad:
                        tally.lost += not 400 <= answer.status_code < 500
                    elif answer.status_code != 200 or len(answer.json()["data"]) != len(texts):
                        tally.lost += 1
                    else:
                        tally.latencies.append(took)
                        tally.texts += len(texts)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def throughput_rows(name: str, base: str, model: str, args, stream) -> list[dict]:
    drive(base, model, 8, args.warmup, stream)  # the model's first calls, allocations, caches
    rows = []
    for clients in args.clients:
        began = time.perf_counter()
        tally = drive(base, model, clients, args.seconds, stream)
        elapsed = time.perf_counter() - began
        ms = np.array(tally.latencies) * 1000
        rows.append({"server": name, "clients": clients, "texts_per_s": tally.texts / elapsed,
                     "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
                     "requests": len(ms), "server_errors": tally.server_errors, "lost": tally.lost})
        print(f"{name}, {clients} clients: {rows[-1]['texts_per_s']:.0f} texts/s, p50 {rows[-1]['p50_ms']:.0f} ms, "
              f"p99 {rows[-1]['p99_ms']:.0f} ms", flush=True)
    return rows


def soak(base: str, model: str, pid: int, args, stream) -> dict:
    samples, stop = [], threading.Event()

    def sample() -> None:
        began = time.monotonic()
        while not stop.wait(5):
            samples.append((time.monotonic() - began, rss_mb(pid)))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        tally = drive(base, model, 64, args.soak_seconds, stream, invalid_every=8)
    finally:
        stop.set()
        sampler.join()
    settled = [mb for t, mb in samples if t >= 60]
    return {"seconds": args.soak_seconds, "valid_answered": len(tally.latencies), "server_errors": tally.server_errors,
            "lost": tally.lost, "rss_settled_mb": settled[0] if settled else None,
            "rss_max_after_mb": max(settled) if settled else None, "rss_last_mb": samples[-1][1] if samples else None}


def markdown(rows: list[dict], soaked: dict, args) -> str:
    by = {(row["server"], row["clients"]): row for row in rows}
    lines = [f"Measured {date.today()} by `python benchmarks/serve_anchor.py` on {os.cpu_count()} CPU cores: "
             f"all-MiniLM-L6-v2 behind `POST /v1/embeddings`, each server alone; requests of 1–32 GeoNames names "
             f"(seed {args.seed}), {args.seconds:g} s per row after a {args.warmup:g} s warm-up.", "",
             "| clients | pearl serve texts/s | Infinity texts/s | ratio | pearl p50 / p99 ms | Infinity p50 / p99 ms |",
             "|---:|---:|---:|---:|---:|---:|"]
    for clients in args.clients:
        ours, theirs = by[("pearl serve", clients)], by.get(("Infinity", clients))
        if theirs is None:
            lines.append(f"| {clients} | {ours['texts_per_s']:.0f} | | | {ours['p50_ms']:.0f} / {ours['p99_ms']:.0f} | |")
            continue
        lines.append(f"| {clients} | {ours['texts_per_s']:.0f} | {theirs['texts_per_s']:.0f} | "
                     f"{ours['texts_per_s'] / theirs['texts_per_s']:.2f} | {ours['p50_ms']:.0f} / {ours['p99_ms']:.0f} | "
                     f"{theirs['p50_ms']:.0f} / {theirs['p99_ms']:.0f} |")
    if soaked:
        growth = (soaked["rss_max_after_mb"] / soaked["rss_settled_mb"] - 1) * 100 if soaked["rss_settled_mb"] else None
        lines += ["", f"Soak of `pearl serve`, {soaked['seconds']:g} s, 64 clients, one request in 8 invalid: "
                      f"{soaked['valid_answered']:,} valid requests answered, {soaked['server_errors']} 5xx, "
                      f"{soaked['lost']} lost answers; resident memory {soaked['rss_settled_mb']:.0f} MB after the "
                      f"first minute, at most {soaked['rss_max_after_mb']:.0f} MB after it "
                      f"({growth:+.1f}%), {soaked['rss_last_mb']:.0f} MB at the end."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=lambda s: [int(c) for c in s.split(",")], default=[1, 8, 64])
    parser.add_argument("--seconds", type=float, default=30.0, help="per row")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--soak-seconds", type=float, default=300.0, help="0: no soak")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-infinity", action="store_true", help="pearl serve's rows only")
    parser.add_argument("--out", type=Path, default=Path("metrics/serve_anchor.md"))
    args = parser.parse_args()
    if not args.no_infinity and not INFINITY.is_file():
        sys.exit(f"{INFINITY} is missing: run `bash benchmarks/setup_infinity_env.sh` (or pass --no-infinity)")

    names = Names().left
    stream = requests_from(names, args.seed)
    model_dir = str(resolve_model(MODEL, "--model"))
    rows, soaked = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        index_dir = Path(scratch) / "index"
        Index.build(names[:100], model=MODEL).save(index_dir)  # /v1/embeddings does not search it
        port = free_port()
        server = start_server(index_dir, port)
        try:
            base = f"http://127.0.0.1:{port}"
            served = httpx.get(f"{base}/health").json()["model"]
            rows += throughput_rows("pearl serve", base, served, args, stream)
            if args.soak_seconds:
                print(f"soak, {args.soak_seconds:g} s …", flush=True)
                soaked = soak(base, served, server.pid, args, stream)
        finally:
            server.terminate()
            server.wait(timeout=60)
    if not args.no_infinity:
        port = free_port()
        server = start_infinity(model_dir, port)
        try:
            rows += throughput_rows("Infinity", f"http://127.0.0.1:{port}", "all-MiniLM-L6-v2", args, stream)
        finally:
            server.terminate()
            server.wait(timeout=60)

    table = markdown(rows, soaked, args)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((args.out, table), (args.out.with_suffix(".json"),
                                           json.dumps({"rows": rows, "soak": soaked}, indent=2) + "\n")):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


if __name__ == "__main__":
    main()
