-- sketchd_hll 1.0 (docs/postgres.md, "Ranking on the database").
\echo Use "CREATE EXTENSION sketchd_hll" to load this file. \quit

-- sketchd_hll_joint(target, candidate) counts, over the register
-- positions of two FULL HLLs at the same parameters, how many hold each
-- pair of values: the table sketchd's maximum-likelihood intersection
-- reads. NULL for any other pair (sketchd then reads the candidate
-- itself). The encoding is sketchd's (internal/sketch/joint.go).
CREATE FUNCTION sketchd_hll_joint(hll, hll) RETURNS bytea
    AS 'MODULE_PATHNAME', 'sketchd_hll_joint'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sketchd_hll_joint(hll, hll) IS
    'sketchd: the register-pair counts of two FULL HLLs at the same parameters, or NULL';
