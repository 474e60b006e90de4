-- One row per sketch. An HLL lives in a real hll column (postgresql-hll's
-- type, byte-identical to sketchd's encoding), so SQL reads it directly:
--   SELECT name, hll_cardinality(hll) FROM sketchd_sketches;
-- Other kinds keep their encoding in data (a Count-Min in sketchd's format).
-- Names sort bytewise (COLLATE "C"), as sketchd lists them and locks them.
CREATE TABLE sketchd_sketches (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    kind       text NOT NULL,
    params     jsonb NOT NULL,
    metric     boolean NOT NULL DEFAULT false,
    hll        hll,
    data       bytea,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT sketchd_sketches_one_body CHECK (
        (kind = 'hll' AND hll IS NOT NULL AND data IS NULL)
        OR (kind <> 'hll' AND hll IS NULL AND data IS NOT NULL))
);

COMMENT ON TABLE sketchd_sketches IS 'sketchd: one row per sketch';
COMMENT ON COLUMN sketchd_sketches.hll IS 'the HLL of an hll sketch (postgresql-hll storage format)';
COMMENT ON COLUMN sketchd_sketches.data IS 'the encoding of a sketch of any other kind (cms: sketchd''s Count-Min format)';
COMMENT ON COLUMN sketchd_sketches.params IS 'creation parameters, for readers; sketchd reads them from the sketch itself';

-- On Citus, distribute by name: every statement sketchd runs names its
-- rows by name (name = $1, name = ANY($1)) or scans all shards (list).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_distributed_table('sketchd_sketches', 'name');
    END IF;
END
$$;
