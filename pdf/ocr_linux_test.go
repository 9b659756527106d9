package pdf

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOCRDiesWithWorker ends an extraction while Tesseract runs, as the
// document's deadline or a shutdown does: the worker is killed, and its
// Tesseract must die with it rather than run on, orphaned, for the rest of
// its page deadline. The stand-in tells its pid through a FIFO, which the
// test reads before cancelling: no sleep orders the steps.
func TestOCRDiesWithWorker(t *testing.T) {
	bin, dir := fakeTesseract(t, `echo $$ >"$DIR/started"
exec sleep 600`)
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ExtractWith(ctx, FormatPDF, blankScan(1), Options{OCR: OCR{Binary: bin, PageTimeout: 10 * time.Minute}, sandbox: stateDir(dir)})
		done <- err
	}()

	f, err := os.Open(fifo) // blocks until the stand-in opens it to write
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := readProcStat(pid)
	if !ok {
		t.Fatalf("Tesseract stand-in %d vanished before the test saw it", pid)
	}
	t.Cleanup(func() {
		if alive(pid, st) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTooSlow) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled extraction = %v, want ErrTooSlow and context.Canceled", err)
		}
	case <-time.After(processTimeout):
		t.Fatal("the extraction did not end when cancelled")
	}
	deadline := time.Now().Add(processTimeout)
	for alive(pid, st) {
		if time.Now().After(deadline) {
			t.Fatalf("Tesseract %d still runs %v after its worker was killed", pid, processTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}
