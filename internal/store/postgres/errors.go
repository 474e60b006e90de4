package postgres

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// transient reports whether err means the database cannot be reached or
// cannot serve now, so the same request may succeed later: a network or
// connection failure, a timeout, or a server shutting down, starting,
// recovering or out of connections.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case strings.HasPrefix(pe.Code, "57P"): // admin shutdown, crash shutdown, cannot connect now
			return true
		case pe.Code == "53300", pe.Code == "53400": // too many connections, configuration limit
			return true
		case pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock: retry
			return true
		case pe.Code == "25006": // read-only transaction: a standby being promoted
			return true
		case pe.Code == "57014": // query canceled: its deadline passed
			return true
		}
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	return pgconn.SafeToRetry(err) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "conn closed") ||
		strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "broken pipe") ||
		strings.Contains(err.Error(), "connection reset")
}

// timedOut reports whether err is a deadline passing (a query cancelled
// at a request's deadline included) rather than the database failing:
// it does not make the node unready.
func timedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || errors.As(err, &pe) && pe.Code == "57014"
}
