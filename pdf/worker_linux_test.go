package pdf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests start real processes: the test binary re-executed as an
// extraction worker (this package's init sees workerEnv) or as a small
// server stand-in that starts one (testParentEnv). The worker's input is a
// pipe the test keeps open, so the worker blocks reading it for as long as
// nothing kills it, and closing the stand-in's end of it does not end it.

const (
	// testParentEnv turns the test binary into a parent that starts an
	// extraction worker reading fd 3 and waits for it forever.
	testParentEnv = "DOCSIFT_PDF_TEST_PARENT"

	// workerStartBytes is written to the worker's input before the test
	// goes on. It is larger than a pipe's buffer (64 KiB on Linux), so the
	// write only completes once the worker is past its start-up checks and
	// reading: the synchronisation needs no sleep.
	workerStartBytes = 1 << 20

	// processTimeout bounds each wait for a process to start or die.
	processTimeout = 20 * time.Second
)

// procStat is what the tests read from /proc/<pid>/stat.
type procStat struct {
	state     byte
	ppid      int
	startTime string
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command name in parentheses may hold spaces; fields follow it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	return procStat{state: fields[0][0], ppid: ppid, startTime: fields[19]}, true
}

// childrenOf returns the pids of the processes whose parent is ppid.
func childrenOf(ppid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.ppid == ppid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether the process that had stat st still runs: it is
// gone, or a zombie waiting for its new parent to reap it, or its pid now
// belongs to another process, when it is not.
func alive(pid int, st procStat) bool {
	now, ok := readProcStat(pid)
	return ok && now.startTime == st.startTime && now.state != 'Z' && now.state != 'X'
}

// feedWorker writes workerStartBytes to w, failing the test if no worker
// reads them in time.
func feedWorker(t *testing.T, w *os.File) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, workerStartBytes))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writing to the worker: %v", err)
		}
	case <-time.After(processTimeout):
		t.Fatal("the worker did not start reading its input")
	}
}

// testBinary returns a command re-running this test binary with env added.
func testBinary(t *testing.T, ctx context.Context, run string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, workerEnv+"=") && !strings.HasPrefix(kv, workerParentEnv+"=") && !strings.HasPrefix(kv, testParentEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// TestWorkerDiesWithParent kills -9 a process that runs an extraction
// worker and checks that the worker dies too, rather than running on,
// re-parented, while a restarted server starts another.
func TestWorkerDiesWithParent(t *testing.T) {
	if os.Getenv(testParentEnv) == "1" {
		// The stand-in parent: start a worker on fd 3 and wait for it.
		_, err := runWorkerProcess(context.Background(), workerModeExtract, os.NewFile(3, "worker input"))
		fmt.Fprintln(os.Stderr, "worker ended:", err)
		os.Exit(1)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	parent := testBinary(t, context.Background(), "TestWorkerDiesWithParent", testParentEnv+"=1")
	parent.ExtraFiles = []*os.File{r}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	}()

	feedWorker(t, w)
	workers := childrenOf(parent.Process.Pid)
	if len(workers) != 1 {
		t.Fatalf("parent %d has children %v, want one worker", parent.Process.Pid, workers)
	}
	worker := workers[0]
	st, ok := readProcStat(worker)
	if !ok {
		t.Fatalf("worker %d vanished while reading its input", worker)
	}
	t.Cleanup(func() {
		if alive(worker, st) {
			_ = syscall.Kill(worker, syscall.SIGKILL)
		}
	})

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(processTimeout)
	for alive(worker, st) {
		if time.Now().After(deadline) {
			now, _ := readProcStat(worker)
			t.Fatalf("worker %d still runs (state %c, parent %d) %v after its parent was killed", worker, now.state, now.ppid, processTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestWorkerExitsWhenOrphanedAtStart starts a worker whose expected parent
// is not its parent, as when the server died before the worker ran: it
// must exit at once instead of waiting for its input.
func TestWorkerExitsWhenOrphanedAtStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent string
		exit   int // -1: still running when the test ends it
	}{
		{"parent is someone else", strconv.Itoa(os.Getpid() + 1), workerExitOrphaned},
		{"no parent given", "", workerExitOrphaned},
		{"parent is this test", strconv.Itoa(os.Getpid()), -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
			defer cancel()
			env := []string{workerEnv + "=" + workerModeExtract}
			if c.parent != "" {
				env = append(env, workerParentEnv+"="+c.parent)
			}
			worker := testBinary(t, ctx, "TestWorkerExitsWhenOrphanedAtStart", env...)
			worker.Stdin = r
			if err := worker.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if c.exit < 0 {
				feedWorker(t, w) // it runs and reads its input
				_ = worker.Process.Kill()
				_ = worker.Wait()
				return
			}
			err = worker.Wait()
			var exit *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() != c.exit {
				t.Fatalf("worker ended with %v (context: %v), want exit status %d", err, ctx.Err(), c.exit)
			}
		})
	}
}

// TestWorkerSurvivesThreadExits checks that the parent-death signal is not
// sent while the parent lives: Linux sends it when the thread that started
// the worker ends, and Go ends a thread whenever a goroutine locked to it
// returns without unlocking (golang/go#27505). Many such goroutines run
// while a worker waits for its input; the worker must then still answer.
// Without the thread lock in runWorkerProcess a round fails about one time
// in five, so several rounds make a regression show.
func TestWorkerSurvivesThreadExits(t *testing.T) {
	const (
		rounds      = 10
		threadExits = 200
	)
	for round := range rounds {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := runWorkerProcess(context.Background(), workerModeCount, r)
			done <- err
		}()
		feedWorker(t, w)
		exited := make(chan struct{})
		for range threadExits {
			go func() {
				runtime.LockOSThread() // and return locked: the thread ends
				exited <- struct{}{}
			}()
		}
		for range threadExits {
			<-exited
		}
		w.Close()
		select {
		case err := <-done:
			// The input is zeros, which the worker reports as corrupt;
			// "crashed the reader (signal: killed)" means it was killed.
			if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "signal") {
				t.Fatalf("round %d: worker = %v; want it to report the input as corrupt", round, err)
			}
		case <-time.After(processTimeout):
			t.Fatalf("round %d: worker did not answer", round)
		}
		r.Close()
	}
}
