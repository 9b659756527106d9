package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Subpage is a small PDF of a run of a document's pages. Every request
// for the same pages of a document, whatever chunk and varience named
// them, shares one subpage: a cut is made once. Its id is the capability
// in its URL, so it is a secret-sized random value.
type Subpage struct {
	ID         string    `json:"subpage_id"`
	ProjectID  string    `json:"project_id"`
	OwnerID    string    `json:"owner_id"`
	DocumentID string    `json:"document_id"`
	FirstPage  int       `json:"first_page"`
	LastPage   int       `json:"last_page"`
	Size       int64     `json:"size"` // bytes of its PDF
	FileName   string    `json:"file_name"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Expired reports whether the subpage can no longer be fetched at t.
func (sp *Subpage) Expired(t time.Time) bool { return !t.Before(sp.ExpiresAt) }

// SubpageFile is a subpage's PDF, open for reading a piece at a time: a
// download never holds the whole file in memory.
type SubpageFile interface {
	io.ReadSeeker
	io.Closer
}

// SubpageLimits bound the live subpages CreateSubpage keeps; a zero field
// bounds nothing.
type SubpageLimits struct {
	OwnerBytes      int64 // bytes of one owner's live subpages
	ProjectSubpages int   // live subpages of one project
}

// SubpageUsage is what a project, and one owner in it, keep in live
// subpages, and when the first of them expires and so frees its room.
type SubpageUsage struct {
	ProjectSubpages   int
	NextProjectExpiry time.Time // zero when the project has none
	OwnerBytes        int64
	NextOwnerExpiry   time.Time // zero when the owner has none
}

func (u *SubpageUsage) add(owned bool, expires time.Time, size int64) {
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

// Check is nil when a subpage of size more bytes fits within limits, and
// otherwise ErrSubpageQuota or ErrSubpageBudget.
func (u *SubpageUsage) Check(limits SubpageLimits, size int64) error {
	if limits.ProjectSubpages > 0 && u.ProjectSubpages >= limits.ProjectSubpages {
		return ErrSubpageQuota
	}
	if limits.OwnerBytes > 0 && u.OwnerBytes+size > limits.OwnerBytes {
		return ErrSubpageBudget
	}
	return nil
}

// Errors of CreateSubpage over its limits: both pass as live subpages
// expire.
var (
	ErrSubpageBudget = errors.New("the owner's live subpages would take more than its subpage budget")
	ErrSubpageQuota  = errors.New("the project has as many live subpages as it may keep")
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

func subpageCutKey(sp *Subpage) []byte {
	return append(subpageRange(sp.DocumentID, sp.FirstPage, sp.LastPage), sp.ID...)
}

func projectSubpageKey(sp *Subpage) []byte {
	return ownerKey(sp.ProjectID, ownerKey(sp.OwnerID, []byte(sp.ID)))
}

func projectSubpageValue(sp *Subpage) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(sp.ExpiresAt.UnixNano()))
	return binary.BigEndian.AppendUint64(v, uint64(sp.Size))
}

// putSubpage writes a subpage's record and its index entries.
func putSubpage(tx *bolt.Tx, sp *Subpage) error {
	if err := put(tx.Bucket(bucketSubpages), sp.ID, sp); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSubpageCuts).Put(subpageCutKey(sp), nil); err != nil {
		return err
	}
	return tx.Bucket(bucketProjectSubpages).Put(projectSubpageKey(sp), projectSubpageValue(sp))
}

// deleteSubpage removes a subpage's record and its index entries; its
// file is the caller's to remove.
func deleteSubpage(tx *bolt.Tx, sp *Subpage) error {
	if err := tx.Bucket(bucketSubpages).Delete([]byte(sp.ID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSubpageCuts).Delete(subpageCutKey(sp)); err != nil {
		return err
	}
	return tx.Bucket(bucketProjectSubpages).Delete(projectSubpageKey(sp))
}

// liveSubpage is the live subpage of a document's pages, or ErrNotFound.
// Expired ones of the same pages wait for the sweep beside it.
func liveSubpage(tx *bolt.Tx, documentID string, first, last int, now time.Time) (*Subpage, error) {
	prefix := subpageRange(documentID, first, last)
	c := tx.Bucket(bucketSubpageCuts).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		sp, err := get[Subpage](tx.Bucket(bucketSubpages), string(k[len(prefix):]))
		if err != nil {
			return nil, err
		}
		if !sp.Expired(now) {
			return sp, nil
		}
	}
	return nil, ErrNotFound
}

func subpageUsage(tx *bolt.Tx, projectID, ownerID string, now time.Time) SubpageUsage {
	var u SubpageUsage
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
		u.add(bytes.HasPrefix(k, owned), expires.UTC(), int64(binary.BigEndian.Uint64(v[8:])))
	}
	return u
}

// NewSubpageID returns an unguessable subpage id.
func NewSubpageID() string { return NewSecret(PrefixSubpage) }

// SubpageFor returns the live subpage of pages first to last of a
// document, or ErrNotFound.
func (s *Store) SubpageFor(documentID string, first, last int) (*Subpage, error) {
	var sp *Subpage
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		sp, err = liveSubpage(tx, documentID, first, last, s.now())
		return err
	})
	return sp, err
}

// SubpageUsage returns what projectID and ownerID, one of its owners,
// keep in live subpages.
func (s *Store) SubpageUsage(projectID, ownerID string) (SubpageUsage, error) {
	var u SubpageUsage
	err := s.db.View(func(tx *bolt.Tx) error {
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
func (s *Store) CreateSubpage(sp Subpage, data []byte, ttl time.Duration, limits SubpageLimits) (*Subpage, error) {
	sp.CreatedAt = s.now().UTC()
	sp.ExpiresAt = sp.CreatedAt.Add(ttl)
	sp.Size = int64(len(data))
	// Held from the file's write to its record's commit, so that the
	// sweep of orphaned files never takes a file about to be named.
	s.subpageFiles.RLock()
	defer s.subpageFiles.RUnlock()
	path := s.subpagePath(sp.ID)
	if err := writeFileAtomic(path, data, !s.noSync); err != nil {
		return nil, fmt.Errorf("store: create subpage: %w", err)
	}
	var out *Subpage
	err := s.db.Update(func(tx *bolt.Tx) error {
		// A subpage stored after its document was deleted would outlive
		// it, serving its pages.
		if tx.Bucket(bucketDocuments).Get([]byte(sp.DocumentID)) == nil {
			return fmt.Errorf("document %s: %w", sp.DocumentID, ErrNotFound)
		}
		now := s.now()
		if old, err := liveSubpage(tx, sp.DocumentID, sp.FirstPage, sp.LastPage, now); err == nil {
			out = old
			return nil
		} else if !errors.Is(err, ErrNotFound) {
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
// or expired is ErrNotFound: the caller cuts a new one.
func (s *Store) ExtendSubpage(id string, ttl time.Duration) (*Subpage, error) {
	var sp *Subpage
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		if sp, err = get[Subpage](tx.Bucket(bucketSubpages), id); err != nil {
			return err
		}
		now := s.now().UTC()
		if sp.Expired(now) {
			return fmt.Errorf("subpage %s expired: %w", id, ErrNotFound)
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
func (s *Store) Subpage(id string) (*Subpage, error) {
	return record[Subpage](s, bucketSubpages, id)
}

// OpenSubpage opens a subpage's PDF. An open file stays readable when the
// subpage is swept or deleted meanwhile: a download under way ends whole.
func (s *Store) OpenSubpage(id string) (SubpageFile, error) {
	f, err := os.Open(s.subpagePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: open subpage %s: %w", id, ErrNotFound)
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
	err := s.db.Update(func(tx *bolt.Tx) error {
		var gone []*Subpage
		err := tx.Bucket(bucketSubpages).ForEach(func(k, v []byte) error {
			var sp Subpage
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
	err = s.db.View(func(tx *bolt.Tx) error {
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
// gone answers "not found" and is cut again when asked for.
func (s *Store) dropSubpagesOf(tx *bolt.Tx, d *Document) error {
	prefix := ownerKey(d.ID, nil)
	var ids []string
	c := tx.Bucket(bucketSubpageCuts).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix)+8:]))
	}
	for _, id := range ids {
		sp, err := get[Subpage](tx.Bucket(bucketSubpages), id)
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
func (s *Store) indexSubpages(tx *bolt.Tx) error {
	type v6Subpage struct {
		Subpage
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
		chunk, err := get[Chunk](tx.Bucket(bucketChunks), old.ChunkID)
		if errors.Is(err, ErrNotFound) {
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
