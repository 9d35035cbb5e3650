"""The product's words and rules, with no I/O: what a memory is and what may happen to it."""
