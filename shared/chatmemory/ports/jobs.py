"""Work off the request path: background jobs and the Step Functions pipelines' starters."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from chatmemory.domain.purge import PurgeRequest


class Jobs(ABC):
    """Work that runs off the request path: in-process locally, on a queue on AWS."""

    @abstractmethod
    def fold_later(self, user_id: str, conversation_id: str) -> None:
        """Ask for this conversation's oldest turns to be folded into its summary."""

    @abstractmethod
    def idle_later(self, user_id: str, conversation_id: str, due_at: datetime) -> None:
        """(Re)arm the conversation's idle timer: check it again at `due_at`.

        Every user message re-arms it; the check finds out whether a newer message came
        since, so only the last one of a burst starts the write pipeline (a debounce).
        """

    @abstractmethod
    def room_quiet_later(self, room_id: str, due_at: datetime) -> None:
        """(Re)arm the room's quiet timer: check it again at `due_at`. Every message re-arms
        it, so a room is written from once per quiet spell, after its last message."""

    @abstractmethod
    def profile_later(self, user_id: str, persona: str, due_at: datetime) -> None:
        """(Re)arm the rebuild of this persona's profile of the user for `due_at`: every
        write to their memories re-arms it, so a burst of writes is one rebuild (a
        debounce). Ids only: the job reads the memories again."""

    @abstractmethod
    def uses_later(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Ask for these memories' own uses to be written (services/uses.py): they were
        stored with uses borrowed from their category or carried from the version they
        correct — or without vectors, the embedder having failed, and the job embeds them
        again. Ids only: the job reads the rows again."""


class PipelineStarter(ABC):
    """Starts the write pipeline for one conversation's new messages."""

    @abstractmethod
    def start_write(
        self, user_id: str, conversation_id: str, upto_seq: int, *, deep: bool = False
    ) -> bool:
        """Start it (once per slice: a repeat start is a no-op); True if it started now.

        `deep`: extract in deep mode — the stronger model, a larger budget (the user asked
        to remember the conversation, or the daily sweep)."""


class PurgeStarter(ABC):
    """Starts the purge of deletions: a Standard workflow on AWS, a queued job locally."""

    @abstractmethod
    def start_purge(self, request: PurgeRequest, *, origin: str = "delete") -> bool:
        """Start it; True if it started now, False if the same purge was already started.

        `origin` ("delete", "sweep") keeps a re-drive from being taken for a repeat.
        """


class JobsRunHere(Protocol):
    """Jobs this process runs itself (the local queue), so the CLI must drive them. Jobs
    on a queue (SQS) run elsewhere and have no such methods."""

    def run_forever(self, stop: threading.Event) -> None:
        """Run jobs as they come due until `stop` is set."""

    def run_pending(self) -> int:
        """Run every job due now (and what those enqueue); how many ran."""
