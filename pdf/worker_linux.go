package pdf

import "syscall"

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
