"""`pearl serve` under a flood of large /link requests: do /health and small embeddings stay fast?

One run, each server alone on the same cores, today's code and `--baseline`'s side by side:
1. `pearl serve` (with an API key) on an index of --names GeoNames names and --model.
2. One /link request of 1,000 mentions × k 1,000, alone: its status, seconds and answer size.
3. Idle probes for --idle-seconds: GET /health without a key, as a load balancer sends it, and POST
   /v1/embeddings of one name with the key, each from its own thread, one after the other.
4. The flood for --seconds: --clients clients (threads of a child process) post /link requests of
   --mentions GeoNames names × k 1,000 with the key, each sending its next request as soon as it has
   an answer (a 429's Retry-After is ignored, as a stranger would), while the probes go on.
Counted: the probes' p50 / p99 / max, the flood's answers by status, transport errors (lost), every
5xx, and the server's peak resident memory.

    python benchmarks/serve_flood.py                # all-MiniLM-L6-v2, baseline: the code before the bounds
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import date
from pathlib import Path

import httpx
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KEY = "flood-benchmark-key"
TIMEOUT = 300.0  # seconds a client waits for one answer


def start_server(index_dir: Path, port: int, code: Path) -> subprocess.Popen:
    from serve_latency import wait_until_up

    # -P: `python -c` puts its working folder (ROOT, today's code) before PYTHONPATH, and the baseline runs it
    command = [sys.executable, "-P", "-c", "from pearl.cli import main; main()", "serve", "--index", str(index_dir),
               "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(code), "PEARL_API_KEY": KEY, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    wait_until_up(server, f"http://127.0.0.1:{port}/health", "pearl serve")
    return server


def peak_gb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError(f"no VmHWM for process {pid}")


def probe(base: str, stop: threading.Event, send) -> tuple[list[float], Counter]:
    """Latencies and statuses of `send(http)`, called one after the other until `stop` is set."""
    latencies, statuses = [], Counter()
    with httpx.Client(base_url=base, timeout=TIMEOUT) as http:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                statuses[send(http).status_code] += 1
            except httpx.HTTPError:
                statuses["lost"] += 1
            latencies.append(time.perf_counter() - began)
            stop.wait(0.05)
    return latencies, statuses


def probes(base: str, model: str, seconds: float, during=None) -> dict:
    """Both probes for `seconds`, while `during()` (the flood) runs, if given; its result comes back too."""
    stop, found = threading.Event(), {}
    health = lambda http: http.get("/health")  # noqa: E731
    embed = lambda http: http.post("/v1/embeddings", json={"model": model, "input": "Paris"},  # noqa: E731
                                   headers={"Authorization": f"Bearer {KEY}"})
    threads = [threading.Thread(target=lambda name=name, send=send: found.__setitem__(name, probe(base, stop, send)))
               for name, send in (("health", health), ("embed", embed))]
    for thread in threads:
        thread.start()
    flood = during() if during else time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    out = {}
    for name, (latencies, statuses) in found.items():
        ms = np.array(latencies) * 1000
        out[name] = {"requests": len(ms), "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
                     "max_ms": float(ms.max()), "statuses": {str(k): v for k, v in statuses.items()}}
    return out, flood


def flood_client(base: str, mentions: list[list[str]], seconds: float, results) -> None:
    """In a child process: threads posting /link requests, one per entry of `mentions`, for `seconds`."""
    statuses, lock = Counter(), threading.Lock()
    deadline = time.monotonic() + seconds

    def client(names: list[str]) -> None:
        with httpx.Client(base_url=base, timeout=TIMEOUT, headers={"Authorization": f"Bearer {KEY}"}) as http:
            while time.monotonic() < deadline:
                try:
                    status = http.post("/link", json={"mentions": names, "k": 1000}).status_code
                except httpx.HTTPError:
                    status = "lost"
                with lock:
                    statuses[str(status)] += 1

    threads = [threading.Thread(target=client, args=(names,)) for names in mentions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(dict(statuses))


def run_code(label: str, code: Path, index_dir: Path, names: list[str], model: str, args) -> dict:
    from serve_latency import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(index_dir, port, code)
    try:
        rng = np.random.default_rng(args.seed)
        keyed = httpx.Client(base_url=base, timeout=TIMEOUT, headers={"Authorization": f"Bearer {KEY}"})
        keyed.post("/link", json={"mentions": names[:10], "k": 10})  # warm-up
        began = time.perf_counter()
        big = keyed.post("/link", json={"mentions": rng.choice(names, 1000).tolist(), "k": 1000})
        oversized = {"status": big.status_code, "seconds": time.perf_counter() - began, "mb": len(big.content) / 1e6}
        print(f"{label}: 1,000 mentions × k 1,000: {oversized}", flush=True)
        idle, _ = probes(base, model, args.idle_seconds)
        print(f"{label}: idle {idle}", flush=True)
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        mentions = [rng.choice(names, args.mentions).tolist() for _ in range(args.clients)]
        child = context.Process(target=flood_client, args=(base, mentions, args.seconds, results))

        def flood() -> dict:
            child.start()
            statuses = results.get()
            child.join()
            return statuses

        under, statuses = probes(base, model, args.seconds, during=flood)
        print(f"{label}: flood {statuses}, probes {under}", flush=True)
        return {"code": label, "oversized": oversized, "idle": idle, "flood": under, "flood_statuses": statuses,
                "server_peak_gb": peak_gb(server.pid)}
    finally:
        server.terminate()
        server.wait(timeout=60)


def markdown(rows: list[dict], args, model: str) -> str:
    lines = [f"Measured {date.today()} by `python benchmarks/serve_flood.py` on {os.cpu_count()} CPU cores: `pearl "
             f"serve` of {model} on an index of {args.names:,} GeoNames names, each code alone; the flood: "
             f"{args.clients} clients posting /link of {args.mentions} mentions × k 1,000 for {args.seconds:g} s, "
             "without backing off; the probes: GET /health without a key and POST /v1/embeddings of one name, "
             "each one after the other.", "",
             "| code | 1,000 × k 1,000 alone: status / s / MB | /health p50 / p99 / max ms, idle | during the flood "
             "| 1 embedding p50 / p99 / max ms, during the flood | flood answers by status | probes' 5xx | "
             "server peak GB |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        big, idle, flood = row["oversized"], row["idle"]["health"], row["flood"]
        five = sum(v for r in ("health", "embed") for k, v in flood[r]["statuses"].items() if k.startswith("5"))
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row["flood_statuses"].items()))
        lines.append(f"| {row['code']} | {big['status']} / {big['seconds']:.1f} / {big['mb']:.1f} "
                     f"| {idle['p50_ms']:.0f} / {idle['p99_ms']:.0f} / {idle['max_ms']:.0f} "
                     f"| {flood['health']['p50_ms']:.0f} / {flood['health']['p99_ms']:.0f} / "
                     f"{flood['health']['max_ms']:.0f} | {flood['embed']['p50_ms']:.0f} / "
                     f"{flood['embed']['p99_ms']:.0f} / {flood['embed']['max_ms']:.0f} | {statuses} | {five} "
                     f"| {row['server_peak_gb']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--names", type=int, default=20_000, help="GeoNames names in the index")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--mentions", type=int, default=100, help="per flood request: 100 × k 1,000 is the default "
                                                                  "--max-candidates")
    parser.add_argument("--seconds", type=float, default=60.0, help="of flood")
    parser.add_argument("--idle-seconds", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", default="bc5c9bc", help="the code to run side by side ('' for none)")
    parser.add_argument("--out", type=Path, default=Path("metrics/serve_flood.md"))
    args = parser.parse_args()

    import polars as pl

    from pearl.model_ids import resolve_model
    from verbs_scale import Names, baseline_code

    model = resolve_model(args.model)
    rng = np.random.default_rng(args.seed)
    left = Names().left
    names = [left[i] for i in sorted(rng.choice(len(left), args.names, replace=False))]
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        pl.DataFrame({"name": names}).write_csv(work / "names.csv")
        subprocess.run([str(Path(sys.executable).with_name("pearl")), "index", "build", "--input",
                        str(work / "names.csv"), "--column", "name", "--out", str(work / "index"), "--model", model],
                       check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        served = json.loads((work / "index" / "manifest.json").read_text())["model"]["id"]
        served = Path(served).name if Path(served).is_dir() else served
        codes = {"now": ROOT}
        if args.baseline:
            codes[args.baseline] = baseline_code(args.baseline, work)
        try:
            rows = [run_code(label, code, work / "index", names, served, args) for label, code in codes.items()]
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(codes[args.baseline])],
                               check=False)
    text = markdown(rows, args, args.model)
    print(text)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
