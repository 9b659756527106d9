package admin

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A backup's file appears whole or not at all: a write that fails, or is
// stopped, leaves nothing beside where it was going.
func TestWriteBackupFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.tar")
	failed := errors.New("cut")
	if _, err := WriteBackupFile(context.Background(), out, func(w io.Writer) (*Manifest, error) {
		io.WriteString(w, "half")
		return nil, failed
	}); !errors.Is(err, failed) {
		t.Fatalf("a failed write returned %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteBackupFile(ctx, out, func(w io.Writer) (*Manifest, error) {
		_, err := io.WriteString(w, "after the stop")
		return &Manifest{}, err
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write after the stop returned %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("failed backups left %d files", len(left))
	}
	m, err := WriteBackupFile(context.Background(), out, func(w io.Writer) (*Manifest, error) {
		_, err := io.WriteString(w, "whole")
		return &Manifest{Format: backupFormat}, err
	})
	if err != nil || m.Format != backupFormat {
		t.Fatalf("WriteBackupFile = %v, %v", m, err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "whole" {
		t.Fatalf("the backup holds %q (%v)", b, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("%d files beside the backup, want it alone", len(left))
	}
}

// What a killed backup left long ago is removed; a backup being written
// now, and other files, are not.
func TestSweepUnfinished(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.tar")
	killed, writing, other := filepath.Join(dir, ".b.tar.tmp-1"), filepath.Join(dir, ".b.tar.tmp-2"), filepath.Join(dir, ".c.tar.tmp-1")
	for _, f := range []string{killed, writing, other} {
		if err := os.WriteFile(f, []byte("part"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{killed, other} {
		if err := os.Chtimes(f, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	got := SweepUnfinished(out)
	if len(got) != 1 || got[0].Path != killed || got[0].Size != 4 {
		t.Fatalf("SweepUnfinished removed %v, want %s alone", got, killed)
	}
	for _, f := range []string{writing, other} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s was removed: %v", f, err)
		}
	}
}
