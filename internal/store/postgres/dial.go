package postgres

import (
	"context"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialer returns the pool's dial function: the connection string's
// connect_timeout (if any), and on TCP connections keepalives (a probe
// after 5 s idle, every 2 s, 3 unanswered end it) and, where the system
// has it, a user timeout: data unacknowledged for userTimeout ends the
// connection. A cut link then fails the connection within about
// userTimeout instead of after TCP's retransmissions (15 minutes by
// default on Linux), and a connection idle in the pool is found dead in
// about 11 s.
func dialer(connectTimeout, userTimeout time.Duration) pgconn.DialFunc {
	d := &net.Dialer{
		Timeout:         connectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3},
		Control: func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			var err error
			if cerr := c.Control(func(fd uintptr) { err = setUserTimeout(fd, userTimeout) }); cerr != nil {
				return cerr
			}
			return err
		},
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}
