-- dsh usage --by day, from an export (run in the export directory:
--   cd OUT && duckdb -f usage-by-day.sql). Dates are UTC, as `dsh usage`'s
-- default --tz, requests with no recorded time are the group 'unknown'.
SET TimeZone = 'UTC';
SELECT
    coalesce(strftime(time, '%Y-%m-%d'), 'unknown')             AS day,
    count(*) FILTER (WHERE caller = 'agent')                    AS requests,
    count(*) FILTER (WHERE caller = 'summariser')               AS summariser_requests,
    sum(input_tokens)                                           AS input_tokens,
    sum(cache_read_tokens)                                      AS cache_read_tokens,
    sum(cache_write_tokens)                                     AS cache_write_tokens,
    sum(output_tokens)                                          AS output_tokens,
    sum(reasoning_tokens)                                       AS reasoning_tokens,
    sum(input_tokens + cache_read_tokens + cache_write_tokens + output_tokens) AS total_tokens,
    coalesce(sum(cost_usd), 0)                                  AS cost_usd,
    count(cost_usd)                                             AS priced_requests,
    count(*) - count(cost_usd)                                  AS unpriced_requests
FROM read_parquet('requests/*/*.parquet', hive_partitioning = true, union_by_name = true)
GROUP BY 1
ORDER BY (day = 'unknown'), day;
