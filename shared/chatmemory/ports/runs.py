"""The write pipeline's run records (a run's candidates quote the user)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from chatmemory.domain.extraction import ExtractionRun


class RunStore(ABC):
    """Extraction runs, kept until they expire so a re-driven step finds its input."""

    @abstractmethod
    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        """Insert or replace a run (runs expire with `expires_at`); with `only_if_new`,
        write nothing if the run exists. True if written."""

    @abstractmethod
    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None: ...

    @abstractmethod
    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        """Drop a conversation's runs (their candidates quote the user)."""
