"""Each bad request to `pearl serve`: a 4xx whose JSON body is one line naming what to fix, in OpenAI's
error object on /v1/ (a row each in tests/reliability/table.py). The server holds an index of a tiny
PEARL export with --max-texts 4, --max-chars 50, --max-queued-texts 6, --max-candidates 1000,
--max-queued-candidates 2000 and an API key, which every request sends unless its row says
otherwise; it listens on 127.0.0.1, and requests are sent to localhost."""

import threading
from typing import NamedTuple

import pytest
from fastapi.testclient import TestClient

from pearl.serve.app import ServeSettings
from pearl.serve.run import build_app

from tests.test_export import export, tiny_model  # noqa: F401  (fixtures the served index is built from)
from tests.test_serve import export_index, keyed, queue_full  # noqa: F401


class BadRequest(NamedTuple):
    what: str
    path: str
    body: dict | str
    status: int
    words: str
    headers: dict | None = None  # instead of the right key
    busy: str | None = None  # sent while the queue of texts or of candidates is full
    host: str | None = None  # the Host header, instead of localhost


BAD_REQUESTS = [
    BadRequest("blank text", "/link", {"mentions": ["Paris", "  "]}, 422, "mentions[1] is blank"),
    BadRequest("no texts", "/embed", {"texts": []}, 422, "texts is empty"),
    BadRequest("too many texts", "/embed", {"texts": ["a"] * 5}, 413, "at most 4 per request"),
    BadRequest("a text too long", "/types", {"phrases": ["x" * 51]}, 422, "phrases[0] has 51 characters, at most 50"),
    BadRequest("a lone surrogate", "/embed", '{"texts": ["a\\ud800"]}', 422, "texts[0] holds U+D800"),
    BadRequest("a number for a text", "/link", {"mentions": ["Paris", 7]}, 422,
               "mentions[1]: Input should be a valid string"),
    BadRequest("a string for the list", "/embed", {"texts": "Paris"}, 422, "texts: Input should be a valid list"),
    BadRequest("k of 0", "/link", {"mentions": ["Paris"], "k": 0}, 422, "k: Input should be greater than or equal to 1"),
    BadRequest("k of true", "/link", {"mentions": ["Paris"], "k": True}, 422, "k: Input should be a valid integer"),
    BadRequest("min_score of 7", "/link", {"mentions": ["Paris"], "min_score": 7}, 422,
               "min_score: Input should be less than"),
    BadRequest("an unknown model", "/link", {"mentions": ["Paris"], "model": "other/model"}, 422,
               "'other/model' is not served"),
    BadRequest("an unknown field", "/link", {"mentions": ["Paris"], "top_k": 3}, 422, "top_k: unknown field"),
    BadRequest("a missing field", "/types", {}, 422, "phrases: required field missing"),
    BadRequest("a body that is not JSON", "/link", "{mentions: [", 422, "the body is not valid JSON"),
    BadRequest("JSON nested too deeply", "/link", "[" * 100_000 + "]" * 100_000, 400, "JSON nested too deeply"),
    BadRequest("a body over --max-body-bytes", "/embed", '{"texts": ["' + "x" * 2_000_000 + '"]}', 413,
               "at most 2000000 (the server's --max-body-bytes)"),
    BadRequest("no API key", "/link", {"mentions": ["Paris"]}, 401, "no API key: send the header", headers={}),
    BadRequest("a wrong API key", "/v1/embeddings", {"input": "Paris"}, 401, "a wrong API key",
               headers={"Authorization": "Bearer guess"}),
    BadRequest("a full queue", "/embed", {"texts": ["Paris"]}, 429, "at most 6 (its --max-queued-texts)",
               busy="texts"),
    BadRequest("more candidates than --max-candidates", "/link", {"mentions": ["Paris", "York"], "k": 600}, 413,
               "ask for 1200 candidates, at most 1000 per request (the server's --max-candidates)"),
    BadRequest("a full queue of candidates", "/link", {"mentions": ["Paris"], "k": 1}, 429,
               "at most 2000 (its --max-queued-candidates)", busy="candidates"),
    BadRequest("a Host other than a loopback name", "/embed", {"texts": ["Paris"]}, 421,
               "answers only requests for localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding)",
               host="rebound.example"),
    BadRequest("an unknown route", "/embeddings", {"input": "Paris"}, 404, "no route /embeddings"),
    BadRequest("the wrong method", "/health", {}, 405, "POST /health: not allowed here; send GET"),
    BadRequest("token arrays for OpenAI's input", "/v1/embeddings", {"input": [[9707, 374]]}, 422,
               "input[0] is a list, not a string (token arrays are not read"),
    BadRequest("OpenAI's dimensions shortened", "/v1/embeddings", {"input": "Paris", "dimensions": 8}, 422,
               "does not shorten them"),
    BadRequest("an unknown encoding_format", "/v1/embeddings", {"input": "Paris", "encoding_format": "int8"}, 422,
               "encoding_format: Input should be 'float' or 'base64'"),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[case.what for case in BAD_REQUESTS])
def test_a_bad_request_gets_a_4xx_with_one_line(keyed, case):
    client, index = keyed
    headers = {"content-type": "application/json"}
    if case.headers is not None:
        headers["Authorization"] = case.headers.get("Authorization", "")
    if case.host is not None:
        headers["Host"] = case.host
    body = {"content": case.body} if isinstance(case.body, str) else {"json": case.body}
    if case.busy:
        with queue_full(client, index, case.busy):
            sent = client.post(case.path, headers=headers, **body)
    else:
        sent = client.post(case.path, headers=headers, **body)
    assert sent.status_code == case.status, sent.text
    assert sent.json().keys() == {"error"}
    error = sent.json()["error"]
    if case.path.startswith("/v1/"):  # OpenAI's error object, which its client raises with the message
        assert error.keys() == {"message", "type", "param", "code"}
        error = error["message"]
    assert case.words in error and "\n" not in error


def test_a_link_request_past_max_candidates_is_refused_before_any_encoding(export_index):
    service, index, _ = build_app(export_index)  # the defaults: --max-texts 1000, --max-candidates 100000
    encoded, encode = [], index.encoder.encode
    index.encoder.encode = lambda texts: (encoded.append(texts), encode(texts))[1]
    with TestClient(service) as client:
        sent = client.post("/link", json={"mentions": [f"name {i}" for i in range(1000)], "k": 1000})
        assert sent.status_code == 413 and encoded == []
        assert sent.json() == {"error": "1000 mentions × k 1000 ask for 1000000 candidates, at most 100000 per "
                                        "request (the server's --max-candidates): send fewer mentions or a smaller k"}
        assert client.post("/link", json={"mentions": ["Paris"], "k": 1000}).status_code == 200


def test_a_request_past_its_timeout_gets_503_and_the_service_goes_on(export_index):
    service, index, _ = build_app(export_index, settings=ServeSettings(request_timeout=0.5))
    gate, encode = threading.Event(), index.encoder.encode
    index.encoder.encode = lambda texts: (gate.wait(30), encode(texts))[1]
    with TestClient(service) as client:
        try:
            late = client.post("/embed", json={"texts": ["Paris"]})
        finally:
            gate.set()
        assert late.status_code == 503 and late.headers["Retry-After"] == "1"
        assert "not answered within 0.5 s (the server's --request-timeout)" in late.json()["error"]
        assert client.post("/embed", json={"texts": ["Paris"]}).status_code == 200
