package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// CreateSession stores a session valid for ttl and returns its token. A
// session that would take its project past limits.Sessions alive is
// ErrSessionQuota.
func (s *Store) CreateSession(sess store.Session, ttl time.Duration, limits store.ProjectLimits) (*store.Session, string, error) {
	sess, token := store.NewSession(sess, ttl, s.now())
	err := s.db.Update(func(tx *bbolt.Tx) error {
		// The key was good when the request came in, but a session it
		// asks for after its revocation would outlive it, as none of
		// the sessions it made before do.
		if sess.KeyID != "" {
			revoked, err := s.keyRevoked(tx, sess.KeyID)
			if err != nil {
				return err
			}
			if revoked {
				return store.ErrKeyRevoked
			}
		}
		if limits.Sessions > 0 {
			// Counted up to the limit: what is past it changes nothing.
			u := store.ProjectUsage{}
			u.Sessions, _ = aliveSessions(tx, sess.ProjectID, sess.CreatedAt, limits.Sessions)
			if err := u.Check(limits, store.ProjectUsage{Sessions: 1}); err != nil {
				return err
			}
		}
		return putSession(tx, store.HashSecret(token), nil, &sess)
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: create session: %w", err)
	}
	return &sess, token, nil
}

// SessionByToken returns the session a token opens, expired or not: the
// caller decides what an expired session may still show.
func (s *Store) SessionByToken(token string) (*store.Session, error) {
	var sess *store.Session
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		sess, err = get[store.Session](tx.Bucket(bucketSessions), store.HashSecret(token))
		return err
	})
	return sess, err
}

// CloseSession ends the session a token opens, as its end user left the
// page (how: SessionDone or SessionCancelled): it expires now, and says
// why. A session already ended stays as it was. It returns the session.
func (s *Store) CloseSession(token, how string) (*store.Session, error) {
	var sess *store.Session
	err := s.update(func(tx *bbolt.Tx) (err error) {
		b := tx.Bucket(bucketSessions)
		if sess, err = get[store.Session](b, store.HashSecret(token)); err != nil {
			return err
		}
		if now := s.now().UTC(); !sess.Expired(now) {
			was := *sess
			sess.ExpiresAt, sess.Closed = now, how
			return putSession(tx, store.HashSecret(token), &was, sess)
		}
		return nil
	})
	return sess, err
}

// expireSessionsOf ends every live session created with keyID, in tx: a
// revoked key must not live on through the upload links it handed out.
func expireSessionsOf(tx *bbolt.Tx, keyID string, now time.Time) error {
	b := tx.Bucket(bucketSessions)
	var ended [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var sess store.Session
		if err := decode(v, &sess); err != nil {
			return fmt.Errorf("%w (session %s)", err, k)
		}
		if sess.KeyID == keyID && !sess.Expired(now) {
			ended = append(ended, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range ended {
		sess, err := get[store.Session](b, string(k))
		if err != nil {
			return err
		}
		was := *sess
		sess.ExpiresAt, sess.Closed = now, store.SessionRevoked
		if err := putSession(tx, string(k), &was, sess); err != nil {
			return err
		}
	}
	return nil
}

// bucketProjectSessions indexes sessions by project and expiry: project
// \x00 expiry(8, unix ns) token hash → nil. A project's sessions alive
// are its entries past now, counted without reading a record (see
// aliveSessions); the sweep finds the ended ones in it.
var bucketProjectSessions = []byte("projectsessions")

func projectSessionKey(hash string, sess *store.Session) []byte {
	k := ownerKey(sess.ProjectID, nil)
	k = binary.BigEndian.AppendUint64(k, uint64(sess.ExpiresAt.UnixNano()))
	return append(k, hash...)
}

// putSession writes sess under its token's hash, and its entry in the
// project's index; was is the session as it was stored, nil for a new
// one.
func putSession(tx *bbolt.Tx, hash string, was, sess *store.Session) error {
	index := tx.Bucket(bucketProjectSessions)
	if was != nil {
		if err := index.Delete(projectSessionKey(hash, was)); err != nil {
			return err
		}
	}
	if err := put(tx.Bucket(bucketSessions), hash, sess); err != nil {
		return err
	}
	return index.Put(projectSessionKey(hash, sess), nil)
}

// aliveSessions counts a project's sessions alive at now, up to limit
// when it is above 0, and returns when the first of them expires.
func aliveSessions(tx *bbolt.Tx, projectID string, now time.Time, limit int) (int, time.Time) {
	prefix := ownerKey(projectID, nil)
	// Alive is expiring after now: from the first entry past it.
	from := binary.BigEndian.AppendUint64(ownerKey(projectID, nil), uint64(now.UnixNano())+1)
	n, next := 0, time.Time{}
	c := tx.Bucket(bucketProjectSessions).Cursor()
	for k, _ := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && (limit <= 0 || n < limit); k, _ = c.Next() {
		if n == 0 && len(k) >= len(prefix)+8 {
			next = time.Unix(0, int64(binary.BigEndian.Uint64(k[len(prefix):]))).UTC()
		}
		n++
	}
	return n, next
}

// SweepSessions removes the sessions that ended more than
// EndedSessionKept ago, and their index entries, and returns how many it
// removed. The documents uploaded through them stay, with the session's
// id in their metadata.
func (s *Store) SweepSessions() (int, error) {
	before := uint64(s.now().Add(-store.EndedSessionKept).UnixNano())
	n := 0
	err := s.update(func(tx *bbolt.Tx) error {
		n = 0 // from a run rolled back (see update)
		index, records := tx.Bucket(bucketProjectSessions), tx.Bucket(bucketSessions)
		var gone [][]byte
		err := index.ForEach(func(k, _ []byte) error {
			_, rest, ok := bytes.Cut(k, []byte{0})
			if ok && len(rest) >= 8 && binary.BigEndian.Uint64(rest) <= before {
				gone = append(gone, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range gone {
			_, rest, _ := bytes.Cut(k, []byte{0})
			if err := records.Delete(rest[8:]); err != nil {
				return err
			}
			if err := index.Delete(k); err != nil {
				return err
			}
		}
		n = len(gone)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep sessions: %w", err)
	}
	return n, nil
}

// indexProjectSessions fills bucketProjectSessions from every session,
// for data written before it was kept (schema 9 and older).
func indexProjectSessions(tx *bbolt.Tx) error {
	index := tx.Bucket(bucketProjectSessions)
	return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
		var sess store.Session
		if err := decode(v, &sess); err != nil {
			return fmt.Errorf("%w (session %s)", err, k)
		}
		return index.Put(projectSessionKey(string(k), &sess), nil)
	})
}

// bucketSessionDocs indexes documents by the upload session they came
// through: session id \x00 document id → nil.
var bucketSessionDocs = []byte("sessiondocs")

// sessionDocKey is a document's key in bucketSessionDocs, or nil for a
// document that came through no session.
func sessionDocKey(d *store.Document) []byte {
	sid := d.Metadata[store.SessionMetaKey]
	if sid == "" {
		return nil
	}
	return ownerKey(sid, []byte(d.ID))
}

// SessionDocuments returns the documents of owner uploaded through the
// session sessionID, in the order they were uploaded.
func (s *Store) SessionDocuments(ownerID, sessionID string) ([]store.Document, error) {
	var docs []store.Document
	err := s.db.View(func(tx *bbolt.Tx) error {
		prefix := ownerKey(sessionID, nil)
		c := tx.Bucket(bucketSessionDocs).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			d, err := getDoc(tx, string(k[len(prefix):]))
			if err != nil {
				return err
			}
			if d.OwnerID == ownerID {
				docs = append(docs, *d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list the documents of session %s: %w", sessionID, err)
	}
	return docs, nil
}

// indexSessionDocuments fills bucketSessionDocs from every document, for
// data written before it was kept (schema 4 and older).
func indexSessionDocuments(tx *bbolt.Tx) error {
	index := tx.Bucket(bucketSessionDocs)
	return tx.Bucket(bucketDocuments).ForEach(func(k, v []byte) error {
		var d store.Document
		if err := decode(v, &d); err != nil {
			return fmt.Errorf("%w (document %s)", err, k)
		}
		if key := sessionDocKey(&d); key != nil {
			return index.Put(key, nil)
		}
		return nil
	})
}
