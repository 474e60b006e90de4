package postgres

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestDialerSetsTimeouts: the pool's TCP connections carry keepalives and
// TCP_USER_TIMEOUT, so a cut link fails them in about the write timeout.
func TestDialerSetsTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	c, err := dialer(0, 7*time.Second)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var user, alive, idle int
	var gerr error
	raw.Control(func(fd uintptr) {
		if user, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout); gerr != nil {
			return
		}
		if alive, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); gerr != nil {
			return
		}
		idle, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
	})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if user != 7000 || alive != 1 || idle != 5 {
		t.Errorf("TCP_USER_TIMEOUT %d ms, SO_KEEPALIVE %d, TCP_KEEPIDLE %d s; want 7000, 1, 5", user, alive, idle)
	}
}
