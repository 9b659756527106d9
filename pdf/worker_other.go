//go:build !linux

package pdf

import (
	"os"
	"syscall"
	"time"
)

// parentPollInterval is how often a worker checks that its parent lives
// where the kernel cannot be asked to kill it with its parent. A second
// bounds how long an orphan runs on; a getppid call a second costs nothing.
const parentPollInterval = time.Second

// limitWorkerMemory is a no-op where RLIMIT_AS is not dependable.
func limitWorkerMemory() {}

// workerSysProcAttr sets nothing: only Linux has a parent-death signal.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// watchParent exits the worker once it has been re-parented, i.e. its
// parent pid is no longer ppid. That is what happens to an orphan on Unix
// systems; Windows keeps reporting the dead parent's pid, so there an
// orphaned worker runs until its document is done.
func watchParent(ppid int) {
	go func() {
		for range time.Tick(parentPollInterval) {
			if os.Getppid() != ppid {
				os.Exit(workerExitOrphaned)
			}
		}
	}()
}
