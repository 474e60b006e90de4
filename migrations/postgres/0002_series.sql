-- Series (DESIGN.md, "Series"): one row per series definition and one per
-- bucket, a sketch of one time bucket at one level. An HLL bucket lives in
-- a real hll column, so postgresql-hll's rolling window query runs on the
-- buckets as is:
--   SELECT start, hll_cardinality(hll_union_agg(hll) OVER (ORDER BY start ROWS 6 PRECEDING))
--   FROM sketchd_series_buckets WHERE series = 'dau' AND level = 'day' ORDER BY start;
CREATE TABLE sketchd_series (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    kind       text NOT NULL,
    params     jsonb NOT NULL,
    -- The empty sketch at the series' parameters (sketchd's encoding),
    -- from which sketchd reads them back exactly.
    proto      bytea NOT NULL,
    tz         text NOT NULL,
    -- Finest first: [{"level": "day", "retention": "P400D"}, ...].
    levels     jsonb NOT NULL,
    late_limit text NOT NULL,
    created_at timestamptz NOT NULL
);

COMMENT ON TABLE sketchd_series IS 'sketchd: one row per series definition';
COMMENT ON COLUMN sketchd_series.params IS 'the bucket sketches'' parameters, for readers; sketchd reads them from proto';
COMMENT ON COLUMN sketchd_series.tz IS 'the IANA time zone bucket edges are in';

CREATE TABLE sketchd_series_buckets (
    series     text COLLATE "C" NOT NULL,
    level      text NOT NULL CHECK (level IN ('hour', 'day', 'week', 'month')),
    start      timestamptz NOT NULL,
    hll        hll,
    data       bytea,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (series, level, start),
    CONSTRAINT sketchd_series_buckets_one_body CHECK (
        (hll IS NOT NULL AND data IS NULL) OR (hll IS NULL AND data IS NOT NULL))
);

COMMENT ON TABLE sketchd_series_buckets IS 'sketchd: one row per series bucket (series, level, start)';
COMMENT ON COLUMN sketchd_series_buckets.start IS 'the bucket''s first instant; it ends where the next bucket of its level starts, in the series'' zone';
COMMENT ON COLUMN sketchd_series_buckets.hll IS 'the bucket of an hll series (postgresql-hll storage format)';
COMMENT ON COLUMN sketchd_series_buckets.data IS 'the bucket of a series of any other kind (cms: sketchd''s Count-Min format)';

-- On Citus, distribute both by the series' name, co-located: every
-- statement sketchd runs on them names one series (name = $1,
-- series = $1) or scans all shards (list, retention).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_distributed_table('sketchd_series', 'name');
        PERFORM create_distributed_table('sketchd_series_buckets', 'series', colocate_with => 'sketchd_series');
    END IF;
END
$$;
