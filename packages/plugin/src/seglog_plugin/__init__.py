"""seglog as an application of its own tools (issue 36, point 4).

The emulator, the local stack and the build know nothing of seglog: they run any SAM application. What only seglog
needs from them lives here, on seglog's side of the line, importing both:

- :mod:`.chaos`: seglog's chaos campaign (its workloads of spreadsheet edits, its invariants I1-I6, its crash
  points, its dead-letter and redrive faults, its report) driving the emulator;
- :mod:`.resources`: seglog's resources (its tables, bucket and queues by role) read from a local deployment or
  a deployed stack's record;
- :mod:`.smoke`: ``seglog smoke``, a workload and the invariants on a deployed stack.
"""
