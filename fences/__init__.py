"""Seals, fences and reader generations of a BBG store."""
