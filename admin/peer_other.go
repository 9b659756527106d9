//go:build !linux

package admin

import "net"

// peerUID cannot ask this system who is connected: the admin socket is
// guarded by its file's mode alone.
func peerUID(net.Conn) (int, error) { return -1, errNoPeerCred }
