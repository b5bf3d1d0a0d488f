"""The cyber hashes bbg-migrate checks content with.

* :mod:`hashing.hemera`: hemera (Poseidon2 over Goldilocks, 32-byte digests), a C core with a
  pure-Python twin, its tree mode and domains;
* :mod:`hashing.nox`: nox content ids of Data payloads (Model B and the older tagged scheme).

It sits beside the legacy readers (``importers/``), which use it for request ids and
digests, above :mod:`bbg_core`, and never imports ``migrate``.
"""
