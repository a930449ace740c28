"""A local HTTP server for the tests of HTTP model backends (a handler class answers each request)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any


def send_body(handler: Any, data: bytes, status: int = 200) -> None:
    """Answer a request of a `local_http_server` handler with `data` as the whole body."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def local_http_server(handler: type, path: str = "/v1"):
    """A threaded HTTP server on a free local port answering with `handler`; yields its base URL
    (`path` appended). Shut down and closed on exit."""
    from http.server import ThreadingHTTPServer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{path}"
    finally:
        httpd.shutdown()
        httpd.server_close()
