"""`pearl serve`: the endpoints against the Python API on a tiny PEARL export, OpenAI's client, the API
key, the body and queue limits, /metrics, the batching of concurrent requests and its retry of a failed
batch request by request, one-line refusals, the OpenAPI page, and a real uvicorn process over HTTP
(the Host guard of a loopback bind)."""

import asyncio
import base64
import contextlib
import json
import logging
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

    assert client.get("/health").json() == {"status": "ok"}  # a server without a key shows no manifest


def test_each_request_keeps_its_own_k_when_requests_share_a_batch(export_index):
    index = Index.load(export_index)
    from pearl.serve.app import _link, _linked
    from pearl.serve.schemas import LinkRequest

    jobs = [LinkRequest(mentions=["Paris"], k=1), LinkRequest(mentions=["york", "Berlin"], k=3, min_score=0.99)]
    one, three = _link(index, jobs)
    assert len(_linked(index, jobs[0], *one)[0].candidates) == 1
    alone = _link(index, [jobs[1]])[0]
    assert [m.model_dump() for m in _linked(index, jobs[1], *three)] == \
        [m.model_dump() for m in _linked(index, jobs[1], *alone)]


def test_a_request_is_searched_at_its_own_k_whatever_its_batch_holds(export_index):
    # an HNSW index searches deeper for a larger k, and ties at the k-th place are ordered among k + 8
    # found, so one search at the batch's largest k would answer a request by what came beside it; a link
    # re-orders the index's RERANKED best with string evidence, so that is the least it searches
    from pearl.linking.link import RERANKED
    from pearl.serve.app import _link, _linked
    from pearl.serve.schemas import LinkRequest

    index = Index.load(export_index)
    searched, search = [], index.search
    index.search = lambda queries, k, vectors=None: (searched.append((queries, k)), search(queries, k, vectors))[1]
    jobs = [LinkRequest(mentions=["Berlin"], k=5), LinkRequest(mentions=["Paris", "york"], k=2),
            LinkRequest(mentions=["Parma"], k=5)]
    alone = _linked(index, jobs[1], *_link(index, [jobs[1]])[0])
    beside = [_linked(index, job, *found) for job, found in zip(jobs, _link(index, jobs))]
    depth = max(2, RERANKED), max(5, RERANKED)
    assert searched == [(["Paris", "york"], depth[0]), (["Paris", "york"], depth[0]), (["Berlin", "Parma"], depth[1])]
    assert [m.model_dump() for m in beside[1]] == [m.model_dump() for m in alone]
    assert [m.mention for m in beside[0] + beside[2]] == ["Berlin", "Parma"]


def gated_work(calls: list, gate: threading.Event):
    """A batcher's work that records each batch, holds the model until `gate` is set, fails a batch holding "bad",
    and answers ten times each job."""
    def work(jobs):
        calls.append(list(jobs))
        gate.wait(10)  # the first batch holds the model while the others queue up
        if "bad" in jobs:
            raise ValueError("boom")
        return [job * 10 for job in jobs]

    return work


def test_concurrent_requests_share_model_calls():
    calls, gate = [], threading.Event()
    work = gated_work(calls, gate)

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


def test_a_failed_batch_is_run_again_request_by_request_and_only_the_bad_one_fails():
    calls, gate = [], threading.Event()
    work = gated_work(calls, gate)

    async def scenario():
        batcher = MicroBatcher(work, threading.Lock(), max_size=8)
        batcher.start()
        first = asyncio.create_task(batcher.submit(1, 1))
        await asyncio.sleep(0.05)
        rest = [asyncio.create_task(batcher.submit(job, 1)) for job in (2, "bad", 3)]
        await asyncio.sleep(0.05)
        gate.set()
        results = await asyncio.gather(first, *rest, return_exceptions=True)
        await batcher.stop()
        return results

    one, two, bad, three = asyncio.run(scenario())
    assert (one, two, three) == (10, 20, 30) and isinstance(bad, ValueError)
    assert calls == [[1], [2, "bad", 3], [2], ["bad"], [3]]


def test_a_request_past_its_timeout_is_dropped_and_its_work_never_runs():
    from pearl.serve.batcher import RequestTimeout

    calls, gate = [], threading.Event()
    work = gated_work(calls, gate)

    async def scenario():
        batcher = MicroBatcher(work, threading.Lock(), max_size=1)
        batcher.start()
        held = asyncio.create_task(batcher.submit(1, 1, timeout=0.2))  # runs, and is answered too late
        await asyncio.sleep(0.05)
        queued = await asyncio.gather(batcher.submit(2, 1, timeout=0.2), return_exceptions=True)  # never starts
        gate.set()
        held = await asyncio.gather(held, return_exceptions=True)
        after = await batcher.submit(3, 1)
        await batcher.stop()
        return held[0], queued[0], after

    held, queued, after = asyncio.run(scenario())
    assert isinstance(held, RequestTimeout) and isinstance(queued, RequestTimeout) and after == 30
    assert "--request-timeout" in str(held)
    assert calls == [[1], [3]]  # the request that timed out in the queue was dropped, not run


def test_a_string_index_serves_links_but_refuses_vectors_and_types(string_index):
    service, _, _ = build_app(string_index)
    with TestClient(service) as client:
        linked = client.post("/link", json={"mentions": ["Pariss"], "k": 1}).json()["results"][0]
        assert linked["candidates"][0]["id"] == "PA"
        for path, body, words in (("/embed", {"texts": ["a"]}, "has no vectors: serve an index built with an "
                                                               "embedding model to use /embed"),
                                  ("/v1/embeddings", {"input": "a"}, "has no vectors"),
                                  ("/types", {"phrases": ["a"]}, "--types-model")):
            sent = client.post(path, json=body)
            error = sent.json()["error"]
            assert sent.status_code == 400 and words in (error["message"] if path.startswith("/v1/") else error)


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
    command = [str(Path(sys.executable).with_name("pearl")), "serve", "--index", str(export_index), "--port", str(port),
               "--max-connections", "3"]
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
        assert health.json() == {"status": "ok"}  # /health needs no key, and without it shows no manifest
        http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        assert http.get("/health").json()["count"] == len(NAMES)
        # a page on another name that resolves to 127.0.0.1 (DNS rebinding) sends its own Host
        rebound = http.get("/health", headers={"Host": f"attacker.example:{port}"})
        assert rebound.status_code == 421 and "DNS rebinding" in rebound.json()["error"]
        assert httpx.get(f"http://localhost:{port}/health", timeout=5).status_code == 200
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
        http.close()
        # connections that are opened and left idle count against --max-connections: past it, uvicorn answers 503
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            assert httpx.get(f"{base}/health", timeout=5).status_code == 503
        finally:
            for connection in idle:
                connection.close()
        deadline = time.monotonic() + 10
        while httpx.get(f"{base}/health", timeout=5).status_code != 200:  # the server noticed the closed ones
            assert time.monotonic() < deadline, "the server still refused after its idle connections closed"
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)


KEY = "s3cret-key"


@pytest.fixture(scope="module")
def keyed(export_index):
    settings = ServeSettings(max_texts=4, max_chars=50, max_queued_texts=6, max_candidates=1000,
                             max_queued_candidates=2000, api_key=KEY)
    service, index, _ = build_app(export_index, settings=settings, bind_host="127.0.0.1")
    # a crash is the 500 it answers, not an exception raised in the test; a loopback bind answers loopback names
    with TestClient(service, base_url="http://localhost", headers={"Authorization": f"Bearer {KEY}"},
                    raise_server_exceptions=False) as test_client:
        yield test_client, index


# what two held requests fill, and the gauge that shows them admitted
HELD = {"texts": ("/embed", {"texts": ["a", "b", "c"]}, "pearl_queued_texts 6.0"),  # `keyed`'s --max-queued-texts
        "candidates": ("/link", {"mentions": ["a"], "k": 1000}, "pearl_queued_candidates 2000.0")}  # and candidates


@contextlib.contextmanager
def queue_full(client, index, what: str = "texts"):
    """The model held busy by two requests that fill `keyed`'s queue of texts or of candidates, until the block
    ends; then both must have been answered."""
    path, body, gauge = HELD[what]
    gate, encode = threading.Event(), index.encoder.encode
    index.encoder.encode = lambda texts: (gate.wait(30), encode(texts))[1]
    try:
        with ThreadPoolExecutor(2) as pool:
            held = [pool.submit(client.post, path, json=body) for _ in range(2)]
            deadline = time.monotonic() + 30
            while gauge not in client.get("/metrics").text:  # both admitted
                assert time.monotonic() < deadline, "the two held requests were not queued in 30 s"
                time.sleep(0.05)
            yield
            gate.set()
            assert [future.result().status_code for future in held] == [200, 200]
    finally:
        index.encoder.encode = encode
        gate.set()


def test_the_openai_client_gets_the_vectors_of_embed(keyed, export_index):
    import openai

    client, _ = keyed
    texts = ["New York", "grown man", "Pariss"]
    want = np.asarray(client.post("/embed", json={"texts": texts}).json()["vectors"])
    served = client.get("/health").json()["model"]
    api = openai.OpenAI(base_url="http://localhost/v1", api_key=KEY, http_client=client, max_retries=0)
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
        stranger = TestClient(client.app, base_url="http://localhost", headers=headers)
        refused = stranger.post("/v1/embeddings", json={"input": "a", "model": served})
        assert refused.status_code == 401 and words in refused.json()["error"]["message"]
        assert stranger.post("/embed", json={"texts": ["a"]}).status_code == 401
        assert stranger.get("/metrics").status_code == 401
        # a load balancer's probe needs no key, and a stranger learns nothing from it
        assert stranger.get("/health").json() == {"status": "ok"}
    health = client.get("/health").json()  # with the key
    assert health["status"] == "ok" and health["count"] == len(NAMES) and health["batches"] >= 1
    # the model by its folder's name: where it lies on the server is not the client's business
    assert health["manifest"]["model"]["id"] == health["model"] == served
    assert "/" not in served and str(export_index.parent) not in json.dumps(health)
    with pytest.raises(openai.AuthenticationError, match="a wrong API key"):
        openai.OpenAI(base_url="http://localhost/v1", api_key="wrong", http_client=client, max_retries=0) \
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


def test_every_refusal_and_a_crash_answer_in_one_shape(keyed, caplog):
    client, index = keyed
    for method, path, status, words in (("GET", "/nowhere", 404, "no route /nowhere"),
                                        ("GET", "/embed", 405, "GET /embed: not allowed here; send POST")):
        sent = client.request(method, path)
        assert sent.status_code == status and sent.json() == {"error": sent.json()["error"]}
        assert words in sent.json()["error"]
    deep = client.post("/embed", content="[" * 100_000 + "]" * 100_000, headers={"content-type": "application/json"})
    assert 400 <= deep.status_code < 500 and deep.json().keys() == {"error"}, deep.text

    def crash(texts):
        raise RuntimeError("disk gone at /srv/secret/path\nsecond line")

    encode, index.encoder.encode = index.encoder.encode, crash
    try:
        with caplog.at_level(logging.ERROR, logger="pearl.serve"):
            answer = client.post("/embed", json={"texts": ["a"]})
        assert answer.status_code == 500
        request_id = answer.headers["X-Request-ID"]
        # the client gets an id to quote, never the exception, which can name a server path
        assert answer.json() == {"error": f"internal error, request id {request_id}: the server's log has it"}
        logged = [record for record in caplog.records if request_id in record.getMessage()]
        assert logged and "disk gone at /srv/secret/path" in str(logged[0].exc_info[1])
        openai_shape = client.post("/v1/embeddings", json={"input": "a"}).json()["error"]
        assert openai_shape["type"] == "server_error" and "secret" not in openai_shape["message"]
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
