"""Domain prefixes of the hemera digests that legacy stores and the real tools print.

Each digest is hemera(domain || bytes); the domains end in NUL so that no domain is a
prefix of another domain followed by data.  Use ``Hasher(domain)`` then ``update``, or
``hash_file(path, prefix=domain)``.
"""

from __future__ import annotations

from typing import Final

#: ``hemera_source_digest`` of a Signal log: domain || the whole file.
LEGACY_SOURCE: Final = b"cybergraph/legacy-source/v1\0"

#: ``archive_digest_hemera``: domain || the archive-digest row stream (the rows of the five
#: tables in archive order, each as ordinal ‖ key ‖ value).
ARCHIVE_ROWS: Final = b"bbg/application-archive-rows/1\0"
