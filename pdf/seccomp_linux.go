//go:build amd64 || arm64

package pdf

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The worker's seccomp filter refuses the system calls a document reader
// never makes and an exploit would: it lets everything else through, so
// the Go runtime, MuPDF and Tesseract run unchanged. It is written here
// rather than with a filter library because it must also refuse the other
// calling conventions of the machine (the 32-bit int 0x80 and x32 ABIs on
// amd64, 32-bit ARM on arm64), whose syscall numbers differ: a filter
// that lets calls of another ABI through, as a list of refused calls in
// the native ABI would, is bypassed by making them that way.

// seccompRefused are refused with EPERM, in every form.
var seccompRefused = []uint32{
	// Sockets of every family: the network (UDP, and TCP as Multipath
	// TCP, which Landlock does not see), and local sockets, the server's
	// admin socket among them (Landlock before ABI 9 does not see those
	// either). The worker talks to its parent through inherited pipes.
	unix.SYS_SOCKET, unix.SYS_SOCKETPAIR,
	// io_uring opens sockets and files without these system calls, out of
	// the filter's sight.
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// Reading or writing another process's memory.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	// Kernel interfaces with a history of privilege escalations that no
	// reader of documents uses.
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	// New namespaces, above all a user namespace, in which an
	// unprivileged process gains the capabilities to reach much more of
	// the kernel; and mounting.
	unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
}

// cloneNamespaces are the clone flags that make new namespaces, refused
// as unshare is. (CLONE_NEWTIME shares its bit with clone's exit signal
// and is only given through clone3 or unshare.)
const cloneNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Where seccomp's data for a call (struct seccomp_data) holds its number,
// its ABI and the low half of its first argument (both architectures here
// are little-endian), and the syscall numbers of amd64's x32 ABI.
const (
	seccompNr       = 0
	seccompArch     = 4
	seccompArg0Low  = 16
	seccompX32Bit   = 0x40000000
	seccompRetErrno = unix.SECCOMP_RET_ERRNO
)

// seccompProgram builds the filter for the machine's ABI, arch: a call in
// another ABI, or clone3 (whose flags a filter cannot read), is refused
// with ENOSYS, which the C library takes as "use clone" and nothing else
// makes; a call in seccompRefused, or a clone making a namespace, with
// EPERM; anything else is allowed.
func seccompProgram(arch uint32, x32 bool) []bpf.Instruction {
	var (
		enosys = bpf.RetConstant{Val: seccompRetErrno | uint32(unix.ENOSYS)}
		eperm  = bpf.RetConstant{Val: seccompRetErrno | uint32(unix.EPERM)}
		allow  = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		enosys,
		bpf.LoadAbsolute{Off: seccompNr, Size: 4},
	}
	if x32 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: seccompX32Bit, SkipFalse: 1}, enosys)
	}
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1}, enosys)
	for _, nr := range seccompRefused {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, eperm)
	}
	return append(prog,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE, SkipTrue: 3},
		bpf.LoadAbsolute{Off: seccompArg0Low, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaces, SkipFalse: 1},
		eperm,
		allow,
	)
}

// loadSeccompFilter applies seccompProgram to every thread of this
// process, and so to the processes it starts. It sets no_new_privs, which
// seccomp requires of an unprivileged process (and which Landlock has
// already set when it is in force).
func loadSeccompFilter() error {
	arch, x32 := uint32(unix.AUDIT_ARCH_X86_64), true
	if runtime.GOARCH == "arm64" {
		arch, x32 = unix.AUDIT_ARCH_AARCH64, false
	}
	raw, err := bpf.Assemble(seccompProgram(arch, x32))
	if err != nil {
		return fmt.Errorf("assemble the syscall filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// no_new_privs is a property of the thread: set it on the one that
	// loads the filter, which then spreads both to every thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	switch {
	case errno != 0:
		return fmt.Errorf("load the syscall filter: %w", errno)
	case r != 0:
		return fmt.Errorf("load the syscall filter: thread %d could not take it", r)
	}
	return nil
}
