package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Original files live on disk, not in bbolt: a 64 MiB PDF would bloat the
// database and every transaction that copies its pages. They are
// content-addressed per owner (DATA/files/OWNER/SHA256), so uploading the
// same file twice stores it once, and a reference count in bbolt says when
// the last document using it is gone.
//
// Small originals are the exception: up to inlineOriginalMax bytes, they
// are kept in bbolt (bucketOriginals) and written in the transaction that
// creates their document. Creating, syncing and renaming a file costs far
// more than writing a few kilobytes in a transaction that commits anyway
// (on some disks and sandboxes, creating one file costs half a millisecond
// of CPU), and the original is then durable with its records in one
// commit. Uploads of short texts, the most frequent kind, thus cost no file
// at all.
//
// A small original is kept under its owner and document id, once per
// document, and goes with its document: no reference count. Document ids
// grow with time, so a commit's new originals land at the right edge of
// the tree, where a content hash put each in a leaf of its own, and its
// count in another (around 70,000 chunks, the pages of these two were 31%
// of what an ingest's commits wrote). The same short text uploaded twice
// is kept twice, 64 KiB at most. Documents created before schema 4 (see
// store.go) kept theirs under owner and hash, counted in bucketFileRefs as
// files are; those are read and released as before.

// inlineOriginalMax is the size up to which an original is kept in bbolt.
const inlineOriginalMax = 64 << 10

// putInline keeps d's small original in the transaction.
func putInline(tx *bbolt.Tx, d *store.Document, data []byte) error {
	return tx.Bucket(bucketOriginals).Put(ownerKey(d.OwnerID, []byte(d.ID)), data)
}

// inline returns the small original of owner with hash that a document
// created by an older docsift shares, or nil when it is a file (or gone).
// The bytes are valid for the transaction only.
func inline(tx *bbolt.Tx, ownerID, hash string) []byte {
	return tx.Bucket(bucketOriginals).Get(ownerKey(ownerID, []byte(hash)))
}

// inlineOf returns d's own small original, or nil when it has none (a
// file, or one shared by hash). The bytes are valid for the transaction
// only.
func inlineOf(tx *bbolt.Tx, d *store.Document) []byte {
	return tx.Bucket(bucketOriginals).Get(ownerKey(d.OwnerID, []byte(d.ID)))
}

// putFile stores o for owner under its content hash: the spooled file is
// synced and renamed into place, and one in memory (or spooled on another
// file system) written to a temporary file, synced and renamed, so a crash
// never leaves half a file under the final name. A file no document refers
// to (a crash before the document's transaction) is removed by SweepFiles.
func (s *Store) putFile(ownerID string, o *store.Original) error {
	path := s.filePath(ownerID, o.Hash())
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("store: put file: %w", err)
	}
	took, err := o.TakeFile(path, !s.noSync)
	if err == nil && !took {
		err = writeFileAtomicFrom(path, o.Reader(), !s.noSync)
	}
	if err != nil {
		return fmt.Errorf("store: put file: %w", err)
	}
	return nil
}

// ReadOriginal returns the original bytes of document d: its own small
// original, or the one it shares by content with documents of an older
// docsift, or its file.
func (s *Store) ReadOriginal(d *store.Document) ([]byte, error) {
	o, err := s.OpenOriginal(d)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	data, err := o.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("store: read the original of %s: %w", d.ID, err)
	}
	return data, nil
}

// OpenOriginal returns document d's original to read, without reading a
// file into memory: extraction hands it to the worker process as it is.
// The caller closes it.
func (s *Store) OpenOriginal(d *store.Document) (*store.Original, error) {
	var data []byte
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if data = inlineOf(tx, d); data == nil {
			data = inline(tx, d.OwnerID, d.FileHash)
		}
		data = bytes.Clone(data)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: open the original of %s: %w", d.ID, err)
	}
	if data != nil {
		return store.Bytes(data), nil
	}
	o, err := store.OpenOriginalFile(s.filePath(d.OwnerID, d.FileHash), d.FileHash)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: open the original of %s: %w", d.ID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open the original of %s: %w", d.ID, err)
	}
	return o, nil
}

// SweepFiles removes stored files that no document refers to, and
// returns how many it removed: leftovers of an upload interrupted inside
// CreateDocument (a crash, or a removal after a failed transaction that
// failed too), or of a delete interrupted after its transaction (a crash,
// or a file system that refused the removal). It runs at start and, as
// such leftovers also come while the server runs, periodically after.
//
// The files are listed and their references read without fileMu, so
// that uploads do not wait for a walk of every file; only the files
// found without a reference are looked at again with it held alone,
// when no upload is between writing its file and committing the
// reference to it, and removed if they still have none. A file written
// since the listing is not among them, and one written and referred to
// meanwhile has its reference by then.
func (s *Store) SweepFiles() (int, error) {
	found, err := s.unreferencedFiles()
	if err != nil || len(found) == 0 {
		return 0, err
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.pinned > 0 {
		s.orphansHeld = true // a backup is reading the files: sweep after it
		return 0, nil
	}
	var orphans [][2]string
	err = s.db.View(func(tx *bbolt.Tx) error {
		for _, f := range found {
			if fileRefs(tx, f[0], f[1]) == 0 {
				orphans = append(orphans, f)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep files: %w", err)
	}
	n := 0
	for _, f := range orphans {
		// A temporary file of a write that was under way at the
		// listing has been renamed since.
		err := os.Remove(filepath.Join(s.filesDir, f[0], f[1]))
		switch {
		case err == nil:
			n++
		case !errors.Is(err, fs.ErrNotExist):
			return n, fmt.Errorf("store: sweep files: %w", err)
		}
	}
	return n, nil
}

// unreferencedFiles lists the files under filesDir, as owner and name,
// that no reference names now.
func (s *Store) unreferencedFiles() ([][2]string, error) {
	owners, err := os.ReadDir(s.filesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: sweep files: %w", err)
	}
	var files [][2]string
	for _, o := range owners {
		entries, err := os.ReadDir(filepath.Join(s.filesDir, o.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: sweep files: %w", err)
		}
		for _, f := range entries {
			files = append(files, [2]string{o.Name(), f.Name()})
		}
	}
	var found [][2]string
	err = s.db.View(func(tx *bbolt.Tx) error {
		for _, f := range files {
			if fileRefs(tx, f[0], f[1]) == 0 {
				found = append(found, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: sweep files: %w", err)
	}
	return found, nil
}

// writeFileAtomic writes data to a temporary file beside path, syncs it
// (when sync is set) and renames it into place.
func writeFileAtomic(path string, data []byte, sync bool) error {
	return writeFileAtomicFrom(path, bytes.NewReader(data), sync)
}

// writeFileAtomicFrom is writeFileAtomic of what r reads.
func writeFileAtomicFrom(path string, r io.Reader, sync bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (s *Store) removeFile(ownerID, hash string) error {
	err := os.Remove(s.filePath(ownerID, hash))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove file: %w", err)
	}
	return nil
}

func (s *Store) filePath(ownerID, hash string) string {
	return filepath.Join(s.filesDir, filepath.Base(ownerID), filepath.Base(hash))
}

func fileRefs(tx *bbolt.Tx, ownerID, hash string) uint64 {
	v := tx.Bucket(bucketFileRefs).Get(ownerKey(ownerID, []byte(hash)))
	if v == nil {
		return 0
	}
	return fromU64(v)
}

func addFileRef(tx *bbolt.Tx, ownerID, hash string, delta int) error {
	b := tx.Bucket(bucketFileRefs)
	k := ownerKey(ownerID, []byte(hash))
	n := int64(fileRefs(tx, ownerID, hash)) + int64(delta)
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, u64(uint64(n)))
}
