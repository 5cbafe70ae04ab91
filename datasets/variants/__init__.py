"""Variant generators (DESIGN.md): seeded, versioned, idempotent rules that make variants of base questions."""
