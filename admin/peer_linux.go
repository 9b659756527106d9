package admin

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the user of the process at the other end of c, as the
// kernel recorded it when that process connected (SO_PEERCRED).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("a %T is not a unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), nil
}
