package pdf

import "syscall"

// workerSysProcAttr has the kernel SIGKILL the worker when the thread that
// started it ends: with the goroutine locked to that thread for the whole
// run (see runWorkerProcess), that is when the server dies, however it
// dies. SIGKILL because the worker may be stuck in MuPDF's C code, where a
// catchable signal would wait for Go code to run. The setting survives the
// exec; Go's fork also kills the child at once if the parent died before
// the setting took effect.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// watchParent is not needed on Linux, where the kernel does the watching
// (see workerSysProcAttr).
func watchParent(int) {}

// workerMemoryLimit caps the worker's address space, so a decompression
// bomb or a runaway MuPDF allocation fails inside the worker (reported as
// a corrupt file) instead of pushing the host into swap or the OOM killer.
const workerMemoryLimit = 4 << 30

func limitWorkerMemory() {
	if raceEnabled {
		return
	}
	lim := syscall.Rlimit{Cur: workerMemoryLimit, Max: workerMemoryLimit}
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &lim)
}
