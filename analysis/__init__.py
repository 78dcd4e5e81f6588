"""Spark analysis of run histories: `rebalance-lab analyze RUNS… [--out DIR] [--master URL]`.

Reads run directories (history.jsonl, never the cluster); Spark spreads the runs over its
executors, where each run's tables are worked out by the oracle's own definitions (every
rebalance and its phases, stop-the-world per partition, fault → detection, duplicates,
lost records, lag, throughput, commit failures); compares runs grouped by protocol,
assignor, Kafka version, fault kind and scenario in Spark, and writes Parquet, CSV, PNG
plots and self-contained HTML reports. See docs/analysis.md; the job is analysis/job.py.

Nothing here is imported by `rebalance-lab run`: Spark starts only for `analyze`.
"""
