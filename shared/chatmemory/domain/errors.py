"""Domain exceptions: raised by the domain and services, mapped to HTTP in one place."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every error the product can explain to a caller."""

    code = "domain_error"


class InvalidField(DomainError, ValueError):
    """A value broke a rule; the message names the field so the caller can fix it."""

    code = "validation_error"

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")


class NotFound(DomainError):
    """The object does not exist for this user (another user's object looks the same)."""

    code = "not_found"

    def __init__(self, kind: str, object_id: str) -> None:
        self.kind = kind
        self.object_id = object_id
        super().__init__(f"{kind} not found")


class MemoryNotFound(NotFound):
    def __init__(self, memory_id: str) -> None:
        super().__init__("memory", memory_id)


class ConversationNotFound(NotFound):
    def __init__(self, conversation_id: str) -> None:
        super().__init__("conversation", conversation_id)


class RoomNotFound(NotFound):
    def __init__(self, room_id: str) -> None:
        super().__init__("room", room_id)


class NoticeNotFound(NotFound):
    def __init__(self, notice_id: str) -> None:
        super().__init__("notice", notice_id)


class ConcurrentChange(DomainError):
    """Someone else changed the object first; the caller's write was not applied."""

    code = "conflict"


class SecretRefused(DomainError):
    """The text looks like a secret; secrets are never stored, on any path."""

    code = "secret_refused"

    def __init__(self, field: str, secret_kind: str) -> None:
        self.field = field
        self.secret_kind = secret_kind
        super().__init__(
            f"{field} looks like it contains a {secret_kind}; secrets are never stored"
        )


class InstructionRefused(DomainError):
    """The text is shaped like an instruction to the model, not something about the user.

    Stored text reaches every later prompt; text that tries to override the rules, speak
    as the system or open a prompt section is never stored, on any path.
    """

    code = "instruction_refused"

    def __init__(self, field: str, shape: str) -> None:
        self.field = field
        self.shape = shape
        super().__init__(
            f"{field} reads as an instruction to the assistant ({shape}), not something "
            "about you; memories keep facts and preferences, never instructions"
        )


class MemoryDisabled(DomainError):
    """The user switched memory off; nothing is read or written."""

    code = "memory_disabled"


class ModelUnavailable(DomainError):
    """The model could not answer (timeouts, overload, errors): nothing of the turn is kept."""

    code = "model_unavailable"


class ModelRefused(ModelUnavailable):
    """The model declined this input. Retrying the same input will not help: skip it."""

    code = "model_refused"


_QUOTA_WORDS = {
    "writes": "memory writes",
    "imported_rows": "imported rows",
    "room_lines": "room lines",
    "observed_turns": "observed turns",
}


class RateLimited(DomainError):
    """The user used up a quota for this minute (`domain/quotas.py`): nothing of the
    request was done, and it may be tried again after `retry_after` seconds."""

    code = "rate_limited"

    def __init__(self, quota: str, retry_after: int) -> None:
        self.quota = quota
        self.retry_after = retry_after
        what = _QUOTA_WORDS.get(quota, "turns")
        super().__init__(f"too many {what} this minute; try again in {retry_after} second(s)")


class StorageFull(DomainError):
    """The user has stored as much as one account may (`domain/quotas.py Ceiling`):
    nothing of the request was written; deleting memories or conversations makes room."""

    code = "storage_full"

    def __init__(self, reached: str) -> None:
        super().__init__(
            f"this account holds {reached}; delete memories or conversations to make room"
        )


class PartlyApplied(DomainError):
    """A request failed after part of it was written: what was written stands, and the
    caller is told so — never that nothing was applied (`str` says what stands and
    whether sending the same request again is safe)."""

    code = "partly_applied"
