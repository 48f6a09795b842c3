"""Each bad request to `pearl serve`: a 4xx whose JSON body is one line naming what to fix
(a row each in tests/reliability/table.py). The server holds an index of a tiny PEARL export with
--max-texts 4 and --max-chars 50."""

import pytest

from tests.test_export import export, tiny_model  # noqa: F401  (fixtures the served index is built from)
from tests.test_serve import client, export_index  # noqa: F401

BAD_REQUESTS = [
    ("blank text", "/link", {"mentions": ["Paris", "  "]}, 422, "mentions[1] is blank"),
    ("no texts", "/embed", {"texts": []}, 422, "texts is empty"),
    ("too many texts", "/embed", {"texts": ["a"] * 5}, 413, "at most 4 per request"),
    ("a text too long", "/types", {"phrases": ["x" * 51]}, 422, "phrases[0] has 51 characters, at most 50"),
    ("a lone surrogate", "/embed", '{"texts": ["a\\ud800"]}', 422, "texts[0] holds U+D800"),
    ("a number for a text", "/link", {"mentions": ["Paris", 7]}, 422, "mentions[1]: Input should be a valid string"),
    ("a string for the list", "/embed", {"texts": "Paris"}, 422, "texts: Input should be a valid list"),
    ("k of 0", "/link", {"mentions": ["Paris"], "k": 0}, 422, "k: Input should be greater than or equal to 1"),
    ("min_score of 7", "/link", {"mentions": ["Paris"], "min_score": 7}, 422, "min_score: Input should be less than"),
    ("an unknown model", "/link", {"mentions": ["Paris"], "model": "other/model"}, 422, "'other/model' is not served"),
    ("an unknown field", "/link", {"mentions": ["Paris"], "top_k": 3}, 422, "top_k: unknown field"),
    ("a missing field", "/types", {}, 422, "phrases: required field missing"),
    ("a body that is not JSON", "/link", "{mentions: [", 422, "the body is not valid JSON"),
]


@pytest.mark.parametrize("what, path, body, status, words", BAD_REQUESTS, ids=[case[0] for case in BAD_REQUESTS])
def test_a_bad_request_gets_a_4xx_with_one_line(client, what, path, body, status, words):
    sent = client.post(path, content=body, headers={"content-type": "application/json"}) if isinstance(body, str) \
        else client.post(path, json=body)
    assert sent.status_code == status, sent.text
    error = sent.json()["error"]
    assert words in error and "\n" not in error and sent.json().keys() == {"error"}
