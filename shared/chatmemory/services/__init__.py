"""Use cases: what the functions call. Services speak to ports, never to adapters."""
