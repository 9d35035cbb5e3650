"""chatmemory: a memory service for chat assistants and personas."""

__version__ = "0.1.0"
