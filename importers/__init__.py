"""One reader per legacy format: ``redb`` (cell.redb), ``signal_log`` (the old cyb Signal log),
``frame_log`` (bbg's CLI frame log), ``text_archive``."""
