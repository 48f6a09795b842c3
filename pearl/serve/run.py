"""`pearl serve`: check the flags and the port, load the index and its model once, run uvicorn."""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path

from pearl.errors import PearlError
from pearl.index.encoder import STRING
from pearl.index.phrase_index import Index, read_manifest
from pearl.serve.app import ServeSettings, TypeModel, create_app
from pearl.types.predict import TypeHead


def check_port_free(host: str, port: int) -> None:
    """Bind and let go, so a taken port is one line before the model loads, not a uvicorn traceback after."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise PearlError(f"--host {host!r}: not an address or a name this machine resolves") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PearlError(f"--port {port}: already in use on {host}; pick another port") from None
            raise PearlError(f"--host {host} --port {port}: cannot listen there ({error.strerror})") from None


def load_types(index: Index, types_model: Path | None) -> TypeModel | None:
    """The type model: --types-model, else the index's own model when it is a PEARL export, else none."""
    if types_model is not None:
        from pearl.model.export import load

        head = TypeHead(types_model)  # a folder without a type head fails here, before the encoder loads
        return TypeModel(str(types_model.resolve()), load(types_model), head)
    own = index.encoder.card.id
    if index.encoder.kind != STRING and TypeHead.available(Path(own)):
        return TypeModel(own, index.encoder.embedder.model, TypeHead(Path(own)))
    return None


def build_app(index_dir: Path, model: str | None = None, types_model: Path | None = None,
              settings: ServeSettings = ServeSettings(), bind_host: str | None = None):
    manifest = read_manifest(index_dir)  # a missing or foreign folder is one line before any model loads
    if manifest["count"] == 0:
        raise PearlError(f"--index {index_dir}: holds no names; add some with `pearl index add`")
    if types_model is not None and not types_model.is_dir():
        raise PearlError(f"--types-model {types_model}: no such folder")
    index = Index.load(index_dir, model)
    types = load_types(index, types_model)
    return (create_app(index, manifest, settings, types, served_as=model or manifest["model"]["id"],
                       bind_host=bind_host), index, types)


def serve(index_dir: Path, host: str, port: int, model: str | None, types_model: Path | None,
          settings: ServeSettings) -> None:
    import uvicorn

    check_port_free(host, port)
    app, index, types = build_app(index_dir, model, types_model, settings, bind_host=host)
    print(f"serving {len(index)} names of {index_dir} with {index.encoder.card.id} on http://{host}:{port} "
          f"(OpenAPI page: /docs; /types: {'off' if types is None else types.id}; API key: "
          f"{'required' if settings.api_key else 'none, anyone who reaches the port is served'})", flush=True)
    # a thread that holds the GIL (a large /link answer being built) yields it every 1 ms instead of 5: a short
    # request's many small steps each wait for it once
    sys.setswitchinterval(0.001)
    # past limit_concurrency open connections and tasks, uvicorn answers 503 before the app reads a request
    uvicorn.run(app, host=host, port=port, log_level="warning", limit_concurrency=settings.max_connections)
