-- dsh usage --by project, from an export (run in the export directory:
--   cd OUT && duckdb -f usage-by-project.sql). A request's project is its
-- session's (the header's cwd), sessions without one are 'unknown'.
-- Costliest first, then most tokens, 'unknown' last.
SELECT * FROM (
    SELECT
        coalesce(s.project, 'unknown')                              AS project,
        count(*) FILTER (WHERE r.caller = 'agent')                  AS requests,
        count(*) FILTER (WHERE r.caller = 'summariser')             AS summariser_requests,
        sum(r.input_tokens)                                         AS input_tokens,
        sum(r.cache_read_tokens)                                    AS cache_read_tokens,
        sum(r.cache_write_tokens)                                   AS cache_write_tokens,
        sum(r.output_tokens)                                        AS output_tokens,
        sum(r.reasoning_tokens)                                     AS reasoning_tokens,
        sum(r.input_tokens + r.cache_read_tokens + r.cache_write_tokens + r.output_tokens) AS total_tokens,
        coalesce(sum(r.cost_usd), 0)                                AS cost_usd,
        count(r.cost_usd)                                           AS priced_requests,
        count(*) - count(r.cost_usd)                                AS unpriced_requests
    FROM read_parquet('requests/*/*.parquet', hive_partitioning = true, union_by_name = true) r
    JOIN read_parquet('sessions/*/*.parquet', hive_partitioning = true, union_by_name = true) s
      ON r.session_key = s."key"
    GROUP BY 1
)
ORDER BY (project = 'unknown'), cost_usd DESC, total_tokens DESC, project;
