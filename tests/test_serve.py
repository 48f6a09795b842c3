"""`pearl serve`: the four endpoints against the Python API on a tiny PEARL export, the batching of
concurrent requests, one-line 4xx refusals, the OpenAPI page, and a real uvicorn process over HTTP."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from pearl.cli import app as cli
from pearl.index.phrase_index import Index
from pearl.linking.link import link
from pearl.serve.app import ServeSettings
from pearl.serve.batcher import MicroBatcher
from pearl.serve.run import build_app
from pearl.types.predict import predict_types
from tests.test_export import export, tiny_model  # noqa: F401  (fixtures: a tiny PEARL export with a type head)

NAMES = ["New York", "Paris", "London", "Berlin", "Parma", "York"]
IDS = ["NY", "PA", "LO", "BE", "PR", "YO"]


@pytest.fixture(scope="module")
def export_index(export, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("serve") / "cities"
    Index.build(NAMES, IDS, str(export)).save(folder)
    return folder


@pytest.fixture(scope="module")
def string_index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("serve") / "cities-string"
    Index.build(NAMES, IDS, "string").save(folder)
    return folder


@pytest.fixture(scope="module")
def client(export_index):
    service, _, _ = build_app(export_index, settings=ServeSettings(max_texts=4, max_chars=50))
    with TestClient(service) as test_client:  # `with`: the lifespan starts the batchers
        yield test_client


def test_link_embed_and_types_answer_what_the_python_api_does(client, export_index, export):
    mentions = ["new york city", "Pariss", "zzzz"]
    got = client.post("/link", json={"mentions": mentions, "k": 2, "min_score": 0.5})
    assert got.status_code == 200, got.text
    want = link(Index.load(export_index), mentions, k=2, min_score=0.5)
    for result, mention in zip(got.json()["results"], mentions):
        rows = want.filter(want["mention"] == mention)
        assert result["mention"] == mention and result["matched"] == rows["matched"][0]
        matched = rows.filter(rows["matched"])
        assert [c["id"] for c in result["candidates"]] == matched["id"].to_list()
        assert [c["rank"] for c in result["candidates"]] == matched["rank"].to_list()
        assert np.allclose([c["score"] for c in result["candidates"]], matched["score"].to_list(), atol=1e-6)
        if not result["matched"]:  # below min_score: no candidate, the best score kept
            assert result["candidates"] == [] and result["best_score"] == pytest.approx(rows["score"][0], abs=1e-6)

    vectors = client.post("/embed", json={"texts": ["Paris", "grown man"]}).json()
    assert vectors["dimension"] == len(vectors["vectors"][0])
    assert np.allclose(vectors["vectors"], Index.load(export_index).encoder.encode(["Paris", "grown man"]), atol=1e-6)

    types = client.post("/types", json={"phrases": ["new york", "grown man"]}).json()["types"]
    expected = predict_types(export, ["new york", "grown man"]).to_dicts()
    assert [t["label"] for t in types] == [e["label"] for e in expected]
    assert np.allclose([t["label_prob"] for t in types], [e["label_prob"] for e in expected], atol=1e-5)

    health = client.get("/health").json()
    assert health["status"] == "ok" and health["count"] == len(NAMES) and health["types_model"] == str(export.resolve())
    assert health["manifest"]["model"]["id"] == health["model"] == str(export.resolve())


def test_each_request_keeps_its_own_k_when_requests_share_a_batch(export_index):
    index = Index.load(export_index)
    from pearl.serve.app import _link
    from pearl.serve.schemas import LinkRequest

    jobs = [LinkRequest(mentions=["Paris"], k=1), LinkRequest(mentions=["york", "Berlin"], k=3, min_score=0.99)]
    one, three = _link(index, jobs)
    assert len(one[0].candidates) == 1
    alone = _link(index, [jobs[1]])[0]
    assert [m.model_dump() for m in three] == [m.model_dump() for m in alone]


def test_concurrent_requests_share_model_calls():
    calls, gate = [], threading.Event()

    def work(jobs):
        calls.append(list(jobs))
        gate.wait(10)  # the first batch holds the model while the others queue up
        if "bad" in jobs:
            raise ValueError("boom")
        return [job * 10 for job in jobs]

    async def scenario():
        batcher = MicroBatcher(work, threading.Lock(), max_size=3)
        batcher.start()
        first = asyncio.create_task(batcher.submit(1, 1))
        await asyncio.sleep(0.05)
        rest = [asyncio.create_task(batcher.submit(job, 1)) for job in (2, 3, 4, 5)]
        await asyncio.sleep(0.05)
        gate.set()
        results = await asyncio.gather(first, *rest)
        failed = await asyncio.gather(batcher.submit("bad", 1), return_exceptions=True)
        after = await batcher.submit(6, 1)  # an error fails its batch, not the batcher
        await batcher.stop()
        return results, failed, after

    results, failed, after = asyncio.run(scenario())
    assert results == [10, 20, 30, 40, 50] and after == 60
    assert calls[:3] == [[1], [2, 3, 4], [5]]  # at most 3 texts a call, the queue's order kept
    assert isinstance(failed[0], ValueError)


def test_a_string_index_serves_links_but_refuses_vectors_and_types(string_index):
    service, _, _ = build_app(string_index)
    with TestClient(service) as client:
        linked = client.post("/link", json={"mentions": ["Pariss"], "k": 1}).json()["results"][0]
        assert linked["candidates"][0]["id"] == "PA"
        for path, body, words in (("/embed", {"texts": ["a"]}, "has no vectors"),
                                  ("/types", {"phrases": ["a"]}, "--types-model")):
            sent = client.post(path, json=body)
            assert sent.status_code == 400 and words in sent.json()["error"]


def test_the_openapi_page_describes_every_field(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    ours = ["EmbedRequest", "EmbedResponse", "LinkRequest", "LinkResponse", "LinkedMention", "Candidate",
            "TypesRequest", "TypesResponse", "PhraseType", "Health", "Error"]
    undescribed = [f"{name}.{field}" for name in ours for field, spec in schemas[name]["properties"].items()
                   if not spec.get("description")]
    assert undescribed == []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_bad_flags_are_one_line_errors_before_any_model_loads(string_index, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--index", str(string_index), "--port", str(port)])
    assert result.exit_code == 1 and f"--port {port}: already in use" in result.output
    result = CliRunner().invoke(cli, ["serve", "--index", str(tmp_path), "--port", str(_free_port())])
    assert result.exit_code == 1 and "is not a pearl index" in result.output
    result = CliRunner().invoke(cli, ["serve", "--index", str(string_index), "--port", str(_free_port()),
                                      "--types-model", str(tmp_path / "none")])
    assert result.exit_code == 1 and "--types-model" in result.output and "no such folder" in result.output


@pytest.mark.slow
def test_a_real_uvicorn_process_answers_over_http(export_index, export):
    port = _free_port()
    command = [str(Path(sys.executable).with_name("pearl")), "serve", "--index", str(export_index), "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                health = httpx.get(f"{base}/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "pearl serve did not start in 120 s"
                time.sleep(0.5)
        assert health.json()["count"] == len(NAMES)
        linked = httpx.post(f"{base}/link", json={"mentions": ["Paris", "Berlin"], "k": 1}, timeout=30).json()
        assert [r["candidates"][0]["id"] for r in linked["results"]] == ["PA", "BE"]
        types = httpx.post(f"{base}/types", json={"phrases": ["grown man"]}, timeout=30).json()["types"]
        assert types[0]["label"] == predict_types(export, ["grown man"])["label"][0]
        refused = httpx.post(f"{base}/embed", json={"texts": [""]}, timeout=30)
        assert refused.status_code == 422 and json.loads(refused.text) == {"error": "texts[0] is blank: drop it"}
    finally:
        server.terminate()
        server.wait(timeout=30)
