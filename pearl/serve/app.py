"""The HTTP service: an index and its model, loaded once, behind four endpoints.

POST /embed, /link and /types check every text before any model work, then hand it to a
MicroBatcher, so concurrent requests share model calls. Every refusal is a 4xx whose JSON body is
{"error": one line}; GET /docs is the OpenAPI page.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from pearl.errors import PearlError
from pearl.index.encoder import STRING
from pearl.index.phrase_index import Index
from pearl.linking.link import kept_candidates
from pearl.lone_surrogates import reject_lone_surrogate
from pearl.serve.batcher import MicroBatcher
from pearl.serve.schemas import (Candidate, EmbedRequest, EmbedResponse, Error, Health, LinkedMention, LinkRequest,
                                 LinkResponse, PhraseType, TypesRequest, TypesResponse)
from pearl.types.predict import TypeHead


@dataclass(frozen=True)
class ServeSettings:
    max_texts: int = 1000  # per request
    max_chars: int = 1000  # per text: names are short; a longer text is refused, not truncated unseen
    batch_texts: int = 1024  # per model call, over the requests batched together


@dataclass(frozen=True)
class TypeModel:
    """A PEARL export's encoder and type head, for POST /types."""

    id: str
    encoder: object  # the export loaded as a SentenceTransformer
    head: TypeHead

    def predict(self, texts: list[str]) -> list[dict]:
        vectors = self.encoder.encode(texts, convert_to_tensor=True, show_progress_bar=False)
        return self.head.predict(texts, vectors).to_dicts()


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


def create_app(index: Index, manifest: dict, settings: ServeSettings = ServeSettings(),
               types: TypeModel | None = None, served_as: str | None = None) -> FastAPI:
    """The app for `index` (already loaded); `served_as` is the model name the index was loaded with."""
    model_id = index.encoder.card.id
    lock = threading.Lock()
    embedder = MicroBatcher(lambda jobs: _split(index.encoder.encode(_joined(jobs)), jobs), lock, settings.batch_texts)
    linker = MicroBatcher(lambda jobs: _link(index, jobs), lock, settings.batch_texts)
    typer_ = MicroBatcher(lambda jobs: _split(types.predict(_joined(jobs)), jobs), lock, settings.batch_texts)
    batchers = (embedder, linker, typer_)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        for batcher in batchers:
            batcher.start()
        yield
        for batcher in batchers:
            await batcher.stop()

    app = FastAPI(title="pearl", summary="Phrase embeddings, entity linking and phrase types from one index",
                  version=manifest.get("pearl_version", ""), lifespan=lifespan,
                  responses={422: {"model": Error, "description": "bad input: the body's error names it"}})

    @app.exception_handler(BadRequest)
    async def bad_request(request: Request, error: BadRequest) -> JSONResponse:
        return JSONResponse({"error": str(error)}, status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _one_line(error.errors())}, status_code=422)

    def check(texts: list[str], field: str, model: str | None, served: str) -> None:
        if model is not None and model not in {served, served_as}:
            raise BadRequest(f"model: {model!r} is not served here; this server serves {served!r}")
        if not texts:
            raise BadRequest(f"{field} is empty: send at least one text")
        if len(texts) > settings.max_texts:
            raise BadRequest(f"{field} holds {len(texts)} texts, at most {settings.max_texts} per request "
                             "(the server's --max-texts): split it", 413)
        for i, text in enumerate(texts):
            if not text.strip():
                raise BadRequest(f"{field}[{i}] is blank: drop it")
            if len(text) > settings.max_chars:
                raise BadRequest(f"{field}[{i}] has {len(text)} characters, at most {settings.max_chars} "
                                 "(the server's --max-chars)")
            try:
                reject_lone_surrogate(text, f"{field}[{i}]")
            except PearlError as error:
                raise BadRequest(str(error)) from None

    @app.post("/embed", response_model=EmbedResponse, summary="The vectors of the texts")
    async def embed(body: EmbedRequest) -> EmbedResponse:
        if index.encoder.kind == STRING:
            raise BadRequest("this index's encoder is `string`, which has no vectors: serve an index built with "
                             "an embedding model to use /embed", 400)
        check(body.texts, "texts", body.model, model_id)
        vectors = await embedder.submit(body.texts, len(body.texts))
        return EmbedResponse(model=model_id, dimension=vectors.shape[1], vectors=vectors.tolist())

    @app.post("/link", response_model=LinkResponse, summary="Each mention's top k names of the index")
    async def link(body: LinkRequest) -> LinkResponse:
        check(body.mentions, "mentions", body.model, model_id)
        results = await linker.submit(body, len(body.mentions))
        return LinkResponse(model=model_id, results=results)

    @app.post("/types", response_model=TypesResponse, summary="The lexical and entity type of each phrase")
    async def phrase_types(body: TypesRequest) -> TypesResponse:
        if types is None:
            raise BadRequest(f"no type head: {model_id!r} is not a PEARL export; start `pearl serve` with "
                             "--types-model pointing at one (models/pearl)", 400)
        check(body.phrases, "phrases", body.model, types.id)
        rows = await typer_.submit(body.phrases, len(body.phrases))
        return TypesResponse(model=types.id, types=[PhraseType(**row) for row in rows])

    @app.get("/health", response_model=Health, summary="The model, the index's manifest and its size")
    async def health() -> Health:
        return Health(status="ok", model=model_id, count=len(index), manifest=manifest,
                      types_model=None if types is None else types.id,
                      batches=sum(batcher.batches for batcher in batchers))

    return app


def _joined(jobs: Sequence[list[str]]) -> list[str]:
    return [text for texts in jobs for text in texts]


def _split(values, jobs: Sequence[list[str]]) -> list:
    """`values` (one per text of all jobs) cut back into one slice per job."""
    out, start = [], 0
    for texts in jobs:
        out.append(values[start:start + len(texts)])
        start += len(texts)
    return out


def _link(index: Index, jobs: Sequence[LinkRequest]) -> list[list[LinkedMention]]:
    """One search for the batch, as deep as its largest k; each request keeps its own k and min_score."""
    scores, rows = index.search(_joined([job.mentions for job in jobs]), max(job.k for job in jobs))
    results, start = [], 0
    for job in jobs:
        linked = []
        for i, mention in enumerate(job.mentions, start):
            kept = kept_candidates(scores[i][:job.k], rows[i][:job.k], job.min_score)
            linked.append(LinkedMention(
                mention=mention, matched=bool(kept), best_score=float(scores[i][0]),
                candidates=[Candidate(rank=rank, id=index.ids[row], name=index.names[row], score=score)
                            for rank, (score, row) in enumerate(kept, 1)]))
        results.append(linked)
        start += len(job.mentions)
    return results


def _one_line(errors: Sequence[dict]) -> str:
    """pydantic's first complaint as `field[i]: message`, with how many others there were."""
    first = errors[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"][1:]).lstrip(".")
    if first["type"] == "json_invalid":
        message = f"the body is not valid JSON ({first.get('ctx', {}).get('error', first['msg'])})"
    elif first["type"] == "missing":
        message = f"{where}: required field missing"
    elif first["type"] == "extra_forbidden":
        message = f"{where}: unknown field"
    else:
        message = f"{where or 'the body'}: {first['msg']}"
    more = len(errors) - 1
    return message + (f" (and {more} more error{'s' * (more > 1)})" if more else "")
