package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// External ids. A caller may name a document with an id of its own
// (external_id), unique per owner, and upload it again under the same id
// to replace it. Each external id has at most one holder: the document
// that GET /documents?external_id= finds, and whose chunks are searched.
//
//   - A new upload takes a free external id at once, so that it can be
//     found while its job runs; otherwise it waits as a candidate.
//   - A candidate takes over in the transaction that gives the last of
//     its chunks a vector (ReplaceChunks or AddVectors): the holder's record, chunks,
//     vectors, queued job and file reference go, and the external id
//     points at the candidate. Its owner's index drops the old chunks and
//     adds the new ones in the same commit, so searches see one version
//     or the other.
//   - Of two uploads, the later created wins, whatever order their jobs
//     end in: a candidate older than the holder is refused
//     (ErrSuperseded) and its job fails, leaving the holder in place. So
//     does a failed candidate, by never reaching ReplaceChunks.
//   - Deleting the holder frees the external id.
var bucketExternalIDs = []byte("externalids") // owner \x00 external id → id of the document holding it

// ErrSuperseded is returned by ReplaceChunks for a document whose external
// id is held by a document created after it.
var ErrSuperseded = errors.New("a newer upload with the same external_id holds it")

func externalKey(d *Document) []byte { return ownerKey(d.OwnerID, []byte(d.ExternalID)) }

// claimExternalID makes a new document the holder of its external id when
// no document holds it.
func claimExternalID(tx *bolt.Tx, d *Document) error {
	if d.ExternalID == "" {
		return nil
	}
	b := tx.Bucket(bucketExternalIDs)
	if b.Get(externalKey(d)) != nil {
		return nil
	}
	return b.Put(externalKey(d), []byte(d.ID))
}

// releaseExternalID frees a removed document's external id if it holds it;
// a candidate's removal leaves the holder in place.
func releaseExternalID(tx *bolt.Tx, d *Document) error {
	if d.ExternalID == "" {
		return nil
	}
	b := tx.Bucket(bucketExternalIDs)
	if string(b.Get(externalKey(d))) != d.ID {
		return nil
	}
	return b.Delete(externalKey(d))
}

// takeOverExternalID makes d, whose job has succeeded, the holder of its
// external id, removing the document that held it. It returns the removed
// document's chunk sequences and, when its original file lost its last
// reference, that file's hash. A holder created after d wins: the result
// is then ErrSuperseded and nothing changes.
func (s *Store) takeOverExternalID(tx *bolt.Tx, d *Document) (removed []uint64, orphan string, err error) {
	h, err := otherHolder(tx, d)
	if err != nil || d.ExternalID == "" {
		return nil, "", err
	}
	if h != nil {
		if removed, orphan, err = s.removeDocument(tx, h, "replaced by a newer upload with the same external_id before it was processed"); err != nil {
			return nil, "", err
		}
	}
	return removed, orphan, tx.Bucket(bucketExternalIDs).Put(externalKey(d), []byte(d.ID))
}

// otherHolder returns the document d would take its external id over
// from: nil when d has none, holds it already, or it is free. A holder
// created after d is ErrSuperseded. A document whose chunks are written
// before they all have vectors asks early, so that an upload that cannot
// win is not searchable meanwhile.
func otherHolder(tx *bolt.Tx, d *Document) (*Document, error) {
	if d.ExternalID == "" {
		return nil, nil
	}
	holderID := string(tx.Bucket(bucketExternalIDs).Get(externalKey(d)))
	if holderID == "" || holderID == d.ID {
		return nil, nil
	}
	h, err := getDoc(tx, holderID)
	switch {
	case errors.Is(err, ErrNotFound): // a dangling entry: take it
		return nil, nil
	case err != nil:
		return nil, err
	case createdBefore(d, h):
		return nil, fmt.Errorf("%w (document %s)", ErrSuperseded, h.ID)
	}
	return h, nil
}

// createdBefore reports whether a was created before b: by creation
// sequence, then (for documents older than it) by time, then by id, so
// that any two documents are ordered the same way every time.
func createdBefore(a, b *Document) bool {
	switch {
	case a.Seq != b.Seq:
		return a.Seq < b.Seq
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// DocumentByExternalID returns the document of owner that holds externalID,
// or ErrNotFound.
func (s *Store) DocumentByExternalID(ownerID, externalID string) (*Document, error) {
	var d *Document
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketExternalIDs).Get(ownerKey(ownerID, []byte(externalID)))
		if id == nil {
			return ErrNotFound
		}
		var err error
		d, err = getDoc(tx, string(id))
		return err
	})
	return d, err
}

// removeOrphanFile removes an owner's original file that a committed
// transaction left without references, unless a reference came back
// meanwhile. Holding fileMu keeps CreateDocument from reusing the file
// between the check and the removal; while a backup reads the files, the
// removal waits for the sweep after it.
func (s *Store) removeOrphanFile(ownerID, hash string) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.pinned > 0 {
		s.orphansHeld = true
		return nil
	}
	var refs uint64
	if err := s.db.View(func(tx *bolt.Tx) error {
		refs = fileRefs(tx, ownerID, hash)
		return nil
	}); err != nil {
		return err
	}
	if refs > 0 {
		return nil
	}
	return s.removeFile(ownerID, hash)
}
