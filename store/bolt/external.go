package bolt

import (
	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/store"
)

// External ids (see OtherHolder for the rule): this bucket points each
// at its holder.
var bucketExternalIDs = []byte("externalids") // owner \x00 external id → id of the document holding it

func externalKey(d *store.Document) []byte { return ownerKey(d.OwnerID, []byte(d.ExternalID)) }

// claimExternalID makes a new document the holder of its external id when
// no document holds it.
func claimExternalID(tx *bbolt.Tx, d *store.Document) error {
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
func releaseExternalID(tx *bbolt.Tx, d *store.Document) error {
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
func (s *Store) takeOverExternalID(tx *bbolt.Tx, d *store.Document) (removed []uint64, orphan string, err error) {
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
// from (see OtherHolder). A document whose chunks are written before they
// all have vectors asks early, so that an upload that cannot win is not
// searchable meanwhile.
func otherHolder(tx *bbolt.Tx, d *store.Document) (*store.Document, error) {
	return store.OtherHolder(d, func() (*store.Document, error) {
		holderID := string(tx.Bucket(bucketExternalIDs).Get(externalKey(d)))
		switch holderID {
		case "":
			return nil, store.ErrNotFound
		case d.ID:
			return d, nil
		}
		return getDoc(tx, holderID)
	})
}

// DocumentByExternalID returns the document of owner that holds externalID,
// or ErrNotFound.
func (s *Store) DocumentByExternalID(ownerID, externalID string) (*store.Document, error) {
	var d *store.Document
	err := s.db.View(func(tx *bbolt.Tx) error {
		id := tx.Bucket(bucketExternalIDs).Get(ownerKey(ownerID, []byte(externalID)))
		if id == nil {
			return store.ErrNotFound
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
	if err := s.db.View(func(tx *bbolt.Tx) error {
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
