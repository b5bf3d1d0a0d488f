"""bbg-migrate: move legacy cyber stores into a BBG store (pipeline, store, CLI)."""

__version__ = "0.1.0"
