"""seglog_emulator."""
