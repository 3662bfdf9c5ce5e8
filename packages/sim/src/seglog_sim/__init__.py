"""Deterministic simulation of seglog (DESIGN §11): one process, simulated time and AWS, faults from one seed."""


def quiet_logs() -> None:
    """Drop the log lines of the code under test (a seed logs hundreds; the report says what matters). The
    simulate command and the simulator's tests call it; it sets structlog's level for the whole process."""
    import logging

    from seglog_core import logs

    logs.configure(level=logging.CRITICAL)
