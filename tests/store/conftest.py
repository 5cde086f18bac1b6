"""A real S3-compatible server on loopback (moto's server, from PyPI), with a request log.

The server is moto's own WSGI application served by werkzeug on 127.0.0.1 and a free
port, wrapped in a middleware that records every request (method, path) and can hold
one upload half-read, so a test can kill a client in the middle of it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "trajconv-test",
    "AWS_SECRET_ACCESS_KEY": "trajconv-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass
class S3Server:
    endpoint: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    hold_path: str | None = None
    """An upload whose path contains this is read in part, then held until released."""
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    conditional: threading.Lock = field(default_factory=threading.Lock)

    def count(self, since: int = 0, methods: tuple[str, ...] = ()) -> int:
        return sum(1 for m, _p in self.requests[since:] if not methods or m in methods)

    def env(self, cache: Path) -> dict[str, str]:
        """What a trajconv process needs to reach this server the usual way."""
        return {
            **os.environ,
            **CREDENTIALS,
            "FSSPEC_S3_ENDPOINT_URL": self.endpoint,
            "TRAJCONV_CACHE": str(cache),
        }


def _middleware(app: Callable[..., Any], server: S3Server) -> Callable[..., Any]:
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        server.requests.append((method, path))
        if server.hold_path and method == "PUT" and server.hold_path in path:
            environ["wsgi.input"].read(16)  # the upload has begun...
            server.arrived.set()
            server.release.wait(60)  # ...and its client dies meanwhile
            start_response("500 Internal Server Error", [("Content-Length", "0")])
            return [b""]
        if "HTTP_IF_NONE_MATCH" in environ:
            # S3 decides a conditional create atomically; moto checks, then stores,
            # without a lock, so its threads could both win: serialized here
            with server.conditional:
                return list(app(environ, start_response))
        return app(environ, start_response)

    return wrapped


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    server = S3Server(endpoint="")
    app = DomainDispatcherApplication(create_backend_app)
    httpd = make_server("127.0.0.1", 0, _middleware(app, server), threaded=True)
    server.endpoint = f"http://127.0.0.1:{httpd.server_port}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        httpd.shutdown()


@pytest.fixture
def s3(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Server:
    """This process pointed at the server (fsspec's configuration, as a user would set
    it), a fresh cache, and a fresh bucket per test."""
    import fsspec.config

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TRAJCONV_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": s3_server.endpoint})
    s3_server.hold_path = None
    s3_server.arrived.clear()
    s3_server.release.clear()
    return s3_server


@pytest.fixture
def bucket(s3: S3Server, tmp_path: Path) -> str:
    """A new bucket for this test; the store is a prefix in it."""
    import s3fs

    name = "b-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(name)
    return f"s3://{name}/team"
