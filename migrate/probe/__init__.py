"""The read-only verbs: what a path is (:mod:`.detect`), what it holds (:mod:`.inspect`),
its hemera and nox hashes (:mod:`.hashes`), and which implementation of each hot path this
build runs (:mod:`.versions`, what ``bbg-migrate --version`` prints).  Nothing here writes."""
