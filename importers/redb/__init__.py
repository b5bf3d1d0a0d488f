"""Reader for redb database files (placeholder until the reader lands)."""

BACKEND = "python"
