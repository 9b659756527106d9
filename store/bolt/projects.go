package bolt

import (
	"bytes"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// storedKey is APIKey as written, with its hash.
type storedKey struct {
	store.APIKey
	Hash string `json:"hash"`
}

// CreateProject creates a project and its first API key in one transaction
// and returns the key's secret, which is not stored.
func (s *Store) CreateProject(name string) (*store.Project, string, error) {
	p := store.NewProject(name, s.now())
	var secret string
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := put(tx.Bucket(bucketProjects), p.ID, p); err != nil {
			return err
		}
		var err error
		secret, _, err = s.createKey(tx, p.ID)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: create project: %w", err)
	}
	return p, secret, nil
}

// Project returns a project by id.
func (s *Store) Project(id string) (*store.Project, error) {
	return record[store.Project](s, bucketProjects, id)
}

// Projects returns every project, oldest first.
func (s *Store) Projects() ([]store.Project, error) {
	var ps []store.Project
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketProjects).ForEach(func(k, _ []byte) error {
			p, err := get[store.Project](tx.Bucket(bucketProjects), string(k))
			if err != nil {
				return err
			}
			ps = append(ps, *p)
			return nil
		})
	})
	sort.Slice(ps, func(i, j int) bool { return ps[i].CreatedAt.Before(ps[j].CreatedAt) })
	return ps, err
}

// CreateKey adds an API key to a project and returns its secret.
func (s *Store) CreateKey(projectID string) (string, *store.APIKey, error) {
	var secret string
	var key *store.APIKey
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketProjects).Get([]byte(projectID)) == nil {
			return fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
		}
		var err error
		secret, key, err = s.createKey(tx, projectID)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("store: create key: %w", err)
	}
	return secret, key, nil
}

func (s *Store) createKey(tx *bbolt.Tx, projectID string) (string, *store.APIKey, error) {
	secret, key := store.NewAPIKey(projectID, s.now())
	k := storedKey{APIKey: *key, Hash: store.HashSecret(secret)}
	return secret, &k.APIKey, put(tx.Bucket(bucketKeys), k.Hash, k)
}

// Keys lists a project's keys, revoked ones included, oldest first.
func (s *Store) Keys(projectID string) ([]store.APIKey, error) {
	var keys []store.APIKey
	err := s.db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketProjects).Get([]byte(projectID)) == nil {
			return fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
		}
		b := tx.Bucket(bucketKeys)
		return b.ForEach(func(k, _ []byte) error {
			rec, err := get[storedKey](b, string(k))
			if err != nil {
				return err
			}
			if rec.ProjectID == projectID {
				keys = append(keys, rec.APIKey)
			}
			return nil
		})
	})
	sort.Slice(keys, func(i, j int) bool { return keys[i].CreatedAt.Before(keys[j].CreatedAt) })
	return keys, err
}

// RevokeKey revokes a key by its id, and ends the upload sessions it
// created. Revoking twice is not an error.
func (s *Store) RevokeKey(keyID string) (*store.APIKey, error) {
	var found *store.APIKey
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			rec, err := get[storedKey](b, string(k))
			if err != nil {
				return err
			}
			if rec.ID != keyID {
				continue
			}
			if rec.RevokedAt == nil {
				now := s.now().UTC()
				rec.RevokedAt = &now
				if err := put(b, string(k), rec); err != nil {
					return err
				}
				if err := expireSessionsOf(tx, keyID, now); err != nil {
					return err
				}
			}
			found = &rec.APIKey
			return nil
		}
		return fmt.Errorf("key %s: %w", keyID, store.ErrNotFound)
	})
	return found, err
}

// keyRevoked reports whether the key keyID is revoked, or gone. Keys are
// stored by their secret's hash: the hash is that Authenticate found for
// the key (a request's, so nearly always there), else every key is read.
func (s *Store) keyRevoked(tx *bbolt.Tx, keyID string) (bool, error) {
	b := tx.Bucket(bucketKeys)
	if h, ok := s.keyHashes.Load(keyID); ok {
		rec, err := get[storedKey](b, h.(string))
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		return err != nil || rec.RevokedAt != nil, err
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		rec, err := get[storedKey](b, string(k))
		if err != nil {
			return false, err
		}
		if rec.ID == keyID {
			return rec.RevokedAt != nil, nil
		}
	}
	return true, nil
}

// Authenticate returns the project a key secret belongs to and the key's
// id, or ErrNotFound for an unknown or revoked key.
//
// The lookup is by the secret's hash, so timing reveals nothing about the
// secret; the final comparison is constant-time all the same.
func (s *Store) Authenticate(secret string) (*store.Project, string, error) {
	h := store.HashSecret(secret)
	var p *store.Project
	var keyID string
	err := s.db.View(func(tx *bbolt.Tx) error {
		rec, err := get[storedKey](tx.Bucket(bucketKeys), h)
		if err != nil {
			return err
		}
		want, _ := hex.DecodeString(rec.Hash)
		got, _ := hex.DecodeString(h)
		if subtle.ConstantTimeCompare(want, got) != 1 || rec.RevokedAt != nil {
			return store.ErrNotFound
		}
		keyID = rec.ID
		p, err = get[store.Project](tx.Bucket(bucketProjects), rec.ProjectID)
		return err
	})
	if err == nil {
		s.keyHashes.Store(keyID, h) // for keyRevoked
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", store.ErrNotFound
	}
	return p, keyID, err
}

// CreateCustomer registers a customer under a project. One that would
// take the project past limits.Customers is ErrCustomerQuota.
func (s *Store) CreateCustomer(projectID, name string, limits store.ProjectLimits) (*store.Customer, error) {
	c := store.NewCustomer(projectID, name, s.now())
	more := store.ProjectUsage{Customers: 1}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketProjects).Get([]byte(projectID)) == nil {
			return fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
		}
		u := usageCounters(tx, projectID)
		if err := u.Check(limits, more); err != nil {
			return err
		}
		if err := tx.Bucket(bucketProjectCustomers).Put(ownerKey(projectID, []byte(c.ID)), nil); err != nil {
			return err
		}
		if err := addUsage(tx, projectID, more); err != nil {
			return err
		}
		return put(tx.Bucket(bucketCustomers), c.ID, c)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create customer: %w", err)
	}
	return c, nil
}

// Customer returns a customer by id.
func (s *Store) Customer(id string) (*store.Customer, error) {
	return record[store.Customer](s, bucketCustomers, id)
}

// Customers lists a project's customers that find matches (see
// Customer.Matches; an empty find matches every one), oldest first, limit
// at a time: those after the customer with id after (none: from the
// first), and the id to pass as after for the next page, empty after the
// last. Ids begin with their time (see NewID), so the order is the order
// they were made.
func (s *Store) Customers(projectID, find, after string, limit int) ([]store.Customer, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("store: list customers: limit %d, want at least 1", limit)
	}
	find = store.FoldFind(find)
	var cs []store.Customer
	next := ""
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(projectID, nil)
		c := tx.Bucket(bucketProjectCustomers).Cursor()
		from := ownerKey(projectID, []byte(after))
		k, _ := c.Seek(from)
		if after != "" && bytes.Equal(k, from) {
			k, _ = c.Next()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			cus, err := get[store.Customer](tx.Bucket(bucketCustomers), string(k[len(prefix):]))
			if err != nil {
				return err
			}
			if !cus.Matches(find) {
				continue
			}
			if len(cs) == limit {
				next = cs[len(cs)-1].ID
				return nil
			}
			cs = append(cs, *cus)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: list customers: %w", err)
	}
	return cs, next, nil
}

// indexProjectCustomers fills bucketProjectCustomers from the customers
// of a store written before it (schema 5).
func indexProjectCustomers(tx *bbolt.Tx) error {
	index := tx.Bucket(bucketProjectCustomers)
	return tx.Bucket(bucketCustomers).ForEach(func(k, v []byte) error {
		var c store.Customer
		if err := decode(v, &c); err != nil {
			return fmt.Errorf("%w (customer %s)", err, k)
		}
		return index.Put(ownerKey(c.ProjectID, []byte(c.ID)), nil)
	})
}
