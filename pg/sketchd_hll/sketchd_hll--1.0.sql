-- sketchd_hll 1.0 (docs/postgres.md, "Ranking on the database").
\echo Use "CREATE EXTENSION sketchd_hll" to load this file. \quit

-- sketchd_hll_joint(target, candidate, key, checksum) counts, over the
-- register positions of two FULL HLLs at the same parameters, how many
-- hold each pair of values: the table sketchd's maximum-likelihood
-- intersection reads. NULL for any other pair, and unless checksum is
-- MD5(key || candidate), the candidate row's checksum (sketchd then
-- reads the candidate itself, and checks it). The encoding is sketchd's
-- (internal/sketch/joint.go).
CREATE FUNCTION sketchd_hll_joint(hll, hll, bytea, bytea) RETURNS bytea
    AS 'MODULE_PATHNAME', 'sketchd_hll_joint'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sketchd_hll_joint(hll, hll, bytea, bytea) IS
    'sketchd: the register-pair counts of two FULL HLLs at the same parameters whose candidate''s checksum holds, or NULL';
