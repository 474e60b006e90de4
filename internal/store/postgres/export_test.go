package postgres

// ReadRunsSQL is the statement a series read runs, for the test that
// checks its plan.
const ReadRunsSQL = readRunsSQL
