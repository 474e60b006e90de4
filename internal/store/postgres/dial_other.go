//go:build !linux

package postgres

import "time"

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not offered:
// keepalives alone find a dead link.
func setUserTimeout(uintptr, time.Duration) error { return nil }
