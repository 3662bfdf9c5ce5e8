"""seglog_core."""
