"""The HTTP server core both front doors run on: the dev server (`local/server.py`) and the
streaming server behind the Function URL (`aws/stream_server.py`).

A threaded server, a request handler base that answers in the contract's shape, and the
chunked Server-Sent Events writer. Named `web`, not `http`, so that it never shadows the
standard library's `http` it is built on.
"""
