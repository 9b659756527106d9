package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Subpage is a small PDF cut around the page of a chunk. Its id is the
// capability in its URL, so it is a secret-sized random value.
type Subpage struct {
	ID        string    `json:"subpage_id"`
	ProjectID string    `json:"project_id"`
	OwnerID   string    `json:"owner_id"`
	ChunkID   string    `json:"chunk_id"`
	Varience  int       `json:"varience"`
	FirstPage int       `json:"first_page"`
	LastPage  int       `json:"last_page"`
	FileName  string    `json:"file_name"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Expired reports whether the subpage can no longer be fetched at t.
func (sp *Subpage) Expired(t time.Time) bool { return !t.Before(sp.ExpiresAt) }

// subpageKey indexes subpages by what they were cut from, so the same
// chunk and varience reuse one file. It cannot collide with a subpage id.
func subpageKey(chunkID string, varience int) string {
	return subpageCuts + chunkID + "/" + strconv.Itoa(varience)
}

const subpageCuts = "by-chunk/"

// NewSubpageID returns an unguessable subpage id.
func NewSubpageID() string { return NewSecret(PrefixSubpage) }

// SubpageFor returns the live subpage of a chunk and varience, or
// ErrNotFound.
func (s *Store) SubpageFor(chunkID string, varience int) (*Subpage, error) {
	var sp *Subpage
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSubpages)
		id := b.Get([]byte(subpageKey(chunkID, varience)))
		if id == nil {
			return ErrNotFound
		}
		var err error
		sp, err = get[Subpage](b, string(id))
		return err
	})
	if err == nil && sp.Expired(s.now()) {
		return nil, ErrNotFound
	}
	return sp, err
}

// CreateSubpage stores a subpage and its PDF, valid for ttl, or returns
// ErrNotFound when its chunk is gone. When a live subpage of the same
// chunk and varience appeared meanwhile, that one is returned and data is
// dropped.
func (s *Store) CreateSubpage(sp Subpage, data []byte, ttl time.Duration) (*Subpage, error) {
	sp.CreatedAt = s.now().UTC()
	sp.ExpiresAt = sp.CreatedAt.Add(ttl)
	path := s.subpagePath(sp.ID)
	if err := writeFileAtomic(path, data, !s.noSync); err != nil {
		return nil, fmt.Errorf("store: create subpage: %w", err)
	}
	var out *Subpage
	err := s.db.Update(func(tx *bolt.Tx) error {
		// Its chunk goes with its document, and the subpages with both:
		// a subpage stored after that would outlive them.
		if tx.Bucket(bucketChunks).Get([]byte(sp.ChunkID)) == nil {
			return fmt.Errorf("chunk %s: %w", sp.ChunkID, ErrNotFound)
		}
		b := tx.Bucket(bucketSubpages)
		key := []byte(subpageKey(sp.ChunkID, sp.Varience))
		if id := b.Get(key); id != nil {
			if old, err := get[Subpage](b, string(id)); err == nil && !old.Expired(s.now()) {
				out = old
				return nil
			}
		}
		if err := put(b, sp.ID, &sp); err != nil {
			return err
		}
		out = &sp
		return b.Put(key, []byte(sp.ID))
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
		b := tx.Bucket(bucketSubpages)
		if sp, err = get[Subpage](b, id); err != nil {
			return err
		}
		now := s.now().UTC()
		if sp.Expired(now) {
			return fmt.Errorf("subpage %s expired: %w", id, ErrNotFound)
		}
		sp.ExpiresAt = now.Add(ttl)
		return put(b, id, sp)
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

// ReadSubpage returns a subpage's PDF.
func (s *Store) ReadSubpage(id string) ([]byte, error) {
	data, err := os.ReadFile(s.subpagePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: read subpage %s: %w", id, ErrNotFound)
	}
	return data, err
}

// SweepSubpages deletes expired subpages and their files and returns how
// many it removed. The record goes first: a file left by a crash in between
// is only disk, never reachable.
func (s *Store) SweepSubpages() (int, error) {
	var expired []string
	now := s.now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSubpages)
		var keys [][]byte
		err := b.ForEach(func(k, v []byte) error {
			sp, err := get[Subpage](b, string(k))
			if err != nil || sp.ID == "" || !sp.Expired(now) {
				return nil // an index key, or a live subpage
			}
			expired = append(expired, sp.ID)
			keys = append(keys, []byte(sp.ID))
			if id := b.Get([]byte(subpageKey(sp.ChunkID, sp.Varience))); string(id) == sp.ID {
				keys = append(keys, []byte(subpageKey(sp.ChunkID, sp.Varience)))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
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
	return len(expired), nil
}

// dropSubpagesOf deletes the subpages cut from d's chunks, records and
// files, as d is deleted: its pages are then neither served nor kept.
// The files go before the transaction commits; should it fail, a subpage
// whose file is gone answers "not found" and is cut again when asked for.
func (s *Store) dropSubpagesOf(tx *bolt.Tx, d *Document) error {
	b := tx.Bucket(bucketSubpages)
	prefix := []byte(subpageCuts + chunkPrefix(d.ID)) // every cut of every chunk of d
	var keys [][]byte
	c := b.Cursor()
	for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
		keys = append(keys, bytes.Clone(k), bytes.Clone(id))
	}
	for i := 0; i < len(keys); i += 2 {
		for _, k := range keys[i : i+2] {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		if err := os.Remove(s.subpagePath(string(keys[i+1]))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove subpage: %w", err)
		}
	}
	return nil
}

func (s *Store) subpagePath(id string) string {
	return filepath.Join(filepath.Dir(s.filesDir), "subpages", filepath.Base(id)+".pdf")
}
