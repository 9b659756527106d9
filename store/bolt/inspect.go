package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Inspection is what docsift doctor learns of a store.
type Inspection struct {
	SchemaVersion uint64
	Projects      int
	Documents     int
	Chunks        int
	Jobs          map[string]int    // by status
	Owners        map[string]Holder // owners with chunks
	FilesMissing  []string          // referenced by a document, not on disk: "OWNER/SHA256"
	FilesOrphaned int               // on disk, referenced by no document
}

// Holder is what an owner holds in the store.
type Holder struct {
	Model   string // the embedding model of its vectors
	Chunks  int
	LastSeq uint64 // its newest chunk's sequence number
}

// ErrDamaged is returned for a database file whose pages are not what
// bbolt wrote: bbolt panics on reading one.
var ErrDamaged = errors.New("the database file is damaged")

// Inspect reads the whole store once and reports its contents and every
// inconsistency between records and files it can see.
func (s *Store) Inspect() (_ *Inspection, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: %w (%v)", ErrDamaged, r)
		}
	}()
	in := &Inspection{Jobs: map[string]int{}, Owners: map[string]Holder{}}
	referenced := map[string]bool{}
	err = s.db.View(func(tx *bbolt.Tx) error {
		in.SchemaVersion = fromU64(tx.Bucket(bucketMeta).Get(keySchemaVersion))
		in.Projects = tx.Bucket(bucketProjects).Stats().KeyN
		in.Documents = tx.Bucket(bucketDocuments).Stats().KeyN
		in.Chunks = tx.Bucket(bucketChunks).Stats().KeyN
		err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var j store.Job
			if err := decode(v, &j); err != nil {
				return err
			}
			in.Jobs[j.Status]++
			return nil
		})
		if err != nil {
			return err
		}
		c := tx.Bucket(bucketOwnerSeqs).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			owner, seq, ok := bytes.Cut(k, []byte{0})
			if !ok || len(seq) != 8 {
				return fmt.Errorf("malformed owner chunk key %q", k)
			}
			h := in.Owners[string(owner)]
			h.Chunks++
			h.LastSeq = max(h.LastSeq, fromU64(seq))
			in.Owners[string(owner)] = h
		}
		for owner, h := range in.Owners {
			if om, err := get[store.OwnerModel](tx.Bucket(bucketOwners), owner); err == nil {
				h.Model = om.Model
				in.Owners[owner] = h
			}
		}
		return tx.Bucket(bucketFileRefs).ForEach(func(k, _ []byte) error {
			owner, hash, _ := bytes.Cut(k, []byte{0})
			if inline(tx, string(owner), string(hash)) == nil { // else it is no file
				referenced[string(owner)+"/"+string(hash)] = true
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: inspect: %w", err)
	}
	onDisk := map[string]bool{}
	err = filepath.WalkDir(s.filesDir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(s.filesDir, path)
		rel = filepath.ToSlash(rel)
		onDisk[rel] = true
		if !referenced[rel] || strings.HasPrefix(d.Name(), ".tmp-") {
			in.FilesOrphaned++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: inspect files: %w", err)
	}
	for f := range referenced {
		if !onDisk[f] {
			in.FilesMissing = append(in.FilesMissing, f)
		}
	}
	return in, nil
}

// StoredOriginals counts the originals kept for owner: in the database,
// one per document for small ones (one per content for those an older
// docsift kept, see files.go), and as files, one per content.
func (s *Store) StoredOriginals(ownerID string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(ownerID, nil)
		c := tx.Bucket(bucketOriginals).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: count originals of %s: %w", ownerID, err)
	}
	files, err := os.ReadDir(filepath.Join(s.filesDir, filepath.Base(ownerID)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("store: count originals of %s: %w", ownerID, err)
	}
	for _, f := range files {
		if !strings.HasPrefix(f.Name(), ".") {
			n++
		}
	}
	return n, nil
}
