-- Checksums of sketchd's own on every stored value it decodes and serves
-- (docs/damage.md): a sketch, a series bucket, a series definition, an
-- idempotency key's answer. checksum = MD5(MD5(key) || body): key is text
-- naming the row, body the bytes sketchd decodes.
--   sketch      'sketch <name> <kind>'                  hll_send(hll), or data
--   bucket      'bucket <series> <level> <start in microseconds since 1970>'  hll_send(hll), or data
--   definition  'series <name> <kind> <tz> <late_limit> <levels as text>'  proto
--   key         'key <target> <scope> <idempotency_key>'  fingerprint || answer
-- sketchd writes it with every value and checks it with every read, so a
-- value changed from SQL must get its checksum too; docs/postgres.md has
-- the expressions. The values in the tables now get the checksum of the
-- bytes they hold: damage made before this step is found only where the
-- bytes do not decode.
--
-- Each change runs as a statement of its own (EXECUTE), as in
-- 0004_expiry.sql: Citus passes the text of an ALTER TABLE on a
-- distributed table to its workers, which refuse a text of several
-- statements. Every function the UPDATEs apply to columns is IMMUTABLE
-- (md5, decode, ||, casts through text; the start of a bucket becomes microseconds
-- through an interval, since extract(epoch FROM timestamptz) is STABLE),
-- as Citus requires of a modification of a distributed table.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE sketchd_sketches ADD COLUMN checksum bytea';
    EXECUTE 'ALTER TABLE sketchd_series_buckets ADD COLUMN checksum bytea';
    EXECUTE 'ALTER TABLE sketchd_series ADD COLUMN checksum bytea';
    EXECUTE 'ALTER TABLE sketchd_idempotency ADD COLUMN checksum bytea';

    EXECUTE $u$UPDATE sketchd_sketches SET checksum =
        decode(md5(decode(md5('sketch ' || name || ' ' || kind), 'hex') || coalesce(hll_send(hll), data)), 'hex')$u$;
    EXECUTE $u$UPDATE sketchd_series_buckets SET checksum =
        decode(md5(decode(md5('bucket ' || series || ' ' || level || ' ' || (extract(epoch FROM start - 'epoch'::timestamptz) * 1000000)::bigint::text), 'hex')
            || coalesce(hll_send(hll), data)), 'hex')$u$;
    EXECUTE $u$UPDATE sketchd_series SET checksum =
        decode(md5(decode(md5('series ' || name || ' ' || kind || ' ' || tz || ' ' || late_limit || ' ' || levels::text), 'hex') || proto), 'hex')$u$;
    EXECUTE $u$UPDATE sketchd_idempotency SET checksum =
        decode(md5(decode(md5('key ' || target || ' ' || scope || ' ' || idempotency_key), 'hex') || fingerprint || answer), 'hex')
        WHERE answer IS NOT NULL$u$;

    -- A row without one (an INSERT by an older sketchd, or from SQL) is
    -- refused. An idempotency key has none while its write runs.
    EXECUTE 'ALTER TABLE sketchd_sketches ALTER COLUMN checksum SET NOT NULL';
    EXECUTE 'ALTER TABLE sketchd_series_buckets ALTER COLUMN checksum SET NOT NULL';
    EXECUTE 'ALTER TABLE sketchd_series ALTER COLUMN checksum SET NOT NULL';

    EXECUTE $c$COMMENT ON COLUMN sketchd_sketches.checksum IS 'sketchd''s checksum of the value: MD5(MD5(''sketch <name> <kind>'') || hll_send(hll) or data); set it with every change of the value'$c$;
    EXECUTE $c$COMMENT ON COLUMN sketchd_series_buckets.checksum IS 'sketchd''s checksum of the bucket: MD5(MD5(''bucket <series> <level> <start in microseconds since 1970>'') || hll_send(hll) or data)'$c$;
    EXECUTE $c$COMMENT ON COLUMN sketchd_series.checksum IS 'sketchd''s checksum of the definition: MD5(MD5(''series <name> <kind> <tz> <late_limit> <levels::text>'') || proto)'$c$;
    EXECUTE $c$COMMENT ON COLUMN sketchd_idempotency.checksum IS 'sketchd''s checksum of the answer: MD5(MD5(''key <target> <scope> <idempotency_key>'') || fingerprint || answer)'$c$;
END
$$;
