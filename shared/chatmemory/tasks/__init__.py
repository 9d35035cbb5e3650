"""The edge for work off the HTTP path: what the state machines pass each task (pydantic
payload models), the one handler shape every task Lambda shares, and the one shape of
a queue consumer (fold and idle messages).

The services below take domain types and return dataclasses; pydantic stays here.
"""
