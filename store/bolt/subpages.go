package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// Subpages live in three buckets: the records by id; subpagecuts, which
// finds the subpage of a document's pages (and every subpage of a
// document, as it is deleted); and projectsubpages, which sums what a
// project and its owners keep without reading their records.
//
//	subpagecuts:     document \x00 first(4) last(4) subpage id → nil
//	projectsubpages: project \x00 owner \x00 subpage id → expiry(8, unix ns) size(8)

func subpageRange(documentID string, first, last int) []byte {
	k := ownerKey(documentID, nil)
	k = binary.BigEndian.AppendUint32(k, uint32(first))
	return binary.BigEndian.AppendUint32(k, uint32(last))
}

func subpageSliceKey(sp *store.Subpage) []byte {
	return append(subpageRange(sp.DocumentID, sp.FirstPage, sp.LastPage), sp.ID...)
}

func projectSubpageKey(sp *store.Subpage) []byte {
	return ownerKey(sp.ProjectID, ownerKey(sp.OwnerID, []byte(sp.ID)))
}

func projectSubpageValue(sp *store.Subpage) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(sp.ExpiresAt.UnixNano()))
	return binary.BigEndian.AppendUint64(v, uint64(sp.Size))
}

// putSubpage writes a subpage's record and its index entries.
func putSubpage(tx *bbolt.Tx, sp *store.Subpage) error {
	if err := put(tx.Bucket(bucketSubpages), sp.ID, sp); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSubpageSlices).Put(subpageSliceKey(sp), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketProjectSubpages).Put(projectSubpageKey(sp), projectSubpageValue(sp))
}

// deleteSubpage removes a subpage's record and its index entries; its
// file is the caller's to remove.
func deleteSubpage(tx *bbolt.Tx, sp *store.Subpage) error {
	if err := tx.Bucket(bucketSubpages).Delete([]byte(sp.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSubpageSlices).Delete(subpageSliceKey(sp)); err != nil {
		return err
	}
	return tx.Bucket(bucketProjectSubpages).Delete(projectSubpageKey(sp))
}

// liveSubpage is the live subpage of a document's pages, or ErrNotFound.
// Expired ones of the same pages wait for the sweep beside it.
func liveSubpage(tx *bbolt.Tx, documentID string, first, last int, now time.Time) (*store.Subpage, error) {
	prefix := subpageRange(documentID, first, last)
	c := tx.Bucket(bucketSubpageSlices).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		sp, err := get[store.Subpage](tx.Bucket(bucketSubpages), string(k[len(prefix):]))
		if err != nil {
			return nil, err
		}
		if !sp.Expired(now) {
			return sp, nil
		}
	}
	return nil, store.ErrNotFound
}

func subpageUsage(tx *bbolt.Tx, projectID, ownerID string, now time.Time) store.SubpageUsage {
	var u store.SubpageUsage
	prefix, owned := ownerKey(projectID, nil), ownerKey(projectID, ownerKey(ownerID, nil))
	c := tx.Bucket(bucketProjectSubpages).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) != 16 {
			continue
		}
		expires := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
		if !now.Before(expires) {
			continue // expired: its room is free, and the sweep takes it
		}
		countSubpage(&u, bytes.HasPrefix(k, owned), expires.UTC(), int64(binary.BigEndian.Uint64(v[8:])))
	}
	return u
}

// SubpageFor returns the live subpage of pages first to last of a
// document, or ErrNotFound.
func (s *Store) SubpageFor(documentID string, first, last int) (*store.Subpage, error) {
	var sp *store.Subpage
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		sp, err = liveSubpage(tx, documentID, first, last, s.now())
		return err
	})
	return sp, err
}

// SubpageUsage returns what projectID and ownerID, one of its owners,
// keep in live subpages.
func (s *Store) SubpageUsage(projectID, ownerID string) (store.SubpageUsage, error) {
	var u store.SubpageUsage
	err := s.db.View(func(tx *bbolt.Tx) error {
		u = subpageUsage(tx, projectID, ownerID, s.now())
		return nil
	})
	return u, err
}

// CreateSubpage stores a subpage of sp.DocumentID's pages sp.FirstPage to
// sp.LastPage with its PDF, valid for ttl, or returns ErrNotFound when the
// document is gone. When a live subpage of the same pages appeared
// meanwhile, that one is returned and data is dropped. A new one that
// would take its project or owner past limits is ErrSubpageQuota or
// ErrSubpageBudget.
func (s *Store) CreateSubpage(sp store.Subpage, data []byte, ttl time.Duration, limits store.SubpageLimits) (*store.Subpage, error) {
	sp = store.NewSubpage(sp, data, ttl, s.now())
	// Held from the file's write to its record's commit, so that the
	// sweep of orphaned files never takes a file about to be named.
	s.subpageFiles.RLock()
	defer s.subpageFiles.RUnlock()
	path := s.subpagePath(sp.ID)
	if err := writeFileAtomic(path, data, !s.noSync); err != nil {
		return nil, fmt.Errorf("store: create subpage: %w", err)
	}
	var out *store.Subpage
	err := s.db.Update(func(tx *bbolt.Tx) error {
		// A subpage stored after its document was deleted would outlive
		// it, serving its pages.
		if tx.Bucket(bucketDocuments).Get([]byte(sp.DocumentID)) == nil {
			return fmt.Errorf("document %s: %w", sp.DocumentID, store.ErrNotFound)
		}
		now := s.now()
		if old, err := liveSubpage(tx, sp.DocumentID, sp.FirstPage, sp.LastPage, now); err == nil {
			out = old
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		u := subpageUsage(tx, sp.ProjectID, sp.OwnerID, now)
		if err := u.Check(limits, sp.Size); err != nil {
			return err
		}
		out = &sp
		return putSubpage(tx, &sp)
	})
	if err != nil || out.ID != sp.ID {
		os.Remove(path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: create subpage: %w", err)
	}
	return out, nil
}

// ExtendSubpage makes a live subpage valid for ttl from now, so that its
// URL, handed out again, lasts as a new one would. A subpage that is gone
// or expired is ErrNotFound: the caller slices a new one.
func (s *Store) ExtendSubpage(id string, ttl time.Duration) (*store.Subpage, error) {
	var sp *store.Subpage
	err := s.db.Update(func(tx *bbolt.Tx) (err error) {
		if sp, err = get[store.Subpage](tx.Bucket(bucketSubpages), id); err != nil {
			return err
		}
		now := s.now().UTC()
		if sp.Expired(now) {
			return fmt.Errorf("subpage %s expired: %w", id, store.ErrNotFound)
		}
		sp.ExpiresAt = now.Add(ttl)
		return putSubpage(tx, sp)
	})
	if err != nil {
		return nil, fmt.Errorf("store: extend subpage: %w", err)
	}
	return sp, nil
}

// Subpage returns a subpage record by id, expired or not.
func (s *Store) Subpage(id string) (*store.Subpage, error) {
	return record[store.Subpage](s, bucketSubpages, id)
}

// OpenSubpage opens a subpage's PDF. An open file stays readable when the
// subpage is swept or deleted meanwhile: a download under way ends whole.
func (s *Store) OpenSubpage(id string) (store.SubpageFile, error) {
	f, err := os.Open(s.subpagePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: open subpage %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open subpage %s: %w", id, err)
	}
	return f, nil
}

// SweepSubpages deletes expired subpages and their files, then the files
// no subpage names (a crash between a file's write and its record's
// commit, or between a record's removal and its file's, leaves one), and
// returns how many subpages and files it removed. The record goes first:
// a file left by a crash in between is only disk, never served, and the
// next sweep takes it.
func (s *Store) SweepSubpages() (int, error) {
	var expired []string
	now := s.now()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var gone []*store.Subpage
		err := tx.Bucket(bucketSubpages).ForEach(func(k, v []byte) error {
			var sp store.Subpage
			if err := decode(v, &sp); err == nil && sp.Expired(now) {
				gone = append(gone, &sp)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, sp := range gone {
			if err := deleteSubpage(tx, sp); err != nil {
				return err
			}
			expired = append(expired, sp.ID)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep subpages: %w", err)
	}
	for _, id := range expired {
		if err := os.Remove(s.subpagePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return len(expired), fmt.Errorf("store: sweep subpages: %w", err)
		}
	}
	orphans, err := s.sweepSubpageFiles()
	return len(expired) + orphans, err
}

// sweepSubpageFiles removes the files of the subpages directory that no
// record names: finished files of subpages never committed or already
// removed, and temporary files of writes a crash cut short.
func (s *Store) sweepSubpageFiles() (int, error) {
	s.subpageFiles.Lock()
	defer s.subpageFiles.Unlock()
	dir := s.subpageDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: sweep subpage files: %w", err)
	}
	var orphans []string
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSubpages)
		for _, e := range entries {
			id, isPDF := strings.CutSuffix(e.Name(), ".pdf")
			// Not a subpage's file (a temporary one), or one no record
			// names: no create is under way (they hold subpageFiles), so
			// nothing will name it.
			if !isPDF || strings.HasPrefix(e.Name(), ".") || b.Get([]byte(id)) == nil {
				orphans = append(orphans, e.Name())
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep subpage files: %w", err)
	}
	for i, name := range orphans {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return i, fmt.Errorf("store: sweep subpage files: %w", err)
		}
	}
	return len(orphans), nil
}

// dropSubpagesOf deletes the subpages of d's pages, records and files, as
// d is deleted: its pages are then neither served nor kept. The files go
// before the transaction commits; should it fail, a subpage whose file is
// gone answers "not found" and is sliced again when asked for.
func (s *Store) dropSubpagesOf(tx *bbolt.Tx, d *store.Document) error {
	prefix := ownerKey(d.ID, nil)
	var ids []string
	c := tx.Bucket(bucketSubpageSlices).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix)+8:]))
	}
	for _, id := range ids {
		sp, err := get[store.Subpage](tx.Bucket(bucketSubpages), id)
		if err != nil {
			return err
		}
		if err := deleteSubpage(tx, sp); err != nil {
			return err
		}
		if err := os.Remove(s.subpagePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove subpage: %w", err)
		}
	}
	return nil
}

// subpageDir holds the subpages' PDFs, a file each, named by id.
func (s *Store) subpageDir() string { return filepath.Join(filepath.Dir(s.filesDir), "subpages") }

func (s *Store) subpagePath(id string) string {
	return filepath.Join(s.subpageDir(), filepath.Base(id)+".pdf")
}

// indexSubpages upgrades data of schema 6, whose subpages were found by
// their chunk and varience, to finding them by their document's pages:
// each record gets its document and size, and its index entries. A
// subpage whose chunk or file is gone goes (the sweep takes its file).
func (s *Store) indexSubpages(tx *bbolt.Tx) error {
	type v6Subpage struct {
		store.Subpage
		ChunkID string `json:"chunk_id"`
	}
	b := tx.Bucket(bucketSubpages)
	var keys, vals [][]byte
	err := b.ForEach(func(k, v []byte) error {
		keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	for i, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
		if bytes.HasPrefix(k, []byte("by-chunk/")) { // the old index
			continue
		}
		var old v6Subpage
		if err := decode(vals[i], &old); err != nil {
			return fmt.Errorf("store: upgrade subpage %q: %w", k, err)
		}
		chunk, err := get[store.Chunk](tx.Bucket(bucketChunks), old.ChunkID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: upgrade subpage %q: %w", k, err)
		}
		fi, err := os.Stat(s.subpagePath(old.ID))
		if err != nil {
			continue
		}
		sp := old.Subpage
		sp.DocumentID, sp.Size = chunk.DocumentID, fi.Size()
		if err := putSubpage(tx, &sp); err != nil {
			return err
		}
	}
	return nil
}

// countSubpage adds a live subpage of the project to u, and to its
// owner's share when owned.
func countSubpage(u *store.SubpageUsage, owned bool, expires time.Time, size int64) {
	u.ProjectSubpages++
	if u.NextProjectExpiry.IsZero() || expires.Before(u.NextProjectExpiry) {
		u.NextProjectExpiry = expires
	}
	if owned {
		u.OwnerBytes += size
		if u.NextOwnerExpiry.IsZero() || expires.Before(u.NextOwnerExpiry) {
			u.NextOwnerExpiry = expires
		}
	}
}
