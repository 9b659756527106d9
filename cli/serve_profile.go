package cli

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"
)

// cpuProfileSlice is how long each file of a CPU profile covers. A server
// killed with SIGKILL (as `docsift bench scale` does) never writes a
// profile it holds open, so the profile is split into slices that are each
// complete on disk, short enough that the one lost is a small part of a
// benchmark of seconds; `go tool pprof` merges them.
const cpuProfileSlice = time.Second

// profileCPU is a developer's hook, not a flag: when DOCSIFT_CPUPROFILE is
// set, the server profiles its CPU into PREFIX.PID.N.pprof files until
// stop is called. Child servers of a benchmark inherit the variable.
func profileCPU(log *slog.Logger) (stop func()) {
	prefix := os.Getenv("DOCSIFT_CPUPROFILE")
	if prefix == "" {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for n := 0; ; n++ {
			path := fmt.Sprintf("%s.%d.%d.pprof", prefix, os.Getpid(), n)
			f, err := os.Create(path)
			if err != nil {
				log.Warn("cpu profile not written", "err", err)
				return
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				log.Warn("cpu profile not written", "err", err)
				return
			}
			select {
			case <-done:
			case <-time.After(cpuProfileSlice):
			}
			pprof.StopCPUProfile()
			f.Close()
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() { close(done); <-finished }
}
