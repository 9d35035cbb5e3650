"""Implementations of the ports. Only `config.py` chooses among them."""
