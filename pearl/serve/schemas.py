"""The service's request and response bodies; their descriptions are the OpenAPI page's (/docs)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_MODEL = Field(None, description="the served model's id (GET /health shows it); when given, a request for "
                                 "another model is refused rather than answered by this one")


def _texts(what: str):
    return Field(description=f"{what}; none blank, at most the server's --max-texts per request and --max-chars "
                             "characters each")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not silently ignored


class EmbedRequest(_Request):
    texts: list[str] = _texts("the strings to embed")
    model: str | None = _MODEL


class EmbedResponse(BaseModel):
    model: str = Field(description="the model that embedded the texts")
    dimension: int = Field(description="the length of each vector")
    vectors: list[list[float]] = Field(description="one L2-normalised vector per text, in request order; "
                                                   "their dot product is the cosine")


class LinkRequest(_Request):
    mentions: list[str] = _texts("the strings to link to the index's names")
    # strict: JSON's true is not the number 1
    k: int = Field(5, ge=1, le=1000, strict=True,
                   description="candidates per mention (fewer when the index holds fewer names)")
    min_score: float | None = Field(None, ge=-1.0, le=1.0, strict=True,
                                    description="candidates below this score are dropped; a mention left without any "
                                                "is returned with matched false and its best score")
    model: str | None = _MODEL


class Candidate(BaseModel):
    rank: int = Field(description="1 for the best candidate; equal scores are ordered by the order names were indexed")
    id: str = Field(description="the name's id in the index")
    name: str = Field(description="the indexed name")
    score: float = Field(description="cosine similarity (3-gram Jaccard for a `string` index)")


class LinkedMention(BaseModel):
    mention: str = Field(description="the mention as sent")
    matched: bool = Field(description="whether at least one candidate reaches min_score (always, without min_score)")
    best_score: float = Field(description="the best candidate's score, kept when it is below min_score")
    candidates: list[Candidate] = Field(description="at most k candidates at or above min_score, best first")


class LinkResponse(BaseModel):
    model: str = Field(description="the index's model")
    results: list[LinkedMention] = Field(description="one entry per mention, in request order")


class TypesRequest(_Request):
    phrases: list[str] = _texts("the phrases to type")
    model: str | None = _MODEL


class PhraseType(BaseModel):
    text: str = Field(description="the phrase as sent")
    lex_type: str = Field(description="the lexical type (NP, VP, …) with the most probability")
    lex_prob: float = Field(description="its probability: the type head's softmax summed over its labels")
    entity_type: str = Field(description="the entity type (PERSON, ORG, …; NONE for none) with the most probability")
    entity_prob: float = Field(description="its probability, summed likewise")
    label: str = Field(description="the single most probable <lexical>-<entity> label")
    label_prob: float = Field(description="that label's probability")


class TypesResponse(BaseModel):
    model: str = Field(description="the PEARL export whose type head answered")
    types: list[PhraseType] = Field(description="one entry per phrase, in request order")


class OpenAIEmbeddingsRequest(_Request):
    input: str | list = Field(description="a string or a list of strings, none blank, at most the server's "
                                          "--max-texts per request and --max-chars characters each; token arrays "
                                          "are refused")
    model: str | None = _MODEL
    encoding_format: Literal["float", "base64"] = Field(
        "float", description="float: lists of numbers; base64: each vector's little-endian float32 bytes")
    dimensions: int | None = Field(None, strict=True, description="when given, the model's own dimension: "
                                                                  "vectors are not shortened")
    user: str | None = Field(None, description="the end user, as OpenAI's API takes it; not used")


class OpenAIEmbedding(BaseModel):
    object: Literal["embedding"] = Field("embedding", description="always embedding")
    index: int = Field(description="the position of its text in `input`")
    embedding: list[float] | str = Field(description="the L2-normalised vector, or its bytes in base64")


class OpenAIUsage(BaseModel):
    prompt_tokens: int = Field(description="the model tokenizer's tokens over all texts, special tokens included")
    total_tokens: int = Field(description="the same: embeddings have no completion tokens")


class OpenAIEmbeddingsResponse(BaseModel):
    object: Literal["list"] = Field("list", description="always list")
    data: list[OpenAIEmbedding] = Field(description="one entry per text, in `input` order")
    model: str = Field(description="the model that embedded the texts")
    usage: OpenAIUsage = Field(description="the tokens the request cost")


class Health(BaseModel):
    """`status` alone, unless the request carries the server's API key (a server without one shows no more)."""

    status: str = Field(description="ok once the index and its model are loaded")
    model: str | None = Field(None, description="the index's model name; requests may name it in their `model` field")
    count: int | None = Field(None, description="how many names the index holds")
    manifest: dict | None = Field(None, description="the index's manifest.json (format, pearl version, encoder, index "
                                                    "kind), its model named as `model` is")
    types_model: str | None = Field(None, description="the PEARL export POST /types uses, or null when it is off")
    batches: int | None = Field(None, description="model calls so far: fewer than requests when concurrent requests "
                                                  "were batched")


class Error(BaseModel):
    error: str = Field(description="one line naming what to fix")
