"""`pearl serve`: the endpoints against the Python API on a tiny PEARL export, OpenAI's client, the API
key, the body and queue limits, /metrics, the batching of concurrent requests, one-line refusals, the
OpenAPI page, and a real uvicorn process over HTTP."""

import asyncio
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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
    assert health["status"] == "ok" and health["count"] == len(NAMES) and health["types_model"] == export.name
    # the model by its folder's name: where it lies on the server is not the client's business
    assert health["manifest"]["model"]["id"] == health["model"] == export.name
    assert str(export.parent) not in json.dumps(health)


def test_each_request_keeps_its_own_k_when_requests_share_a_batch(export_index):
    index = Index.load(export_index)
    from pearl.serve.app import _link
    from pearl.serve.schemas import LinkRequest

    jobs = [LinkRequest(mentions=["Paris"], k=1), LinkRequest(mentions=["york", "Berlin"], k=3, min_score=0.99)]
    one, three = _link(index, jobs)
    assert len(one[0].candidates) == 1
    alone = _link(index, [jobs[1]])[0]
    assert [m.model_dump() for m in three] == [m.model_dump() for m in alone]


def test_a_request_is_searched_at_its_own_k_whatever_its_batch_holds(export_index):
    # an HNSW index searches deeper for a larger k, and ties at the k-th place are ordered among k + 8
    # found, so one search at the batch's largest k would answer a request by what came beside it; a link
    # re-orders the index's RERANKED best with string evidence, so that is the least it searches
    from pearl.linking.link import RERANKED
    from pearl.serve.app import _link
    from pearl.serve.schemas import LinkRequest

    index = Index.load(export_index)
    searched, search = [], index.search
    index.search = lambda queries, k, vectors=None: (searched.append((queries, k)), search(queries, k, vectors))[1]
    alone = _link(index, [LinkRequest(mentions=["Paris", "york"], k=2)])[0]
    beside = _link(index, [LinkRequest(mentions=["Berlin"], k=5), LinkRequest(mentions=["Paris", "york"], k=2),
                           LinkRequest(mentions=["Parma"], k=5)])
    depth = max(2, RERANKED), max(5, RERANKED)
    assert searched == [(["Paris", "york"], depth[0]), (["Paris", "york"], depth[0]), (["Berlin", "Parma"], depth[1])]
    assert [m.model_dump() for m in beside[1]] == [m.model_dump() for m in alone]
    assert [m.mention for m in beside[0] + beside[2]] == ["Berlin", "Parma"]


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
            "TypesRequest", "TypesResponse", "PhraseType", "Health", "Error", "OpenAIEmbeddingsRequest",
            "OpenAIEmbeddingsResponse", "OpenAIEmbedding", "OpenAIUsage"]
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
                              env={**os.environ, "HF_HUB_OFFLINE": "1", "PEARL_API_KEY": KEY})
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
        assert health.json()["count"] == len(NAMES)  # /health needs no key
        http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        linked = http.post("/link", json={"mentions": ["Paris", "Berlin"], "k": 1}).json()
        assert [r["candidates"][0]["id"] for r in linked["results"]] == ["PA", "BE"]
        types = http.post("/types", json={"phrases": ["grown man"]}).json()["types"]
        assert types[0]["label"] == predict_types(export, ["grown man"])["label"][0]
        refused = http.post("/embed", json={"texts": [""]})
        assert refused.status_code == 422 and json.loads(refused.text) == {"error": "texts[0] is blank: drop it"}
        assert httpx.post(f"{base}/embed", json={"texts": ["a"]}).status_code == 401
        import openai

        vectors = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY).embeddings.create(model=export.name, input="Paris")
        assert np.dot(vectors.data[0].embedding, http.post("/embed", json={"texts": ["Paris"]}).json()["vectors"][0]) \
            >= 0.9999
        assert 'pearl_requests_total{route="/v1/embeddings",status="200"} 1.0' in http.get("/metrics").text
    finally:
        server.terminate()
        server.wait(timeout=30)


KEY = "s3cret-key"


@pytest.fixture(scope="module")
def keyed(export_index):
    service, index, _ = build_app(export_index, settings=ServeSettings(max_texts=4, max_chars=50, max_queued_texts=6,
                                                                       api_key=KEY))
    # a crash is the 500 it answers, not an exception raised in the test
    with TestClient(service, headers={"Authorization": f"Bearer {KEY}"}, raise_server_exceptions=False) as test_client:
        yield test_client, index


@contextlib.contextmanager
def queue_full(client, index, queued: int = 6):
    """The model held busy by two requests of 3 texts each (`keyed`'s --max-queued-texts), until the block ends;
    then both must have been answered."""
    gate, encode = threading.Event(), index.encoder.encode
    index.encoder.encode = lambda texts: (gate.wait(30), encode(texts))[1]
    try:
        with ThreadPoolExecutor(2) as pool:
            held = [pool.submit(client.post, "/embed", json={"texts": ["a", "b", "c"]}) for _ in range(2)]
            deadline = time.monotonic() + 30
            while f"pearl_queued_texts {queued:.1f}" not in client.get("/metrics").text:  # both admitted
                assert time.monotonic() < deadline, "the two held requests were not queued in 30 s"
                time.sleep(0.05)
            yield
            gate.set()
            assert [future.result().status_code for future in held] == [200, 200]
    finally:
        index.encoder.encode = encode
        gate.set()


def test_the_openai_client_gets_the_vectors_of_embed(keyed):
    import openai

    client, _ = keyed
    texts = ["New York", "grown man", "Pariss"]
    want = np.asarray(client.post("/embed", json={"texts": texts}).json()["vectors"])
    served = client.get("/health").json()["model"]
    api = openai.OpenAI(base_url="http://testserver/v1", api_key=KEY, http_client=client, max_retries=0)
    for encoding in ("float", "base64", openai.omit):  # unless told, the client asks for base64 and decodes it
        answer = api.embeddings.create(model=served, input=texts, encoding_format=encoding)
        got = np.asarray([np.frombuffer(base64.b64decode(item.embedding), "<f4") if encoding == "base64"
                          else item.embedding for item in answer.data])
        assert [item.index for item in answer.data] == [0, 1, 2] and answer.model == served
        assert np.min(np.sum(got * want, axis=1)) >= 0.9999
    assert answer.usage.prompt_tokens == answer.usage.total_tokens >= len(texts)
    one = api.embeddings.create(model=served, input="New York")
    assert np.dot(one.data[0].embedding, want[0]) >= 0.9999

    for key, words in ((None, "no API key"), ("wrong", "a wrong API key")):
        headers = {"Authorization": "" if key is None else f"Bearer {key}"}
        stranger = TestClient(client.app, headers=headers)
        refused = stranger.post("/v1/embeddings", json={"input": "a", "model": served})
        assert refused.status_code == 401 and words in refused.json()["error"]["message"]
        assert stranger.post("/embed", json={"texts": ["a"]}).status_code == 401
        assert stranger.get("/metrics").status_code == 401
        assert stranger.get("/health").status_code == 200  # a load balancer's probe needs no key
    with pytest.raises(openai.AuthenticationError, match="a wrong API key"):
        openai.OpenAI(base_url="http://testserver/v1", api_key="wrong", http_client=client, max_retries=0) \
            .embeddings.create(model=served, input="a")
    with pytest.raises(openai.UnprocessableEntityError, match="is not served here"):
        api.embeddings.create(model="text-embedding-3-small", input="a")


def test_a_big_body_is_refused_before_parsing_and_a_flood_beyond_the_queue_gets_429(keyed):
    client, index = keyed
    body = b'{"texts": ["' + b"x" * 3_000_000 + b'"]}'
    refused = client.post("/embed", content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 413 and "--max-body-bytes" in refused.json()["error"]
    chunked = client.post("/embed", content=iter([body[:1_500_000], body[1_500_000:]]),
                          headers={"content-type": "application/json"})  # no Content-Length: counted as it comes
    assert chunked.status_code == 413 and "more than 2000000 bytes" in chunked.json()["error"]

    with queue_full(client, index):
        flood = client.post("/embed", json={"texts": ["d"]})
        assert flood.status_code == 429 and "--max-queued-texts" in flood.json()["error"]
        assert int(flood.headers["Retry-After"]) >= 1
    assert client.post("/embed", json={"texts": ["d"]}).status_code == 200  # the queue drained
    metrics = client.get("/metrics").text
    assert 'pearl_requests_total{route="/embed",status="429"} 1.0' in metrics
    assert 'pearl_requests_total{route="/embed",status="413"} 2.0' in metrics
    assert "pearl_queue_full_total 1.0" in metrics and 'pearl_batch_texts_count{endpoint="embed"}' in metrics
    assert 'pearl_request_seconds_bucket{le="0.005",route="/embed"}' in metrics


def test_every_refusal_and_a_crash_answer_in_one_shape(keyed):
    client, index = keyed
    for method, path, status, words in (("GET", "/nowhere", 404, "no route /nowhere"),
                                        ("GET", "/embed", 405, "GET /embed: not allowed here; send POST")):
        sent = client.request(method, path)
        assert sent.status_code == status and sent.json() == {"error": sent.json()["error"]}
        assert words in sent.json()["error"]
    deep = client.post("/embed", content="[" * 100_000 + "]" * 100_000, headers={"content-type": "application/json"})
    assert 400 <= deep.status_code < 500 and deep.json().keys() == {"error"}, deep.text

    def crash(texts):
        raise RuntimeError("disk gone\nsecond line")

    encode, index.encoder.encode = index.encoder.encode, crash
    try:
        answer = client.post("/embed", json={"texts": ["a"]})
        assert answer.status_code == 500
        assert answer.json() == {"error": "internal error (RuntimeError: disk gone); the server's log has the rest"}
        openai_shape = client.post("/v1/embeddings", json={"input": "a"}).json()["error"]
        assert openai_shape["type"] == "server_error" and "disk gone" in openai_shape["message"]
    finally:
        index.encoder.encode = encode


def test_types_answers_to_its_own_model_name_only(string_index, export):
    service, _, _ = build_app(string_index, types_model=export)
    with TestClient(service) as client:
        assert client.post("/types", json={"phrases": ["a"], "model": export.name}).status_code == 200
        refused = client.post("/types", json={"phrases": ["a"], "model": "string"})  # the index's model, not /types'
        assert refused.status_code == 422 and "'string' is not served here" in refused.json()["error"]


def test_serve_refuses_bad_limit_flags_before_any_model_loads(string_index):
    for flags, words in ((["--max-texts", "10", "--max-queued-texts", "5"], "--max-queued-texts 5 is below"),
                         (["--api-key", " "], "--api-key (or PEARL_API_KEY) is blank")):
        result = CliRunner().invoke(cli, ["serve", "--index", str(string_index), "--port", str(_free_port()), *flags])
        assert result.exit_code == 1 and words in result.output
