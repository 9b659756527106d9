//go:build hostile

package hostile

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// sampleEvery is how often a meter samples the server's memory, beside
// the kernel's own high-water marks: often enough to see a climb that
// kills the server, whose own mark dies with it.
const sampleEvery = 100 * time.Millisecond

// meter follows a server's memory through one attack.
type meter struct {
	s    *server
	stop chan struct{}
	done chan struct{}

	mu                   sync.Mutex
	rss, childRSS, group int64 // the highest samples
	start                int64 // the server's resident memory at the start
	checked              bool
}

// watchMemory starts the server's high-water marks afresh (its VmHWM and
// the group's peak) and samples them until check.
func watchMemory(t *testing.T, s *server) *meter {
	t.Helper()
	// 5 resets the process's peak resident set size to what it holds now.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.pid), []byte("5"), 0); err != nil {
		t.Logf("resetting the server's VmHWM: %v (its peak is since it started)", err)
	}
	suite.cg.resetPeak()
	m := &meter{s: s, stop: make(chan struct{}), done: make(chan struct{}), start: procBytes(s.pid, "VmRSS")}
	go m.run()
	s.watch = m
	t.Cleanup(func() {
		s.watch = nil
		if !m.checked {
			m.halt()
			m.record(t, "when the test stopped")
		}
	})
	return m
}

func (m *meter) run() {
	defer close(m.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		rss := procBytes(m.s.pid, "VmRSS")
		var kids int64
		for _, c := range children(m.s.pid) {
			kids += procBytes(c, "VmRSS")
		}
		group := suite.cg.usage()
		m.mu.Lock()
		m.rss, m.childRSS, m.group = max(m.rss, rss), max(m.childRSS, kids), max(m.group, group)
		m.mu.Unlock()
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

func (m *meter) halt() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// record stops the samples and records the peaks as a figure.
func (m *meter) record(t *testing.T, when string) int64 {
	t.Helper()
	peak := m.peak()
	m.halt()
	m.mu.Lock()
	kids, group := m.childRSS, max(m.group, suite.cg.peak())
	m.mu.Unlock()
	if when != "" {
		when += ": "
	}
	figure(t, "%sserver peak RSS %s (bound %s; %s at the start), its children's %s, the group's peak %s (limit %s, page cache included)",
		when, mib(peak), mib(rssBound), mib(m.start), mib(kids), mib(group), mib(memoryLimit))
	return peak
}

// requireUnder fails the test at once when the server's resident memory
// is over bound: an attack that has already lost need not run on until
// the group's limit kills the server.
func (m *meter) requireUnder(t *testing.T, bound int64) {
	t.Helper()
	if peak := m.peak(); peak > bound {
		m.check(t, bound)
		t.FailNow()
	}
}

// peak is the server's highest resident set since watchMemory: its VmHWM
// while it lives, else the highest sample.
func (m *meter) peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.rss, procBytes(m.s.pid, "VmHWM"))
}

// check fails the test when the server died or its peak went over bound,
// and records the peaks.
func (m *meter) check(t *testing.T, bound int64) {
	t.Helper()
	m.checked = true
	if m.s.watch == m {
		m.s.watch = nil
	}
	peak := m.record(t, "")
	m.s.requireAlive(t)
	if peak > bound {
		t.Errorf("the server's resident memory reached %s, over the bound of %s", mib(peak), mib(bound))
	}
}
