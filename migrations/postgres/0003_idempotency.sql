-- Idempotency keys (DESIGN.md, "Writes safe to retry"): one row per key a
-- write was sent with, written in the transaction of that write, so a
-- committed write always has its key and answer and a rolled-back one
-- neither. The key is scoped by the sender (scope: a digest of its bearer
-- token, '' on a server without tokens) and by the sketch or series the
-- route names (target: '' for /v1/events and /v1/union). answer is NULL
-- only inside the transaction that claims the key; sketchd reads rows
-- whose answer is set. Rows past sketchd's -idempotency-window are
-- deleted in the background by every node.
CREATE TABLE sketchd_idempotency (
    target          text COLLATE "C" NOT NULL,
    scope           text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    fingerprint     bytea NOT NULL,
    answer          bytea,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (target, scope, idempotency_key)
);

CREATE INDEX sketchd_idempotency_created_at ON sketchd_idempotency (created_at);

COMMENT ON TABLE sketchd_idempotency IS 'sketchd: idempotency keys, each written with the write it guards';
COMMENT ON COLUMN sketchd_idempotency.fingerprint IS 'the request''s fingerprint: 128-bit MurmurHash3 of its method, path, query and media type, then its body''s length and CRC-32C';
COMMENT ON COLUMN sketchd_idempotency.answer IS 'the answer sent (status, headers, body in sketchd''s encoding), replayed to a retry';

-- On Citus, distribute by target, co-located with the sketches (and the
-- series, which share their colocation group): the key row of a write to
-- one sketch or series lives in the shard group of that sketch or series,
-- so the write stays a single-shard transaction. Every statement names
-- its target (target = $1) except the background sweep, which runs on all
-- shards.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM create_distributed_table('sketchd_idempotency', 'target', colocate_with => 'sketchd_sketches');
    END IF;
END
$$;
