package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Chunks is the slice of chunks and their vectors on top of Jobs: writing
// a document's chunks with or without vectors, the sequences that number
// them, owners' embedding models and reindexing, the embedding cache, and
// external ids, whose take-over happens when a document's chunks are done.
type Chunks interface {
	Jobs
	store.ChunkStore
	store.ModelStore
	EmbedCacheEntries(owner string) (int, error)
	CreateSubpage(sp store.Subpage, data []byte, ttl time.Duration, limits store.SubpageLimits) (*store.Subpage, error)
	Subpage(id string) (*store.Subpage, error)
}

// RunChunks runs every test of the Chunks slice, each on a new store.
func RunChunks(t *testing.T, open func(t *testing.T) Chunks) {
	t.Run("RerunReplacesChunks", func(t *testing.T) { rerunReplacesChunks(t, open(t)) })
	t.Run("ChunkIDsNameTheirDocument", func(t *testing.T) { chunkIDsNameTheirDocument(t, open(t)) })
	t.Run("VectorsAfterChunks", func(t *testing.T) { vectorsAfterChunks(t, open(t)) })
	t.Run("DeleteChunksKeepsDocument", func(t *testing.T) { deleteChunksKeepsDocument(t, open(t)) })
	t.Run("DeleteDocumentRemovesEverything", func(t *testing.T) { deleteDocumentRemovesEverything(t, open(t)) })
	t.Run("DocumentsOfChunks", func(t *testing.T) { documentsOfChunks(t, open(t)) })
	t.Run("OwnerModelAndReindex", func(t *testing.T) { ownerModelAndReindex(t, open(t)) })
	t.Run("EmbedCacheFollowsChunks", func(t *testing.T) { embedCacheFollowsChunks(t, open(t)) })
	t.Run("ExternalIDReplacement", func(t *testing.T) { externalIDReplacement(t, open(t)) })
	t.Run("ExternalIDLaterUploadWins", func(t *testing.T) { externalIDLaterUploadWins(t, open(t)) })
	t.Run("ExternalIDReplacesPendingHolder", func(t *testing.T) { externalIDReplacesPendingHolder(t, open(t)) })
	t.Run("ExternalIDFreedByDelete", func(t *testing.T) { externalIDFreedByDelete(t, open(t)) })
	t.Run("ExternalIDTakenOverByLastVector", func(t *testing.T) { externalIDTakenOverByLastVector(t, open(t)) })
	t.Run("ExternalIDConcurrentReplacements", func(t *testing.T) { externalIDConcurrentReplacements(t, open(t)) })
}

func mustSeqs(t *testing.T, s Chunks, owner string) []uint64 {
	t.Helper()
	seqs, err := s.OwnerSeqs(owner)
	if err != nil {
		t.Fatalf("OwnerSeqs(%s): %v", owner, err)
	}
	return seqs
}

func seqsOf(chunks []store.Chunk) []uint64 {
	var seqs []uint64
	for _, c := range chunks {
		seqs = append(seqs, c.Seq)
	}
	return seqs
}

func rerunReplacesChunks(t *testing.T, s Chunks) {
	c := newClock(s)
	d, j := upload(t, s, "alice", "n.txt", "hello world")
	mustClaim(t, s)
	chunks := []store.Chunk{
		{Position: 0, Page: 1, Start: 0, End: 5, Text: "hello", TextHash: store.TextHash("n.txt\nhello"), Sections: []string{"Intro", "Greeting"}},
		{Position: 1, Page: 2, Start: 6, End: 11, Text: "world"},
	}
	vecs := [][]float32{{1, 0}, {0, 1}}
	if removed, err := s.ReplaceChunks(d.ID, "m", chunks, vecs); err != nil || len(removed) != 0 {
		t.Fatalf("first ReplaceChunks = %v, %v; want nothing removed", removed, err)
	}
	if chunks[0].ID != store.ChunkID(d.ID, 0) || chunks[0].DocumentID != d.ID || chunks[0].OwnerID != "alice" ||
		chunks[0].Seq == 0 || chunks[1].Seq <= chunks[0].Seq {
		t.Fatalf("written chunks %+v: want ids, document, owner and increasing sequences filled in", chunks)
	}
	got, err := s.Chunk(chunks[0].ID)
	if err != nil || !reflect.DeepEqual(*got, chunks[0]) {
		t.Fatalf("Chunk = %+v, %v; want %+v", got, err, chunks[0])
	}
	if got, _ := s.Chunk(chunks[1].ID); got == nil || got.Sections != nil || got.TextHash != "" || got.Page != 2 {
		t.Fatalf("chunk without sections or hash read back as %+v", got)
	}
	if job := mustJob(t, s, j.ID); job.Chunks != 2 || job.ChunksEmbedded != 2 || !job.SearchableAt.Equal(c.Now()) {
		t.Fatalf("job after the chunks = %+v; want 2 chunks, 2 embedded, searchable now", job)
	}

	// The process dies here; on restart the job runs again.
	if n, _, err := s.RequeueInterrupted(store.DefaultMaxInterrupted); n != 1 || err != nil {
		t.Fatalf("RequeueInterrupted = %d, %v", n, err)
	}
	mustClaim(t, s)
	c.Advance(time.Minute)
	again := []store.Chunk{{Position: 0, Text: "hello"}, {Position: 1, Text: "world"}}
	removed, err := s.ReplaceChunks(d.ID, "m", again, vecs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, seqsOf(chunks)) {
		t.Fatalf("removed %v, want the first run's %v", removed, seqsOf(chunks))
	}
	if seqs := mustSeqs(t, s, "alice"); !slices.Equal(seqs, seqsOf(again)) || again[0].Seq <= chunks[1].Seq {
		t.Fatalf("owner seqs %v, want only the re-run's %v, above the first run's", seqs, seqsOf(again))
	}
	if again[0].ID != chunks[0].ID {
		t.Fatalf("chunk id not derived from document and position: %s, then %s", chunks[0].ID, again[0].ID)
	}
	if job := mustJob(t, s, j.ID); !job.SearchableAt.Equal(c.Now().Add(-time.Minute)) {
		t.Fatalf("searchable_at = %v; want the first write's time kept", job.SearchableAt)
	}
	if err := s.FinishJob(j.ID, 2, 0, ""); err != nil {
		t.Fatal(err)
	}
	if job, doc := mustJob(t, s, j.ID), mustDoc(t, s, d.ID); job.Status != store.StatusSucceeded || doc.Chunks != 2 {
		t.Fatalf("after finish: job %+v doc %+v", job, doc)
	}
	if v, err := s.Vector("m", again[1].Seq); err != nil || !slices.Equal(v, []float32{0, 1}) {
		t.Fatalf("Vector = %v, %v", v, err)
	}
	if _, err := s.Vector("m", chunks[1].Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Vector of a replaced chunk: err = %v, want ErrNotFound", err)
	}
	// Batch reads keep the order asked and skip what is gone.
	vecs, err = s.Vectors("m", []uint64{again[1].Seq, chunks[1].Seq, again[1].Seq})
	if err != nil || len(vecs) != 3 || !slices.Equal(vecs[0], []float32{0, 1}) || vecs[1] != nil || !slices.Equal(vecs[2], []float32{0, 1}) {
		t.Fatalf("Vectors = %v, %v; want the vector, nil for the replaced chunk, the vector again", vecs, err)
	}
	if vecs, err := s.Vectors("other model", []uint64{again[1].Seq}); err != nil || len(vecs) != 1 || vecs[0] != nil {
		t.Fatalf("Vectors of another model = %v, %v; want [nil]", vecs, err)
	}
	ask := []uint64{again[1].Seq, chunks[0].Seq, again[0].Seq}
	if got, err := s.ChunksBySeq(ask); err != nil || len(got) != 2 || got[0].ID != again[1].ID || got[1].ID != again[0].ID {
		t.Fatalf("ChunksBySeq(%v) = %+v, %v; want the second chunk, then the first", ask, got, err)
	}
	if got, err := s.ChunksBySeq(nil); err != nil || len(got) != 0 {
		t.Fatalf("ChunksBySeq(nil) = %+v, %v", got, err)
	}
	if _, err := s.Chunk("chk_nope-0000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Chunk(unknown): err = %v, want ErrNotFound", err)
	}
	if _, err := s.ReplaceChunks(d.ID, "m", again, vecs[:1]); err == nil {
		t.Fatal("ReplaceChunks with fewer vectors than chunks succeeded")
	}
	// A run that finds no text leaves no chunks.
	if removed, err := s.ReplaceChunks(d.ID, "m", nil, nil); err != nil || !slices.Equal(removed, seqsOf(again)) {
		t.Fatalf("ReplaceChunks(none) = %v, %v; want %v removed", removed, err, seqsOf(again))
	}
	if seqs := mustSeqs(t, s, "alice"); len(seqs) != 0 {
		t.Fatalf("OwnerSeqs = %v after a run with no chunks", seqs)
	}
	if job := mustJob(t, s, j.ID); job.Chunks != 0 || job.ChunksEmbedded != 0 {
		t.Fatalf("job after a run with no chunks = %+v", job)
	}
}

// chunkIDsNameTheirDocument: a chunk's id is derived from its document and
// position; an id that is no chunk id finds no chunk.
func chunkIDsNameTheirDocument(t *testing.T, s Chunks) {
	d, _ := upload(t, s, "alice", "n.txt", "x")
	chunks := []store.Chunk{{Position: 0, Text: "a"}, {Position: 12, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}, nil}); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if c.ID != store.ChunkID(d.ID, c.Position) {
			t.Fatalf("chunk at %d has id %s, want %s", c.Position, c.ID, store.ChunkID(d.ID, c.Position))
		}
	}
	for _, bad := range []string{d.ID, store.PrefixChunk, store.PrefixChunk + "-1", ""} {
		if _, err := s.Chunk(bad); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Chunk(%q): err = %v, want ErrNotFound", bad, err)
		}
	}
}

// vectorsAfterChunks: chunks written first are searchable by their words;
// each gets a new sequence when its vector arrives.
func vectorsAfterChunks(t *testing.T, s Chunks) {
	newClock(s)
	d, j := upload(t, s, "alice", "n.txt", "a b c")
	mustClaim(t, s)
	chunks := []store.Chunk{{Position: 0, Text: "a"}, {Position: 1, Text: "b"}, {Position: 2, Text: "c"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, make([][]float32, 3)); err != nil {
		t.Fatal(err)
	}
	if job := mustJob(t, s, j.ID); job.Chunks != 3 || job.ChunksEmbedded != 0 || job.SearchableAt.IsZero() {
		t.Fatalf("job = %+v; want 3 chunks, none embedded, searchable", job)
	}
	if _, err := s.OwnerModel("alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("chunks without vectors claimed a model: err = %v", err)
	}
	if _, err := s.Vector("m", chunks[0].Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Vector of a chunk without one: err = %v, want ErrNotFound", err)
	}
	old := seqsOf(chunks)

	newSeqs, removed, complete, err := s.AddVectors(d.ID, "m", []uint64{old[2], old[0]}, [][]float32{{0, 1}, {1, 0}})
	if err != nil || complete {
		t.Fatalf("AddVectors = %v, %v, %v, %v; want not complete", newSeqs, removed, complete, err)
	}
	if !slices.Equal(removed, []uint64{old[2], old[0]}) || newSeqs[0] <= old[2] || newSeqs[1] <= newSeqs[0] {
		t.Fatalf("AddVectors = new %v, removed %v; want new increasing sequences above %v, the old ones removed", newSeqs, removed, old)
	}
	if got, _ := s.Chunk(chunks[2].ID); got == nil || got.Seq != newSeqs[0] || got.Text != "c" {
		t.Fatalf("chunk after its vector = %+v; want sequence %d", got, newSeqs[0])
	}
	if v, err := s.Vector("m", newSeqs[1]); err != nil || !slices.Equal(v, []float32{1, 0}) {
		t.Fatalf("Vector = %v, %v", v, err)
	}
	if got, _ := s.ChunksBySeq(old); len(got) != 1 || got[0].ID != chunks[1].ID {
		t.Fatalf("ChunksBySeq(old) = %+v; want only the chunk still waiting", got)
	}
	want := []uint64{old[1], newSeqs[0], newSeqs[1]}
	if seqs := mustSeqs(t, s, "alice"); !slices.Equal(seqs, want) {
		t.Fatalf("OwnerSeqs = %v, want %v ascending", seqs, want)
	}
	if om, err := s.OwnerModel("alice"); err != nil || om.Model != "m" || om.Dim != 2 {
		t.Fatalf("OwnerModel = %+v, %v", om, err)
	}
	if job := mustJob(t, s, j.ID); job.Chunks != 3 || job.ChunksEmbedded != 2 {
		t.Fatalf("job = %+v; want 2 of 3 embedded", job)
	}
	if _, _, _, err := s.AddVectors(d.ID, "other", []uint64{old[1]}, [][]float32{{1, 1, 1}}); !errors.Is(err, store.ErrModelMismatch) {
		t.Fatalf("vectors of another model: err = %v, want ErrModelMismatch", err)
	}

	// A chunk that has its vector, or is gone, is skipped with 0.
	newSeqs2, removed2, complete, err := s.AddVectors(d.ID, "m",
		[]uint64{newSeqs[0], old[0], old[1]}, [][]float32{{9, 9}, {9, 9}, {1, 1}})
	if err != nil || !complete || newSeqs2[0] != 0 || newSeqs2[1] != 0 || newSeqs2[2] <= newSeqs[1] ||
		!slices.Equal(removed2, []uint64{old[1]}) {
		t.Fatalf("last AddVectors = %v, %v, %v, %v; want only the waiting chunk renumbered, complete", newSeqs2, removed2, complete, err)
	}
	if v, _ := s.Vector("m", newSeqs[0]); !slices.Equal(v, []float32{0, 1}) {
		t.Fatalf("a vector was overwritten: %v", v)
	}
	if job := mustJob(t, s, j.ID); job.ChunksEmbedded != 3 {
		t.Fatalf("job = %+v; want 3 of 3 embedded", job)
	}

	// Sequences are one series across owners.
	other, _ := upload(t, s, "bob", "o.txt", "o")
	more := []store.Chunk{{Position: 0, Text: "o"}}
	if _, err := s.ReplaceChunks(other.ID, "m", more, [][]float32{{1, 1}}); err != nil {
		t.Fatal(err)
	}
	if more[0].Seq <= newSeqs2[2] {
		t.Fatalf("bob's chunk has sequence %d, not above alice's %d", more[0].Seq, newSeqs2[2])
	}
	if seqs := mustSeqs(t, s, "alice"); len(seqs) != 3 {
		t.Fatalf("alice's seqs %v include another owner's", seqs)
	}
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AddVectors(d.ID, "m", nil, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("AddVectors on a deleted document: err = %v, want ErrNotFound", err)
	}
}

func deleteChunksKeepsDocument(t *testing.T, s Chunks) {
	d, _ := upload(t, s, "alice", "n.txt", "x")
	h := store.TextHash("x")
	chunks := []store.Chunk{{Position: 0, Text: "x", TextHash: h}, {Position: 1, Text: "y"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}, nil}); err != nil {
		t.Fatal(err)
	}
	removed, err := s.DeleteChunks(d.ID)
	if err != nil || !slices.Equal(removed, seqsOf(chunks)) {
		t.Fatalf("DeleteChunks = %v, %v; want %v", removed, err, seqsOf(chunks))
	}
	mustDoc(t, s, d.ID)
	if seqs := mustSeqs(t, s, "alice"); len(seqs) != 0 {
		t.Fatalf("OwnerSeqs = %v after DeleteChunks", seqs)
	}
	if _, err := s.Vector("m", chunks[0].Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("vector survived: err = %v", err)
	}
	if n, _ := s.EmbedCacheEntries("alice"); n != 0 {
		t.Fatalf("%d cache entries survived", n)
	}
	if removed, err := s.DeleteChunks(d.ID); err != nil || len(removed) != 0 {
		t.Fatalf("second DeleteChunks = %v, %v; want nothing", removed, err)
	}
	if _, err := s.DeleteChunks("doc_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteChunks(unknown): err = %v, want ErrNotFound", err)
	}
}

func deleteDocumentRemovesEverything(t *testing.T, s Chunks) {
	a, _ := upload(t, s, "cus_a", "a", "same bytes")
	b, jb := upload(t, s, "cus_a", "b", "same bytes")
	mustClaim(t, s)
	chunks := []store.Chunk{{Position: 0, Text: "t", TextHash: store.TextHash("t")}}
	if _, err := s.ReplaceChunks(a.ID, "m", chunks, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	sp, err := s.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: "prj_a", OwnerID: "cus_a", DocumentID: a.ID, FirstPage: 1, LastPage: 1, FileName: "a.pdf"}, []byte("%PDF-"), time.Hour, store.SubpageLimits{})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := s.DeleteDocument(a.ID)
	if err != nil || !slices.Equal(removed, []uint64{chunks[0].Seq}) {
		t.Fatalf("DeleteDocument = %v, %v", removed, err)
	}
	if _, err := s.Subpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("subpage of a deleted document survived: %v", err)
	}
	if _, err := s.Chunk(chunks[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("chunk survived: %v", err)
	}
	if seqs := mustSeqs(t, s, "cus_a"); len(seqs) != 0 {
		t.Fatalf("owner seqs survived: %v", seqs)
	}
	if _, err := s.Vector("m", chunks[0].Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("vector survived: %v", err)
	}
	if n, _ := s.EmbedCacheEntries("cus_a"); n != 0 {
		t.Fatalf("%d cache entries survived", n)
	}
	if _, err := s.ReadOriginal(b); err != nil {
		t.Fatalf("shared file removed too early: %v", err)
	}
	if removed, err := s.DeleteDocument(b.ID); err != nil || len(removed) != 0 {
		t.Fatalf("DeleteDocument without chunks = %v, %v", removed, err)
	}
	if _, err := s.ReadOriginal(b); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("file kept after its last document was deleted: %v", err)
	}
	if j := mustJob(t, s, jb.ID); j.Status != store.StatusFailed {
		t.Fatalf("queued job of deleted document: %s", j.Status)
	}
	if _, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Fatalf("deleted document's job still queued: %v", err)
	}
	if _, err := s.ReplaceChunks(a.ID, "m", chunks, [][]float32{{1}}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReplaceChunks on deleted document: %v", err)
	}
}

func documentsOfChunks(t *testing.T, s Chunks) {
	a, _ := upload(t, s, "alice", "a.txt", "a")
	b, _ := upload(t, s, "alice", "b.txt", "b")
	ca := []store.Chunk{{Position: 0, Text: "a0"}, {Position: 1, Text: "a1"}}
	cb := []store.Chunk{{Position: 0, Text: "b0"}}
	if _, err := s.ReplaceChunks(a.ID, "m", ca, [][]float32{{1}, {1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceChunks(b.ID, "m", cb, [][]float32{{1}}); err != nil {
		t.Fatal(err)
	}
	all := append(append([]store.Chunk{}, ca...), cb...)
	names, err := s.DocumentNames(all)
	if err != nil || !reflect.DeepEqual(names, map[string]string{a.ID: "a.txt", b.ID: "b.txt"}) {
		t.Fatalf("DocumentNames = %v, %v", names, err)
	}
	docs, err := s.DocumentsOf(all)
	if err != nil || len(docs) != 2 || docs[a.ID].Name != "a.txt" || docs[b.ID].ID != b.ID || docs[b.ID].OwnerID != "alice" {
		t.Fatalf("DocumentsOf = %v, %v", docs, err)
	}
	if _, err := s.DeleteDocument(b.ID); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.DocumentNames(all); len(names) != 1 || names[a.ID] != "a.txt" {
		t.Fatalf("DocumentNames after a delete = %v; want only a.txt", names)
	}
	if docs, _ := s.DocumentsOf(all); len(docs) != 1 || docs[a.ID] == nil {
		t.Fatalf("DocumentsOf after a delete = %v; want only a.txt", docs)
	}
	if names, err := s.DocumentNames(nil); err != nil || len(names) != 0 {
		t.Fatalf("DocumentNames(nil) = %v, %v", names, err)
	}
}

func ownerModelAndReindex(t *testing.T, s Chunks) {
	d, _ := upload(t, s, "cus_a", "n.txt", "x")
	chunks := []store.Chunk{{Position: 0, Text: "a"}, {Position: 1, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "old", chunks, [][]float32{{1, 0}, {0, 1}}); err != nil {
		t.Fatal(err)
	}
	if om, err := s.OwnerModel("cus_a"); err != nil || om.Model != "old" || om.Dim != 2 || om.Next != "" {
		t.Fatalf("OwnerModel = %+v, %v", om, err)
	}
	if _, err := s.ReplaceChunks(d.ID, "new", chunks, [][]float32{{1, 0, 0}, {0, 1, 0}}); !errors.Is(err, store.ErrModelMismatch) {
		t.Fatalf("vectors of another model: err = %v, want ErrModelMismatch", err)
	}
	if err := s.ClaimOwnerModel("cus_a", "old", 3); !errors.Is(err, store.ErrModelMismatch) {
		t.Fatalf("ClaimOwnerModel of another size: err = %v, want ErrModelMismatch", err)
	}
	if err := s.ClaimOwnerModel("cus_a", "old", 2); err != nil {
		t.Fatalf("ClaimOwnerModel of the owner's own model: %v", err)
	}
	if err := s.ClaimOwnerModel("cus_b", "other", 4); err != nil {
		t.Fatal(err)
	}
	owners, err := s.Owners()
	if err != nil || !reflect.DeepEqual(owners, map[string]store.OwnerModel{
		"cus_a": {Model: "old", Dim: 2}, "cus_b": {Model: "other", Dim: 4}}) {
		t.Fatalf("Owners = %+v, %v", owners, err)
	}
	if err := s.BeginReindex("cus_none", "new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BeginReindex of an owner without vectors: err = %v, want ErrNotFound", err)
	}
	if err := s.BeginReindex("cus_a", "new"); err != nil {
		t.Fatal(err)
	}
	if om, _ := s.OwnerModel("cus_a"); om == nil || om.Model != "old" || om.Next != "new" {
		t.Fatalf("OwnerModel while reindexing = %+v", om)
	}
	const gone = 1 << 40 // a sequence no chunk has
	if err := s.PutVectors("new", []uint64{chunks[0].Seq, gone}, [][]float32{{1, 0, 0}, {1, 1, 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Vector("new", gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a vector was staged for a chunk that does not exist: %v", err)
	}
	if err := s.FinishReindex("cus_a", "new", 3); err == nil {
		t.Fatal("switched with a chunk lacking a vector of the new model")
	}
	missing, err := s.MissingVectors("cus_a", "new")
	if err != nil || !slices.Equal(missing, []uint64{chunks[1].Seq}) {
		t.Fatalf("MissingVectors = %v, %v", missing, err)
	}
	if err := s.PutVectors("new", missing, [][]float32{{0, 1, 0}}); err != nil {
		t.Fatal(err)
	}
	if missing, _ := s.MissingVectors("cus_a", "new"); len(missing) != 0 {
		t.Fatalf("MissingVectors after staging = %v", missing)
	}
	if err := s.FinishReindex("cus_a", "new", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Vector("old", chunks[0].Seq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("old vectors kept after the switch: %v", err)
	}
	if v, _ := s.Vector("new", chunks[1].Seq); !slices.Equal(v, []float32{0, 1, 0}) {
		t.Fatalf("new vector = %v", v)
	}
	if om, _ := s.OwnerModel("cus_a"); om == nil || om.Model != "new" || om.Dim != 3 || om.Next != "" {
		t.Fatalf("after switch: %+v", om)
	}
	if _, err := s.ReplaceChunks(d.ID, "old", chunks, [][]float32{{1, 0}, {0, 1}}); !errors.Is(err, store.ErrModelMismatch) {
		t.Fatalf("vectors of the model switched away from: err = %v, want ErrModelMismatch", err)
	}
	if err := s.FinishReindex("cus_none", "new", 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FinishReindex of an owner without vectors: err = %v, want ErrNotFound", err)
	}
}

// embedCacheFollowsChunks checks that a cache entry lives exactly as long
// as its chunk and finds only vectors that exist, of the model asked.
func embedCacheFollowsChunks(t *testing.T, s Chunks) {
	d, _ := upload(t, s, "cus_a", "n.txt", "bytes")
	mustClaim(t, s)
	h1, h2 := store.TextHash("n.txt\nhello"), store.TextHash("n.txt\nworld")
	chunks := []store.Chunk{{Position: 0, Text: "hello", TextHash: h1}, {Position: 1, Text: "world", TextHash: h2}, {Position: 2, Text: "old"}}
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
	if got := lookup("cus_a", "m", h2, h1, store.TextHash("other"), "short", h2); !reflect.DeepEqual(got, [][]float32{{0, 1}, {1, 0}, nil, nil, {0, 1}}) {
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

	// Of two chunks with one text, a vector is found while either has it.
	d2, _ := upload(t, s, "cus_a", "n2.txt", "more bytes")
	twin := []store.Chunk{{Position: 0, Text: "hello", TextHash: h1}}
	if _, err := s.ReplaceChunks(d2.ID, "m", twin, [][]float32{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.EmbedCacheEntries("cus_a"); n != 3 {
		t.Fatalf("%d entries; want 3 with the twin", n)
	}

	// A reindex's staged vectors are found for its model; when it
	// finishes, the old model's are not.
	if err := s.BeginReindex("cus_a", "next"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors("next", []uint64{chunks[0].Seq, chunks[1].Seq, chunks[2].Seq, twin[0].Seq},
		[][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 0}}); err != nil {
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
	if _, err := s.DeleteDocument(d2.ID); err != nil {
		t.Fatal(err)
	}

	// A re-run replaces the entries; a delete removes them.
	again := []store.Chunk{{Position: 0, Text: "hello", TextHash: h1}}
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

// uploadExternal creates a document of owner under external id ext.
func uploadExternal(t *testing.T, s Chunks, owner, ext, content string) (*store.Document, *store.Job) {
	t.Helper()
	d := &store.Document{ProjectID: "prj_test", OwnerID: owner, Name: "n.txt", Format: "text", ExternalID: ext}
	j, err := s.CreateDocument(d, store.Bytes([]byte(content)), store.ProjectLimits{})
	if err != nil {
		t.Fatalf("CreateDocument(%s): %v", ext, err)
	}
	return d, j
}

// succeed writes one chunk with its vector for d, as its job's commit
// does, and returns the sequences it replaced.
func succeed(s Chunks, d *store.Document) ([]uint64, error) {
	return s.ReplaceChunks(d.ID, "m", []store.Chunk{{Position: 0, Text: "text of " + d.ID}}, [][]float32{{1, 0}})
}

func holderOf(t *testing.T, s Chunks, owner, ext string) string {
	t.Helper()
	d, err := s.DocumentByExternalID(owner, ext)
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

func externalIDReplacement(t *testing.T, s Chunks) {
	v1, _ := uploadExternal(t, s, "cus_a", "manual", "version one")
	if got := holderOf(t, s, "cus_a", "manual"); got != v1.ID {
		t.Fatalf("a new external id is held by %q, want the first upload %s", got, v1.ID)
	}
	if _, err := succeed(s, v1); err != nil {
		t.Fatal(err)
	}
	v1Seqs := mustSeqs(t, s, "cus_a")

	// A second upload waits as a candidate: the first stays the holder.
	v2, _ := uploadExternal(t, s, "cus_a", "manual", "version two")
	if got := holderOf(t, s, "cus_a", "manual"); got != v1.ID {
		t.Fatalf("while the replacement runs the holder is %q, want %s", got, v1.ID)
	}
	removed, err := succeed(s, v2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, v1Seqs) {
		t.Errorf("the replacement returned %v as removed, want the old version's %v", removed, v1Seqs)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != v2.ID {
		t.Fatalf("after the replacement the holder is %q, want %s", got, v2.ID)
	}
	if _, err := s.Document(v1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the replaced document is still there: %v", err)
	}
	if _, err := s.ReadOriginal(v1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the replaced document's file is still there: %v", err)
	}
	seqs := mustSeqs(t, s, "cus_a")
	if len(seqs) != 1 || slices.Contains(v1Seqs, seqs[0]) {
		t.Errorf("owner chunks %v, want only the new version's", seqs)
	}

	// Another owner's external id of the same name is another id.
	other, _ := uploadExternal(t, s, "cus_b", "manual", "version two")
	if got := holderOf(t, s, "cus_b", "manual"); got != other.ID {
		t.Errorf("cus_b's external id is held by %q, want %s", got, other.ID)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != v2.ID {
		t.Errorf("cus_b's upload changed cus_a's holder to %q", got)
	}
}

// ownerState is what a caller can see of an owner's documents and chunks.
type ownerState struct {
	Docs   []store.Document
	Jobs   []store.Job
	Chunks []store.Chunk
	Cache  int
}

func stateOf(t *testing.T, s Chunks, owner string) ownerState {
	t.Helper()
	docs, next, err := s.Documents(owner, "", 1000)
	if err != nil || next != "" {
		t.Fatalf("Documents(%s): next page %q, %v; want them all on one", owner, next, err)
	}
	st := ownerState{Docs: docs}
	for _, d := range docs {
		st.Jobs = append(st.Jobs, *mustJob(t, s, d.JobID))
	}
	if st.Chunks, err = s.ChunksBySeq(mustSeqs(t, s, owner)); err != nil {
		t.Fatal(err)
	}
	if st.Cache, err = s.EmbedCacheEntries(owner); err != nil {
		t.Fatal(err)
	}
	return st
}

// externalIDLaterUploadWins: two replacements race; whichever job ends
// first, the upload created later holds the external id, and the earlier
// one, ending after it, is refused without changing anything.
func externalIDLaterUploadWins(t *testing.T, s Chunks) {
	holder, _ := uploadExternal(t, s, "cus_a", "manual", "v1")
	if _, err := succeed(s, holder); err != nil {
		t.Fatal(err)
	}
	older, _ := uploadExternal(t, s, "cus_a", "manual", "v2")
	newer, _ := uploadExternal(t, s, "cus_a", "manual", "v3")
	if _, err := succeed(s, newer); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, s, "cus_a")
	if _, err := succeed(s, older); !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("the older upload finishing last: %v, want ErrSuperseded", err)
	}
	// Written without vectors, it is refused as early.
	if _, err := s.ReplaceChunks(older.ID, "m", []store.Chunk{{Position: 0, Text: "x"}}, [][]float32{nil}); !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("the older upload writing chunks before vectors: %v, want ErrSuperseded", err)
	}
	if after := stateOf(t, s, "cus_a"); !reflect.DeepEqual(after, before) {
		t.Errorf("a superseded replacement changed the store:\n%+v\nthen\n%+v", before, after)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != newer.ID {
		t.Errorf("holder %q, want the newer upload %s", got, newer.ID)
	}
}

// externalIDReplacesPendingHolder: a newer upload that succeeds while the
// holder has not run ends the holder's job with a reason.
func externalIDReplacesPendingHolder(t *testing.T, s Chunks) {
	first, firstJob := uploadExternal(t, s, "cus_a", "manual", "v1")
	second, _ := uploadExternal(t, s, "cus_a", "manual", "v2")
	if _, err := succeed(s, second); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, s, firstJob.ID); j.Status != store.StatusFailed || j.Error == "" {
		t.Errorf("the replaced upload's job is %s %q, want FAILED with a reason", j.Status, j.Error)
	}
	if _, err := s.Document(first.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the replaced pending document is still there: %v", err)
	}
	// Its queue entry is gone: the only job left to claim is the
	// replacement's own (its commit above ran ahead of its job here).
	if job, _, err := s.ClaimJob(nil); err != nil || job.DocumentID != second.ID {
		t.Errorf("claimed %+v, %v; want the replacement's job", job, err)
	}
	if job, _, err := s.ClaimJob(nil); !errors.Is(err, store.ErrNoJob) {
		t.Errorf("claimed %+v after its document was replaced", job)
	}
}

// externalIDFreedByDelete: deleting the holder frees the external id for
// the next upload; deleting a candidate leaves the holder.
func externalIDFreedByDelete(t *testing.T, s Chunks) {
	holder, _ := uploadExternal(t, s, "cus_a", "manual", "v1")
	candidate, _ := uploadExternal(t, s, "cus_a", "manual", "v2")
	if _, err := s.DeleteDocument(candidate.ID); err != nil {
		t.Fatal(err)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != holder.ID {
		t.Fatalf("deleting a candidate changed the holder to %q", got)
	}
	if _, err := s.DeleteDocument(holder.ID); err != nil {
		t.Fatal(err)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != "" {
		t.Fatalf("the deleted holder's external id is held by %q", got)
	}
	next, _ := uploadExternal(t, s, "cus_a", "manual", "v3")
	if got := holderOf(t, s, "cus_a", "manual"); got != next.ID {
		t.Fatalf("the freed external id went to %q, want the next upload %s", got, next.ID)
	}
}

// externalIDTakenOverByLastVector: a candidate whose chunks come before
// their vectors takes over when the last vector arrives, not before.
func externalIDTakenOverByLastVector(t *testing.T, s Chunks) {
	holder, _ := uploadExternal(t, s, "cus_a", "manual", "v1")
	if _, err := succeed(s, holder); err != nil {
		t.Fatal(err)
	}
	holderSeqs := mustSeqs(t, s, "cus_a")
	candidate, _ := uploadExternal(t, s, "cus_a", "manual", "v2")
	chunks := []store.Chunk{{Position: 0, Text: "a"}, {Position: 1, Text: "b"}}
	if removed, err := s.ReplaceChunks(candidate.ID, "m", chunks, [][]float32{{1, 0}, nil}); err != nil || len(removed) != 0 {
		t.Fatalf("candidate's chunks = %v, %v; want nothing removed yet", removed, err)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != holder.ID {
		t.Fatalf("holder %q before the candidate's last vector, want %s", got, holder.ID)
	}
	newSeqs, removed, complete, err := s.AddVectors(candidate.ID, "m", []uint64{chunks[1].Seq}, [][]float32{{0, 1}})
	if err != nil || !complete {
		t.Fatalf("AddVectors = %v, %v, %v, %v; want complete", newSeqs, removed, complete, err)
	}
	if want := append([]uint64{chunks[1].Seq}, holderSeqs...); !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want the renumbered chunk's and the holder's %v", removed, want)
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != candidate.ID {
		t.Fatalf("holder %q after the last vector, want %s", got, candidate.ID)
	}
	if _, err := s.Document(holder.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replaced holder is still there: %v", err)
	}
	if seqs := mustSeqs(t, s, "cus_a"); !slices.Equal(seqs, []uint64{chunks[0].Seq, newSeqs[0]}) {
		t.Fatalf("owner seqs %v, want the candidate's %d and %d", seqs, chunks[0].Seq, newSeqs[0])
	}
}

// externalIDConcurrentReplacements: uploads under one external id finish
// all at once while the holder is deleted; whatever the order, the last
// created holds it, and only its chunks are left.
func externalIDConcurrentReplacements(t *testing.T, s Chunks) {
	holder, _ := uploadExternal(t, s, "cus_a", "manual", "v0")
	if _, err := succeed(s, holder); err != nil {
		t.Fatal(err)
	}
	const uploads = 6
	var candidates []*store.Document
	for i := range uploads {
		d, _ := uploadExternal(t, s, "cus_a", "manual", fmt.Sprint("v", i+1))
		candidates = append(candidates, d)
	}
	errs := make([]error, uploads+1)
	var wg sync.WaitGroup
	for i, d := range candidates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = succeed(s, d)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errs[uploads] = s.DeleteDocument(holder.ID)
	}()
	wg.Wait()
	for i, err := range errs[:uploads] {
		if err != nil && !errors.Is(err, store.ErrSuperseded) {
			t.Fatalf("upload %d: %v", i+1, err)
		}
	}
	if err := errs[uploads]; err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting the holder: %v", err)
	}
	last := candidates[uploads-1]
	if errs[uploads-1] != nil {
		t.Fatalf("the last upload was refused: %v", errs[uploads-1])
	}
	if got := holderOf(t, s, "cus_a", "manual"); got != last.ID {
		t.Fatalf("holder %q, want the last upload %s", got, last.ID)
	}
	chunks, err := s.ChunksBySeq(mustSeqs(t, s, "cus_a"))
	if err != nil || len(chunks) != 1 || chunks[0].DocumentID != last.ID {
		t.Fatalf("owner's chunks %+v, %v; want only the last upload's", chunks, err)
	}
}
