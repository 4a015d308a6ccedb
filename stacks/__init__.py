"""Stacks: one module per stack; each only wires constructs together."""
