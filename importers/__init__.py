"""One reader per legacy format: ``redb`` (cell.redb), ``signal_log``, ``text_archive``."""
