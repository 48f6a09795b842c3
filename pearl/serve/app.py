"""The HTTP service: an index and its model, loaded once, behind its endpoints.

POST /embed, /link, /types and OpenAI's /v1/embeddings check every text before any model work,
then hand it to a MicroBatcher, so concurrent requests share model calls. Every refusal is a 4xx
(or a 5xx) whose JSON body is {"error": one line}, in OpenAI's error object on /v1/; GET /docs is
the OpenAPI page and GET /metrics Prometheus's. A Guard in front checks the Host, the API key and
the body's size before the app reads it.

One request's cost is bounded before any model work: its texts, their length, and for /link its
candidates (mentions × k: the answer's size). Answers are serialised in a worker thread, so that a
large one does not hold the event loop that /health answers on. A crash's 500 names a request id
and no more: the server's log keeps the exception under that id.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import uuid
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.responses import Response

from pearl.errors import PearlError
from pearl.index.encoder import STRING
from pearl.index.phrase_index import Index
from pearl.linking.link import STRING_WEIGHT, kept_candidates, search
from pearl.log import get_logger
from pearl.lone_surrogates import reject_lone_surrogate
from pearl.serve.batcher import Backlog, MicroBatcher, QueueFull, RequestTimeout
from pearl.serve.errors import error_response
from pearl.serve.guard import Guard
from pearl.serve.metrics import ServeMetrics
from pearl.serve.schemas import (Candidate, EmbedRequest, EmbedResponse, Error, Health, LinkedMention, LinkRequest,
                                 LinkResponse, OpenAIEmbedding, OpenAIEmbeddingsRequest, OpenAIEmbeddingsResponse,
                                 OpenAIUsage, PhraseType, TypesRequest, TypesResponse)
from pearl.types.predict import TypeHead

log = get_logger("serve")

ROUTES = ("/embed", "/link", "/types", "/v1/embeddings", "/health", "/metrics", "/docs", "/openapi.json")


@dataclass(frozen=True)
class ServeSettings:
    max_texts: int = 1000  # per request
    max_chars: int = 1000  # per text: names are short; a longer text is refused, not truncated unseen
    batch_texts: int = 1024  # per model call, over the requests batched together
    max_body_bytes: int = 2_000_000  # TEI's payload limit; 1,000 texts of 1,000 characters fit
    max_queued_texts: int = 8192  # admitted and not yet answered, over all requests; then 429
    # /link's mentions × k per request: 100,000 candidates of GeoNames names are 7 MB of JSON
    max_candidates: int = 100_000
    max_queued_candidates: int = 200_000  # admitted and not yet answered, over all requests; then 429
    request_timeout: float = 30.0  # seconds from admission to answer; then 503, and the work is dropped
    max_connections: int = 64  # uvicorn's limit_concurrency: past it, 503 before the app reads the request
    api_key: str | None = None  # a Bearer token on every route but /health

    def __post_init__(self):
        if self.max_queued_texts < self.max_texts:
            raise PearlError(f"--max-queued-texts {self.max_queued_texts} is below --max-texts {self.max_texts}: "
                             "the largest request could never be queued; raise it")
        if self.max_queued_candidates < self.max_candidates:
            raise PearlError(f"--max-queued-candidates {self.max_queued_candidates} is below --max-candidates "
                             f"{self.max_candidates}: the largest request could never be queued; raise it")
        if not self.request_timeout > 0:
            raise PearlError(f"--request-timeout {self.request_timeout}: give a number of seconds above 0")
        if self.api_key is not None and not self.api_key.strip():
            raise PearlError("--api-key (or PEARL_API_KEY) is blank: give a key, or leave it unset to serve without one")


def public_name(model_id: str) -> str:
    """A model as the service names it: a local folder by its own name, never by where it lies on the server."""
    path = Path(model_id)
    return path.name if path.is_absolute() or path.is_dir() else model_id


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
    def __init__(self, message: str, status: int = 422, param: str | None = None):
        super().__init__(message)
        self.status, self.param = status, param


def create_app(index: Index, manifest: dict, settings: ServeSettings = ServeSettings(),
               types: TypeModel | None = None, served_as: str | None = None, bind_host: str | None = None) -> FastAPI:
    """The app for `index` (already loaded); `served_as` is the model name the index was loaded with; `bind_host`
    the address the server listens on (a loopback one answers only requests for loopback names: pearl.serve.guard)."""
    model_id = public_name(index.encoder.card.id)
    names = {model_id, index.encoder.card.id, served_as}  # what a request's `model` may say
    types_name = None if types is None else public_name(types.id)
    types_names = set() if types is None else {types_name, types.id}
    backlog = Backlog(settings.max_queued_texts, settings.max_queued_candidates)
    # /embed and /types take turns on the cores; /link runs beside them: its batch spends seconds scoring strings
    # (100 mentions × k 1,000: 2 s on 2 cores), which a one-name embedding should not wait for
    model_lock, link_lock = threading.Lock(), threading.Lock()
    metrics = ServeMetrics(lambda: backlog.texts, lambda: backlog.candidates)

    def batcher(work, endpoint: str, lock: threading.Lock = model_lock) -> MicroBatcher:
        return MicroBatcher(work, lock, settings.batch_texts, backlog,
                            metrics.batch_texts.labels(endpoint).observe)

    embedder = batcher(lambda jobs: _embed(index, jobs), "embed")
    linker = batcher(lambda jobs: _link(index, jobs), "link", link_lock)
    typer_ = batcher(lambda jobs: _split(types.predict(_joined(jobs)), jobs), "types")
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
    app.add_middleware(Guard, api_key=settings.api_key, max_body_bytes=settings.max_body_bytes, metrics=metrics,
                       routes=frozenset(ROUTES), bind_host=bind_host)

    @app.exception_handler(BadRequest)
    async def bad_request(request: Request, error: BadRequest):
        return error_response(request.url.path, str(error), error.status, param=error.param)

    @app.exception_handler(QueueFull)
    async def queue_full(request: Request, error: QueueFull):
        metrics.refused.inc()
        return error_response(request.url.path, str(error), 429, headers={"Retry-After": str(error.retry_after)})

    @app.exception_handler(RequestTimeout)
    async def timed_out(request: Request, error: RequestTimeout):
        return error_response(request.url.path, str(error), 503, headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, error: RequestValidationError):
        return error_response(request.url.path, _one_line(error.errors()), 422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):
        allowed = (error.headers or {}).get("Allow")
        message = {404: f"no route {request.url.path}: the routes are POST /embed, /link, /types, /v1/embeddings "
                        "and GET /health, /metrics, /docs",
                   405: f"{request.method} {request.url.path}: not allowed here; send {allowed}",
                   # FastAPI's words for a body its JSON reader gave up on (a RecursionError, bytes not UTF-8)
                   400: "the body could not be read: JSON nested too deeply, or bytes that are not UTF-8"}.get(
                       error.status_code, str(error.detail))
        return error_response(request.url.path, message, error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def server_error(request: Request, error: Exception):
        # the exception can name a server path or a library's internals: the client gets an id to quote
        request_id = uuid.uuid4().hex[:16]
        log.error("request %s (%s %s) failed", request_id, request.method, request.url.path, exc_info=error)
        return error_response(request.url.path, f"internal error, request id {request_id}: the server's log has it",
                              500, headers={"X-Request-ID": request_id})

    def check(texts: list[str], field: str, model: str | None, served: str, accepted: set[str]) -> None:
        if model is not None and model not in accepted:
            raise BadRequest(f"model: {model!r} is not served here; this server serves {served!r}", param="model")
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

    def vectors_served(route: str) -> None:
        if index.encoder.kind == STRING:
            raise BadRequest(f"this index's encoder is `string`, which has no vectors: serve an index built with "
                             f"an embedding model to use {route}", 400)

    @app.post("/embed", response_model=EmbedResponse, summary="The vectors of the texts")
    async def embed(body: EmbedRequest) -> EmbedResponse:
        vectors_served("/embed")
        check(body.texts, "texts", body.model, model_id, names)
        vectors, _ = await embedder.submit((body.texts, False), len(body.texts), timeout=settings.request_timeout)
        return await _json(lambda: EmbedResponse(model=model_id, dimension=vectors.shape[1], vectors=vectors.tolist()))

    @app.post("/v1/embeddings", response_model=OpenAIEmbeddingsResponse,
              summary="OpenAI's embeddings API: the vectors of the texts, as the `openai` client reads them")
    async def openai_embeddings(body: OpenAIEmbeddingsRequest) -> OpenAIEmbeddingsResponse:
        vectors_served("/v1/embeddings")
        texts = _openai_texts(body.input)
        check(texts, "input", body.model, model_id, names)
        dimension = index.encoder.card.dimension
        if body.dimensions is not None and body.dimensions != dimension:
            raise BadRequest(f"dimensions: {model_id!r} gives {dimension}-dimensional vectors and does not shorten "
                             f"them; drop `dimensions` or send {dimension}", param="dimensions")
        vectors, tokens = await embedder.submit((texts, True), len(texts), timeout=settings.request_timeout)

        def answer() -> OpenAIEmbeddingsResponse:
            if body.encoding_format == "base64":
                encoded = [base64.b64encode(row.astype("<f4").tobytes()).decode() for row in vectors]
            else:
                encoded = vectors.tolist()
            return OpenAIEmbeddingsResponse(data=[OpenAIEmbedding(index=i, embedding=e) for i, e in enumerate(encoded)],
                                            model=model_id, usage=OpenAIUsage(prompt_tokens=tokens, total_tokens=tokens))

        return await _json(answer)

    @app.post("/link", response_model=LinkResponse, summary="Each mention's top k names of the index")
    async def link(body: LinkRequest) -> LinkResponse:
        check(body.mentions, "mentions", body.model, model_id, names)
        candidates = len(body.mentions) * body.k
        if candidates > settings.max_candidates:
            raise BadRequest(f"{len(body.mentions)} mentions × k {body.k} ask for {candidates} candidates, at most "
                             f"{settings.max_candidates} per request (the server's --max-candidates): send fewer "
                             "mentions or a smaller k", 413)
        scores, rows = await linker.submit(body, len(body.mentions), candidates, timeout=settings.request_timeout)
        return await _json(lambda: LinkResponse(model=model_id, results=_linked(index, body, scores, rows)))

    @app.post("/types", response_model=TypesResponse, summary="The lexical and entity type of each phrase")
    async def phrase_types(body: TypesRequest) -> TypesResponse:
        if types is None:
            raise BadRequest(f"no type head: {model_id!r} is not a PEARL export; start `pearl serve` with "
                             "--types-model pointing at one (models/pearl)", 400)
        check(body.phrases, "phrases", body.model, types_name, types_names)
        rows = await typer_.submit(body.phrases, len(body.phrases), timeout=settings.request_timeout)
        return await _json(lambda: TypesResponse(model=types_name, types=[PhraseType(**row) for row in rows]))

    shown = {**manifest, "model": {**manifest["model"], "id": model_id}}

    @app.get("/health", response_model=Health, response_model_exclude_unset=True,
             summary="Whether the service is up; with the server's API key, also its model, manifest and size")
    async def health(request: Request) -> Health:
        if not request.state.keyed:  # the version and weights' hash would tell a stranger what to attack
            return Health(status="ok")
        return Health(status="ok", model=model_id, count=len(index), manifest=shown,
                      types_model=types_name,
                      batches=sum(batcher.batches for batcher in batchers))

    @app.get("/metrics", summary="Prometheus metrics: requests by route and status, latency, batch sizes, queue")
    async def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


async def _json(answer) -> Response:
    """`answer()`'s model as JSON, built in a worker thread: a /link answer of 100,000 candidates takes about a
    second to build, which on the event loop would hold every other request, /health's included."""
    def serialised() -> bytes:
        built: BaseModel = answer()
        return built.model_dump_json().encode()

    return Response(await asyncio.to_thread(serialised), media_type="application/json")


def _openai_texts(sent: str | list) -> list[str]:
    """OpenAI's `input` as a list of strings; token arrays (what LangChain sends by default) are refused."""
    if isinstance(sent, str):
        return [sent]
    for i, item in enumerate(sent):
        if not isinstance(item, str):
            tokens = " (token arrays are not read: send the texts; LangChain: OpenAIEmbeddings(" \
                     "check_embedding_ctx_length=False))" if isinstance(item, int | list) else ""
            raise BadRequest(f"input[{i}] is a {type(item).__name__}, not a string{tokens}", param="input")
    return sent


def _embed(index: Index, jobs: Sequence[tuple[list[str], bool]]) -> list[tuple[np.ndarray, int | None]]:
    """Each job's vectors, and its token count where it asked for one (OpenAI's usage)."""
    texts_of = [texts for texts, _ in jobs]
    vectors = _split(index.encoder.encode(_joined(texts_of)), texts_of)
    return [(rows, index.encoder.token_count(texts) if counted else None)
            for rows, (texts, counted) in zip(vectors, jobs)]


def _joined(jobs: Sequence[list[str]]) -> list[str]:
    return [text for texts in jobs for text in texts]


def _split(values, jobs: Sequence[list[str]]) -> list:
    """`values` (one per text of all jobs) cut back into one slice per job."""
    out, start = [], 0
    for texts in jobs:
        out.append(values[start:start + len(texts)])
        start += len(texts)
    return out


def _link(index: Index, jobs: Sequence[LinkRequest]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each request's (scores, rows) of its mentions' top k, from one search per k in the batch, so that a request's
    answer does not depend on the requests beside it: an HNSW index searches deeper for a larger k. Scored as
    `pearl link` scores by default. The answers are built by `_linked`, outside the batch's lock."""
    found = {}
    for k in sorted({job.k for job in jobs}):
        mentions = _joined([job.mentions for job in jobs if job.k == k])
        found[k] = search(index, mentions, k, STRING_WEIGHT)
    starts = dict.fromkeys(found, 0)
    results = []
    for job in jobs:
        (scores, rows), start = found[job.k], starts[job.k]
        starts[job.k] += len(job.mentions)
        end = start + len(job.mentions)
        results.append((scores[start:end, :job.k], rows[start:end, :job.k]))
    return results


def _linked(index: Index, job: LinkRequest, scores: np.ndarray, rows: np.ndarray) -> list[LinkedMention]:
    """`job`'s answer from its (scores, rows): each mention keeps its candidates at or above its min_score."""
    linked = []
    for mention, mention_scores, mention_rows in zip(job.mentions, scores, rows):
        kept = kept_candidates(mention_scores, mention_rows, job.min_score)
        linked.append(LinkedMention(
            mention=mention, matched=bool(kept), best_score=float(mention_scores[0]),
            candidates=[Candidate(rank=rank, id=index.ids[row], name=index.names[row], score=score)
                        for rank, (score, row) in enumerate(kept, 1)]))
    return linked


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
