package bolt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// DBFileName is the database's file name in the data dir.
const DBFileName = "docsift.db"

// BackupItem is one file of a backup, named by its path relative to the
// data dir ("docsift.db", "files/OWNER/SHA256").
type BackupItem struct {
	Name string
	Size int64
	Body io.Reader
}

// Backup hands add a consistent copy of the store: the database as of one
// moment (bbolt's transactional copy, small originals included), then
// every original file the copy refers to. It runs beside uploads and deletes: the copy is a read
// transaction, and no original file is removed until Backup returns (a file
// a delete left meanwhile is swept then), so every file the copy names is
// still there to read. The read transaction ends before the files are
// read, because a long one would stop the database from growing.
func (s *Store) Backup(add func(BackupItem) error) error {
	s.fileMu.Lock()
	s.pinned++
	s.fileMu.Unlock()
	defer s.unpin()

	var files []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketFileRefs).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			owner, hash, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return fmt.Errorf("store: backup: malformed file reference %q", k)
			}
			if inline(tx, string(owner), string(hash)) != nil {
				continue // in the database's copy
			}
			files = append(files, filepath.Join(filepath.Base(string(owner)), filepath.Base(string(hash))))
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := tx.WriteTo(pw)
			pw.CloseWithError(err)
		}()
		err := add(BackupItem{Name: DBFileName, Size: tx.Size(), Body: pr})
		pr.CloseWithError(io.ErrClosedPipe) // stops WriteTo if add gave up early
		return err
	})
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	for _, rel := range files {
		if err := AddFile(add, filepath.ToSlash(filepath.Join("files", rel)), filepath.Join(s.filesDir, rel)); err != nil {
			return fmt.Errorf("store: backup: %w", err)
		}
	}
	return nil
}

// AddFile hands add the file at path as the backup item name. The size is
// the open file's, so a file replaced by rename meanwhile is still read
// whole.
func AddFile(add func(BackupItem) error, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return add(BackupItem{Name: name, Size: fi.Size(), Body: f})
}

// unpin ends a backup's hold on the original files and removes the ones
// that lost their last reference meanwhile.
func (s *Store) unpin() {
	s.fileMu.Lock()
	s.pinned--
	sweep := s.pinned == 0 && s.orphansHeld
	if sweep {
		s.orphansHeld = false
	}
	s.fileMu.Unlock()
	if sweep {
		// Errors leave orphans for the sweep at next start.
		_, _ = s.SweepFiles()
	}
}
