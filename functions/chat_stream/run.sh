#!/bin/bash
# The Lambda Web Adapter's startup script (the function's Handler): it execs our HTTP server,
# which listens on 127.0.0.1:$PORT and answers the adapter's readiness check at /healthz.
# The layers put chatmemory and its dependencies under /opt/python; the runtime's own
# packages stay last, as they are for a Python handler. Unbuffered: powertools prints its
# metrics (EMF) to stdout, which must reach CloudWatch per request, not per 8 KiB.
PYTHONPATH="/opt/python${PYTHONPATH:+:$PYTHONPATH}:${LAMBDA_RUNTIME_DIR}" \
    PYTHONUNBUFFERED=1 \
    exec python -m chatmemory.aws.stream_server
