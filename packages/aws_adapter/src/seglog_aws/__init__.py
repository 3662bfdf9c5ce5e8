"""seglog_aws."""
