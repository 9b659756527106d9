package admin

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"
)

// unfinishedAge is how long the temporary file of a backup must have gone
// unwritten to be taken for one a killed backup left: a running backup
// writes its file continually.
const unfinishedAge = 10 * time.Minute

// LeftFile is a temporary file a killed backup left, removed.
type LeftFile struct {
	Path string
	Size int64
}

// SweepUnfinished removes the temporary files that backups to path killed
// before they could (kill -9, a crash) left beside it, and returns them.
func SweepUnfinished(path string) []LeftFile {
	var removed []LeftFile
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, f := range left {
		if st, err := os.Stat(f); err == nil && time.Since(st.ModTime()) > unfinishedAge && os.Remove(f) == nil {
			removed = append(removed, LeftFile{Path: f, Size: st.Size()})
		}
	}
	return removed
}

// WriteBackupFile writes a backup to path through write: to a temporary
// file beside it, synced and renamed into place once write succeeded, so
// a failed or interrupted backup never leaves a file that looks whole. Its writes
// fail once ctx ends.
func WriteBackupFile(ctx context.Context, path string, write func(io.Writer) (*Manifest, error)) (*Manifest, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	m, err := write(ctxWriter{ctx, tmp})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return m, os.Rename(tmp.Name(), path)
}

// ctxWriter fails its writes once ctx ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
