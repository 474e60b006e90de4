package postgres

// PrefixUnionSQL is the statement a prefix union of HLLs runs, for the
// test that explains it on Citus.
const PrefixUnionSQL = prefixUnionSQL
