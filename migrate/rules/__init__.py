"""The rules a legacy cell store's five tables must keep, over any source of sorted rows.

* :mod:`.shape`: what one streaming pass sees row by row -- the table set, key and value
  lengths, codec bytes, per-table statistics and the archive digests;
* :mod:`.content_ids`: the content ids cybergraph's codec-checked import verifies (Blob:
  hemera of the payload; Data: its nox id; children of Data pairs);
* :mod:`.links`: bbg's cross-table rules (contiguous history, heads, content of commits,
  request receipts) and neuron's birth rule for mapped origins;
* :mod:`.report`: all of them in one report, as ``inspect``, the preflight, the transfer and
  ``doctor`` give it;
* :mod:`.sources`: the sources they read -- a cell.redb as five sorted tables, and the
  bounded pages the migration and the transfer stage from such sources.
"""
