"""Deterministic simulation of seglog (DESIGN §11): one process, simulated time and AWS, faults from one seed."""
