"""seglog's Lambda functions. Each module exposes ``handler(event, context)``."""
