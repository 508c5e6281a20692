-- The most expensive compactions: what each summariser call cost, with the
-- mode as recorded (pressure, overflow, manual), how much it shadowed and
-- how big the summary came out (run in the export directory:
--   cd OUT && duckdb -f costliest-compactions.sql).
SELECT
    c.home, c.log, s.project, c.compaction_id, c.start_seq, c.time, c.mode, c.status,
    c.shadowed_nodes, c.shadowed_tokens, c.summary_tokens,
    c.summariser_model, c.summariser_input_tokens, c.summariser_output_tokens,
    c.summariser_cost_usd, c.error
FROM read_parquet('compactions/*/*.parquet', hive_partitioning = true, union_by_name = true) c
JOIN read_parquet('sessions/*/*.parquet', hive_partitioning = true, union_by_name = true) s
  ON c.session_key = s."key"
ORDER BY c.summariser_cost_usd DESC NULLS LAST, c.shadowed_tokens DESC NULLS LAST, c."key"
LIMIT 20;
