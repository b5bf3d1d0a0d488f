"""The bottom layer every package of bbg-migrate may import: the error tree, file helpers and
the rule that picks a hot path's C or pure-Python twin (``twins``).

``importers/`` and ``fences/`` sit above it and never import ``migrate/``; ``migrate/`` sits on
top of all of them.
"""
