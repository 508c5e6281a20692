-- The health findings (`dsh health`): per kind, costliest first, then every
-- finding with the seqs that show it (run in the export directory:
--   cd OUT && duckdb -f health-findings.sql).
SELECT kind,
       count(*)                                        AS findings,
       count(*) FILTER (WHERE severity = 'error')      AS errors,
       count(DISTINCT session_key)                     AS sessions,
       sum(tokens)                                     AS tokens,
       sum(cost_usd)                                   AS cost_usd
FROM read_parquet('findings/*/*.parquet', hive_partitioning = true, union_by_name = true)
GROUP BY kind
ORDER BY cost_usd DESC, tokens DESC, kind;

SELECT home, log, project, kind, severity, seqs, tokens, cost_usd, message
FROM read_parquet('findings/*/*.parquet', hive_partitioning = true, union_by_name = true)
ORDER BY cost_usd DESC, home, log, first_seq;
