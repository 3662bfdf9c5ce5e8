"""seglog_report: what a run looked like and what it would cost on AWS.

- :mod:`.model`: one run's data (lanes of spans and markers, violations, latencies, metered units), the one
  shape the chaos runner, the demo and the simulator all produce;
- :mod:`.prices`: the price table (``prices.json``: AWS list prices by region, dated, each with its source);
- :mod:`.cost`: the ledger (dollars per run and per million appends, next to seed 000's floor);
- :mod:`.html`: ``report.html``, one self-contained file with Plotly embedded;
- :mod:`.console`: the live console ``seglog emulate`` serves.
"""
