"""The bottom layer every package of bbg-migrate may import: the error tree and file helpers.

``importers/`` and ``fences/`` sit above it and never import ``migrate/``; ``migrate/`` sits on
top of all of them.
"""
