"""Change events on one machine: the local server relays the audit log into the feed
(`changes.jsonl` in the state folder) on a thread of its own, and `chatmemory flush`
relays whatever is left, so a change is out within a moment of its write, and nothing
written while no server ran is lost.
"""

from __future__ import annotations

import logging
import threading

from chatmemory.services.changes import ChangeRelay

# Not under "chatmemory": powertools owns that logger name and would echo these as JSON.
log = logging.getLogger("local-changes")

#: how often the server's relay looks for new audit events (one indexed read when idle)
RELAY_EVERY_SECONDS = 0.5


def relay_until(relay: ChangeRelay, stop: threading.Event) -> None:
    """The server's relay thread: relay, wait a moment, again, until `stop`; then once
    more, so what the last requests wrote is out before the server exits."""
    while True:
        stopping = stop.wait(RELAY_EVERY_SECONDS)
        try:
            relay.relay()
        except Exception as exc:  # the feed or the disk failed: the next pass tries again
            log.warning("change relay failed: %s", type(exc).__name__)
        if stopping:
            return


def start_relay(relay: ChangeRelay | None, stop: threading.Event) -> threading.Thread | None:
    """Start the relay thread (none when change events are off)."""
    if relay is None:
        return None
    thread = threading.Thread(target=relay_until, args=(relay, stop), name="changes", daemon=True)
    thread.start()
    return thread
