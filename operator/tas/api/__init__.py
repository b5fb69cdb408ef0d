"""Pydantic models of our CRDs, the Kueue constants, and parsing of Job annotations."""
