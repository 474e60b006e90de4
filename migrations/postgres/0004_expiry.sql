-- Sketch expiry (PUT and PATCH /v1/sketches/{name}): a sketch expires
-- expire_after past its last write (updated_at), or at expire_at; both
-- NULL: never. sketchd reads an expired row as absent (as if deleted) and
-- deletes it in its background pass (-retention-interval). The sketches
-- expired now:
--   SELECT name FROM sketchd_sketches
--   WHERE expire_at <= now() OR now() - updated_at >= expire_after
--
-- Each change runs as a statement of its own (EXECUTE): Citus passes the
-- text of an ALTER TABLE on a distributed table to its workers, which
-- refuse a text of several statements, and takes a constraint only in an
-- ALTER TABLE of its own.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE sketchd_sketches ADD COLUMN expire_after interval, ADD COLUMN expire_at timestamptz';
    EXECUTE 'ALTER TABLE sketchd_sketches ADD CONSTRAINT sketchd_sketches_one_expiry CHECK (expire_after IS NULL OR expire_at IS NULL)';
    EXECUTE $c$COMMENT ON COLUMN sketchd_sketches.expire_after IS 'the sketch expires this long after its last write (updated_at)'$c$;
    EXECUTE $c$COMMENT ON COLUMN sketchd_sketches.expire_at IS 'the sketch expires at this instant'$c$;
END
$$;
