package ollamareal

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of CPU times in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports.
const clockTicks = 100

// member is a process of the server's process group.
type member struct {
	pid      int
	cpu      time.Duration // user + system time so far
	isServer bool
}

// members lists the server and the runner processes it has started: the
// processes of its process group, read from /proc.
func (s *Server) members() ([]member, error) {
	server := s.cmd.Process.Pid
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, fmt.Errorf("ollamareal: list processes: %w", err)
	}
	var out []member
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process has gone
		}
		// The fields after the command (which may hold spaces) start after
		// the last ')': state, ppid, pgrp, then utime and stime at 12, 13.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b)[i+1:])
		if len(fields) < 13 {
			continue
		}
		pgrp, _ := strconv.Atoi(fields[2])
		if pgrp != server {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		out = append(out, member{
			pid:      pid,
			cpu:      time.Duration(utime+stime) * time.Second / clockTicks,
			isServer: pid == server,
		})
	}
	return out, nil
}

// KillRunners kills (SIGKILL) the runner processes the server has started,
// as the kernel's OOM killer or a crash would, and returns how many it
// killed. The server itself keeps running.
func (s *Server) KillRunners() (int, error) {
	ms, err := s.members()
	if err != nil {
		return 0, err
	}
	killed := 0
	for _, m := range ms {
		if !m.isServer && syscall.Kill(m.pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed, nil
}

// CPUTime is the processor time the server and its live runners have used
// so far. On a shared machine wall-clock speed says more about the
// neighbours than about Ollama; the CPU time of a piece of work does not.
func (s *Server) CPUTime() (time.Duration, error) {
	ms, err := s.members()
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, m := range ms {
		total += m.cpu
	}
	return total, nil
}
