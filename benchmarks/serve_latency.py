"""`pearl serve` against the Python API in-process: latency of /link and throughput of 8 clients.

The index holds the 10,033 Vital Articles titles (the offline corpus); the mentions are the 613
aliases its leads give ("Formosa", "Hansen's disease"), then the titles in a shuffled order, none
sent twice in a run: a mention repeated across requests would be encoded once in a shared batch,
which would flatter batching. One run measures, side by side:
- /link latency p50/p95 for requests of 1 and of 100 mentions, one client at a time, against
  `pearl.link` on the same mentions in this process;
- throughput (mentions/s) of 8 concurrent clients sending 100 mentions per request, against the
  same requests through `pearl.link` from 8 threads and from 1 (the better in-process figure is
  the one compared: the target is HTTP ≥ 0.8× in-process).
The server is a real `pearl serve` process on localhost; the table is printed and written to
`--out` (the docs include it).

    python benchmarks/serve_latency.py                                  # models/pearl
    python benchmarks/serve_latency.py --model all-MiniLM-L6-v2
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import httpx
import numpy as np

from pearl.bench.wiki_aliases import load_wiki_aliases
from pearl.index.phrase_index import Index
from pearl.linking.link import link

CLIENTS = 8


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(process: subprocess.Popen, url: str, name: str) -> None:
    """Until `url` answers; the script exits in one line if the server exits or stays silent for 300 s."""
    deadline = time.monotonic() + 300
    while True:
        if process.poll() is not None:
            sys.exit(f"{name} exited: {process.stderr.read().strip()[-2000:]}")
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                process.terminate()
                sys.exit(f"{name} did not answer within 300 s")
            time.sleep(0.5)


def start_server(index_dir: Path, port: int) -> subprocess.Popen:
    command = [str(Path(sys.executable).with_name("pearl")), "serve", "--index", str(index_dir), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_until_up(server, f"http://127.0.0.1:{port}/health", "pearl serve")
    return server


def batches(pool: list[str], size: int, count: int) -> list[list[str]]:
    """`count` requests of `size` mentions taken off the front of `pool` (+1 request: the warm-up)."""
    if (count + 1) * size > len(pool):
        sys.exit(f"{count + 1} requests of {size} need more mentions than the {len(pool)} left: ask for fewer")
    taken = [pool.pop(0) for _ in range((count + 1) * size)]
    return [taken[i:i + size] for i in range(0, len(taken), size)]


def latencies(call, requests: list[list[str]]) -> np.ndarray:
    call(requests[0])  # warm-up, not timed
    times = []
    for request in requests[1:]:
        began = time.perf_counter()
        call(request)
        times.append(time.perf_counter() - began)
    return np.array(times) * 1000


def throughput(call, requests: list[list[str]], clients: int) -> float:
    """Mentions per second with `clients` callers sharing `requests`."""
    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(call, requests))
    return sum(map(len, requests)) / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/pearl")
    parser.add_argument("--single", type=int, default=200, help="requests of 1 mention")
    parser.add_argument("--hundred", type=int, default=40, help="requests of 100 mentions, one client")
    parser.add_argument("--concurrent", type=int, default=48, help="requests of 100 mentions shared by 8 clients")
    parser.add_argument("--out", type=Path, default=Path("metrics/serve_latency.md"))
    args = parser.parse_args()
    if args.model == "models/pearl" and not Path(args.model).is_dir():
        sys.exit("models/pearl is missing: run `dvc repro average`, or pass --model all-MiniLM-L6-v2")

    aliases = load_wiki_aliases()
    titles = list(aliases.dictionary)
    random.Random(0).shuffle(titles)
    pool = list(dict.fromkeys(aliases.mentions + titles))
    with tempfile.TemporaryDirectory() as scratch:
        index_dir = Path(scratch) / "titles"
        print(f"indexing {len(aliases.dictionary)} titles with {args.model} …", flush=True)
        index = Index.build(aliases.dictionary, model=args.model)
        index.save(index_dir)
        port = free_port()
        server = start_server(index_dir, port)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
                def over_http(request: list[str]) -> None:
                    response = client.post("/link", json={"mentions": request, "k": 5})
                    response.raise_for_status()

                def in_process(request: list[str]) -> None:
                    link(index, request, k=5)

                rows = []
                for size, count in ((1, args.single), (100, args.hundred)):
                    requests = batches(pool, size, count)
                    print(f"latency, {count} requests of {size} mention(s) …", flush=True)
                    http, local = latencies(over_http, requests), latencies(in_process, requests)
                    for q in (50, 95):
                        a, b = np.percentile(http, q), np.percentile(local, q)
                        rows.append((f"/link latency p{q}, {size} mention{'s' * (size > 1)} per request (ms)",
                                     a, b, b / a))
                requests = batches(pool, 100, args.concurrent)[1:]
                print(f"throughput, {args.concurrent} requests of 100 mentions, {CLIENTS} clients …", flush=True)
                http = throughput(over_http, requests, CLIENTS)
                local_threads = throughput(in_process, requests, CLIENTS)
                local_one = throughput(in_process, requests, 1)
                local = max(local_threads, local_one)
                rows.append((f"throughput, {CLIENTS} clients × 100 mentions (mentions/s; in-process: the better of "
                             f"{CLIENTS} threads {local_threads:.0f} and 1 thread {local_one:.0f})", http, local,
                             http / local))
                batched = client.get("/health").json()["batches"]
        finally:
            server.terminate()
            server.wait(timeout=60)

    lines = [f"Measured {date.today()} by `python benchmarks/serve_latency.py --model {args.model}` on "
             f"{os.cpu_count()} CPU cores: {len(index)} Vital Articles titles indexed; mentions: the 613 aliases, "
             f"then the titles shuffled, none sent twice; k = 5. Ratio: in-process time ÷ HTTP time for latency, HTTP ÷ in-process for throughput "
             f"(1.0 = no cost). The server made {batched} model calls for all its requests.",
             "", "| measure | HTTP (`pearl serve`) | in-process (`pearl.link`) | ratio |", "|---|---|---|---|"]
    lines += [f"| {name} | {a:.1f} | {b:.1f} | {ratio:.2f} |" for name, a, b, ratio in rows]
    ratio = rows[-1][3]
    lines += ["", f"Throughput through HTTP is {ratio:.2f}× in-process at 100 mentions per request "
                  f"(target ≥ 0.8×: {'met' if ratio >= 0.8 else 'NOT met'})."]
    table = "\n".join(lines) + "\n"
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(table, encoding="utf-8")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
