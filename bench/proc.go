package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// memoryMaps counts a process's memory maps (0 where /proc has none).
func memoryMaps(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// peakSampleEvery is how often samplePeak reads the server's memory.
const peakSampleEvery = 100 * time.Millisecond

// samplePeak keeps in peak the most anonymous memory process pid holds,
// read every peakSampleEvery until the returned stop is called (which
// takes a last sample). A sample, not the peak itself: the kernel keeps
// no high-water mark of anonymous memory alone (VmHWM counts the
// mapped files too).
func samplePeak(pid int, peak *int64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	sample := func() {
		if anon, _, err := rss(pid); err == nil {
			*peak = max(*peak, anon)
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(peakSampleEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				sample()
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// rss reads a process's anonymous and file-backed resident memory.
func rss(pid int) (anon, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("bench: memory of the server: %w (it needs Linux's /proc)", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name != "RssAnon" && name != "RssFile" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("bench: parse %s: %w", line, err)
		}
		if name == "RssAnon" {
			anon = kb << 10
		} else {
			file = kb << 10
		}
	}
	return anon, file, nil
}

// cpuTime is the CPU time a process has used, user and system, or 0 when
// /proc cannot tell. /proc/<pid>/stat counts it in clock ticks, which Linux
// gives user space at 100 a second on every architecture Go runs on.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15.
	_, rest, ok := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// writtenBytes is what a process has had the disk write so far
// (/proc/<pid>/io write_bytes), or 0 when /proc cannot tell.
func writtenBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// selfCPUTime is the CPU time this process has used, user and system.
func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
