package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// An Original is an uploaded file's bytes on their way into the store.
// A file upload is spooled to disk as it arrives (Spool), hashed on the
// way, so that an upload of 64 MiB holds a copy buffer of the server's
// memory rather than 64 MiB, however many arrive at once; the store then
// takes the spooled file as it is (a rename, for the bbolt store). Text
// sent in a JSON body is already in memory, and stays there (Bytes).
type Original struct {
	size int64
	hash string // SHA-256, hex
	data []byte // in memory; nil when spooled
	file *os.File
	path string // the spooled file; "" once the store took it
}

// contentHash is the name of an original: its SHA-256 in hex.
func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Bytes is an Original held in memory.
func Bytes(data []byte) *Original {
	return &Original{size: int64(len(data)), hash: contentHash(data), data: data}
}

// ErrOriginalTooLarge is an upload over the size Spool was given.
var ErrOriginalTooLarge = errors.New("store: the upload is over the size limit")

// spoolPattern names spooled files, so that what a crash leaves of them
// can be told from anything else (see SweepSpool).
const spoolPattern = "upload-*"

// Spool writes r to a new file in dir, at most limit bytes of it, hashing
// it on the way. More than limit bytes is ErrOriginalTooLarge, and an
// error reading r is returned as it is (wrapped): either way nothing is
// left behind. The caller closes the Original, which removes the file
// unless the store has taken it.
func Spool(dir string, r io.Reader, limit int64) (*Original, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: spool an upload: %w", err)
	}
	f, err := os.CreateTemp(dir, spoolPattern)
	if err != nil {
		return nil, fmt.Errorf("store: spool an upload: %w", err)
	}
	o := &Original{file: f, path: f.Name()}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		o.Close()
		return nil, fmt.Errorf("store: spool an upload: %w", err)
	case n > limit:
		o.Close()
		return nil, ErrOriginalTooLarge
	}
	o.size, o.hash = n, hex.EncodeToString(h.Sum(nil))
	return o, nil
}

// SweepSpool removes what a crash left in dir of uploads being spooled.
// It is called at start, before any upload is taken.
func SweepSpool(dir string) (int, error) {
	names, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return 0, fmt.Errorf("store: sweep the spool: %w", err)
	}
	for _, name := range names {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("store: sweep the spool: %w", err)
		}
	}
	return len(names), nil
}

// Size is the original's length in bytes.
func (o *Original) Size() int64 { return o.size }

// Hash is the original's SHA-256, in hex.
func (o *Original) Hash() string { return o.hash }

// ReadAt reads the original, as io.ReaderAt: detection reads a sample
// of it.
func (o *Original) ReadAt(p []byte, off int64) (int, error) {
	if o.file == nil {
		return bytes.NewReader(o.data).ReadAt(p, off)
	}
	return o.file.ReadAt(p, off)
}

// ReaderAt is what reads the original: its file itself when it has one,
// which a child process can take as it is.
func (o *Original) ReaderAt() io.ReaderAt {
	if o.file != nil {
		return o.file
	}
	return bytes.NewReader(o.data)
}

// OpenOriginalFile is a stored file at path, for a store that keeps
// originals as files, as an Original to read: its Close closes it and leaves it where it is.
func OpenOriginalFile(path, hash string) (*Original, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Original{file: f, size: info.Size(), hash: hash}, nil
}

// Reader reads the original from its start.
func (o *Original) Reader() io.Reader { return io.NewSectionReader(o, 0, o.size) }

// ReadAll returns the original's bytes: for the small ones the store
// keeps in its records.
func (o *Original) ReadAll() ([]byte, error) {
	if o.file == nil {
		return o.data, nil
	}
	return io.ReadAll(o.Reader())
}

// TakeFile moves the spooled file to path, for a store that keeps
// originals as files, synced first when sync is set, and reports whether
// it could: a file not spooled, or spooled on another file system, is
// copied by the caller instead.
func (o *Original) TakeFile(path string, sync bool) (bool, error) {
	if o.path == "" {
		return false, nil
	}
	if sync {
		if err := o.file.Sync(); err != nil {
			return false, err
		}
	}
	if err := os.Rename(o.path, path); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return false, nil
		}
		return false, err
	}
	o.path = ""
	return true, nil
}

// Close releases the original: the spooled file is removed, unless the
// store has taken it.
func (o *Original) Close() error {
	if o.file == nil {
		return nil
	}
	err := o.file.Close()
	if o.path != "" {
		if rerr := os.Remove(o.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		o.path = ""
	}
	o.file = nil
	return err
}
