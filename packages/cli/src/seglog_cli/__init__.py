"""seglog_cli."""
