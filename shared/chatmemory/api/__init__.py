"""The HTTP edge shared by the functions: schemas, identity, errors, routes (docs/api.md)."""
