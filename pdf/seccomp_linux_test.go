//go:build amd64 || arm64

package pdf

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProgram runs the worker's filter in a BPF interpreter on the
// calls a real kernel cannot easily be made to see from Go: calls in
// another ABI of the machine, and the x32 ABI. (TestWorkerSandbox checks
// the native calls on the real kernel.)
func TestSeccompProgram(t *testing.T) {
	const arch, otherArch = 0xc000003e, 0x40000003 // x86_64, i386
	vm, err := bpf.NewVM(seccompProgram(arch, true))
	if err != nil {
		t.Fatal(err)
	}
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	for _, c := range []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint32
		want uint32
	}{
		{"read", arch, unix.SYS_READ, 0, allow},
		{"socket", arch, unix.SYS_SOCKET, unix.AF_INET, eperm},
		{"io_uring_setup", arch, unix.SYS_IO_URING_SETUP, 1, eperm},
		{"unshare", arch, unix.SYS_UNSHARE, unix.CLONE_NEWUSER, eperm},
		{"clone a thread", arch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, allow},
		{"clone a process", arch, unix.SYS_CLONE, unix.CLONE_VFORK | unix.CLONE_VM | unix.CLONE_PIDFD | uint32(unix.SIGCHLD), allow},
		{"clone a user namespace", arch, unix.SYS_CLONE, unix.CLONE_NEWUSER | uint32(unix.SIGCHLD), eperm},
		{"clone3", arch, unix.SYS_CLONE3, 0, enosys},
		{"x32 socket", arch, seccompX32Bit | 41, unix.AF_INET, enosys},
		{"i386 socketcall", otherArch, 102, 1, enosys},
		{"i386 read", otherArch, 3, 0, enosys},
	} {
		// The kernel's filter reads struct seccomp_data in the machine's
		// byte order; the interpreter reads big-endian, as on a network.
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompNr:], c.nr)
		binary.BigEndian.PutUint32(data[seccompArch:], c.arch)
		binary.BigEndian.PutUint32(data[seccompArg0Low:], c.arg0)
		got, err := vm.Run(data)
		if err != nil || uint32(got) != c.want {
			t.Errorf("%s: filter returns %#x (%v), want %#x", c.name, got, err, c.want)
		}
	}
}
