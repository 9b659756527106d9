package bolt

import (
	"errors"
	"testing"

	"github.com/docsift/docsift/store"
)

// The behaviour of external ids is in the conformance suite
// (storetest.RunChunks); this checks, with the bbolt file's fingerprint,
// that a superseded replacement leaves every record as it was, the ones no
// method shows included.
func TestExternalIDSupersededChangesNothing(t *testing.T) {
	s, _ := openTest(t)
	upload := func(text string) *store.Document {
		d := &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n.txt", Format: "text", ExternalID: "manual"}
		if _, err := s.CreateDocument(d, store.Bytes([]byte(text)), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	succeed := func(d *store.Document) error {
		_, err := s.ReplaceChunks(d.ID, "m", []store.Chunk{{Position: 0, Text: "text of " + d.ID}}, [][]float32{{1, 0}})
		return err
	}
	if err := succeed(upload("v1")); err != nil {
		t.Fatal(err)
	}
	older, newer := upload("v2"), upload("v3")
	if err := succeed(newer); err != nil {
		t.Fatal(err)
	}
	before, err := s.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if err := succeed(older); !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("the older upload finishing last: %v, want ErrSuperseded", err)
	}
	if after, _ := s.Fingerprint(); after != before {
		t.Error("a superseded replacement changed the store")
	}
}
