"""``python -m migrate`` is the same as the ``bbg-migrate`` command."""

from migrate.entry import main

if __name__ == "__main__":
    main()
