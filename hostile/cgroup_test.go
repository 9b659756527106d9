//go:build hostile

package hostile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is the memory cgroup the servers under attack run in: cgroup v2
// when the machine has it, else v1's memory controller. The group's limit
// is what kills a server whose memory runs away, as a container's or a
// systemd unit's limit would in production.
type cgroup struct {
	dir string
	v2  bool
}

// newCgroup makes a memory cgroup limited to limit bytes (and no swap), or
// says why it cannot.
func newCgroup(limit int64) (*cgroup, error) {
	name := fmt.Sprintf("docsift-hostile-%d", os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg := &cgroup{dir: filepath.Join("/sys/fs/cgroup", name), v2: true}
		if err := os.Mkdir(cg.dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w (the suite runs as root, or where it may make cgroups)", err)
		}
		if err := cg.write("memory.max", strconv.FormatInt(limit, 10)); err != nil {
			cg.remove()
			return nil, fmt.Errorf("cgroup v2: %w (is the memory controller in /sys/fs/cgroup/cgroup.subtree_control?)", err)
		}
		if _, err := os.Stat(filepath.Join(cg.dir, "memory.swap.max")); err == nil {
			if err := cg.write("memory.swap.max", "0"); err != nil {
				cg.remove()
				return nil, fmt.Errorf("cgroup v2: %w", err)
			}
		}
		return cg, nil
	}
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("no cgroup v2 (/sys/fs/cgroup/cgroup.controllers) and no cgroup v1 memory controller at %s: %w", root, err)
	}
	cg := &cgroup{dir: filepath.Join(root, name)}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v1: %w (the suite runs as root, or where it may make cgroups)", err)
	}
	if err := cg.write("memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
		cg.remove()
		return nil, fmt.Errorf("cgroup v1: %w", err)
	}
	// With swap accounted, memory and swap together get the same limit:
	// no swapping past it.
	if _, err := os.Stat(filepath.Join(cg.dir, "memory.memsw.limit_in_bytes")); err == nil {
		if err := cg.write("memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
			cg.remove()
			return nil, fmt.Errorf("cgroup v1: %w", err)
		}
	}
	return cg, nil
}

func (cg *cgroup) write(file, value string) error {
	return os.WriteFile(filepath.Join(cg.dir, file), []byte(value), 0o644)
}

func (cg *cgroup) read(file string) string {
	b, err := os.ReadFile(filepath.Join(cg.dir, file))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procs is the file a process writes its pid to, to join the group.
func (cg *cgroup) procs() string { return filepath.Join(cg.dir, "cgroup.procs") }

// usage is what the group's processes hold now, page cache included.
func (cg *cgroup) usage() int64 {
	file := "memory.usage_in_bytes"
	if cg.v2 {
		file = "memory.current"
	}
	n, _ := strconv.ParseInt(cg.read(file), 10, 64)
	return n
}

// peak is the most the group has held since resetPeak, or 0 when the
// kernel does not say (cgroup v2 before 5.19; the samples tell then).
func (cg *cgroup) peak() int64 {
	file := "memory.max_usage_in_bytes"
	if cg.v2 {
		file = "memory.peak"
	}
	n, _ := strconv.ParseInt(cg.read(file), 10, 64)
	return n
}

// resetPeak starts a new peak where the kernel allows it (v1).
func (cg *cgroup) resetPeak() {
	if !cg.v2 {
		cg.write("memory.max_usage_in_bytes", "0")
	}
}

// oomKills counts the processes the group's limit has killed.
func (cg *cgroup) oomKills() int {
	file := "memory.oom_control"
	if cg.v2 {
		file = "memory.events"
	}
	for _, line := range strings.Split(cg.read(file), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// remove kills what is left in the group (the suite's own servers and
// their children) and removes it.
func (cg *cgroup) remove() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := strings.Fields(cg.read("cgroup.procs"))
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := os.Remove(cg.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", cg.dir, err)
		}
		time.Sleep(50 * time.Millisecond) // the kernel's reaping of killed processes has no event to wait on
	}
}
