"""The interfaces the services need, one module per port. Adapters implement them;
`config.py` picks which.

Every store method takes the user id explicitly and touches only that user's rows:
there is no way to ask a store about "everyone" on the request path. The stores split
by aggregate (memories, deletions, conversations, runs, user state, notices, events);
writes that must span aggregates go through `unit_of_work.UnitOfWork`.
"""
