"""``python -m migrate`` is the same as the ``bbg-migrate`` command."""

from migrate.cli import main

if __name__ == "__main__":
    main()
