package store

import (
	"reflect"
	"testing"
)

// TestEmbedCacheFollowsChunks checks that a cache entry lives exactly as
// long as its chunk and finds only vectors that exist, of the model asked.
func TestEmbedCacheFollowsChunks(t *testing.T) {
	s, _ := openTest(t)
	d, _ := newDoc(t, s, "cus_a", "bytes")
	s.ClaimJob()
	h1, h2 := TextHash("n.txt\nhello"), TextHash("n.txt\nworld")
	chunks := []Chunk{{Position: 0, Text: "hello", TextHash: h1}, {Position: 1, Text: "world", TextHash: h2}, {Position: 2, Text: "old"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1, 0}, {0, 1}, {1, 1}}); err != nil {
		t.Fatal(err)
	}
	lookup := func(owner, model string, hashes ...string) [][]float32 {
		t.Helper()
		v, err := s.CachedVectors(owner, model, hashes)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := lookup("cus_a", "m", h2, h1, TextHash("other"), "short"); !reflect.DeepEqual(got, [][]float32{{0, 1}, {1, 0}, nil, nil}) {
		t.Fatalf("CachedVectors = %v", got)
	}
	if got := lookup("cus_b", "m", h1); got[0] != nil {
		t.Fatal("another owner's vector served")
	}
	if got := lookup("cus_a", "next", h1); got[0] != nil {
		t.Fatal("a vector of another model served")
	}
	if n, _ := s.EmbedCacheEntries("cus_a"); n != 2 {
		t.Fatalf("%d entries; want 2 (a chunk without a hash is not cached)", n)
	}

	// A reindex's staged vectors are found for its model; when it
	// finishes, the old model's are not.
	if err := s.BeginReindex("cus_a", "next"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors("next", []uint64{chunks[0].Seq, chunks[1].Seq, chunks[2].Seq}, [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if got := lookup("cus_a", "next", h1); !reflect.DeepEqual(got[0], []float32{1, 0, 0}) {
		t.Fatalf("staged vector not found: %v", got)
	}
	if err := s.FinishReindex("cus_a", "next", 3); err != nil {
		t.Fatal(err)
	}
	if got := lookup("cus_a", "m", h1); got[0] != nil {
		t.Fatal("the old model's deleted vector is still served")
	}

	// A re-run replaces the entries; a delete removes them.
	again := []Chunk{{Position: 0, Text: "hello", TextHash: h1}}
	if _, err := s.ReplaceChunks(d.ID, "next", again, [][]float32{{0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.EmbedCacheEntries("cus_a"); n != 1 {
		t.Fatalf("%d entries after a re-run of one chunk", n)
	}
	if got := lookup("cus_a", "next", h1, h2); !reflect.DeepEqual(got, [][]float32{{0, 0, 1}, nil}) {
		t.Fatalf("after the re-run: %v", got)
	}
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.EmbedCacheEntries("cus_a"); n != 0 {
		t.Fatalf("%d entries after the document was deleted", n)
	}
	if got := lookup("cus_a", "next", h1); got[0] != nil {
		t.Fatal("a deleted document's vector is still served")
	}
}
