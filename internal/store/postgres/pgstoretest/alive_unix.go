//go:build unix

package pgstoretest

import (
	"os"
	"syscall"
)

// alive reports whether a process pid runs on this host.
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
