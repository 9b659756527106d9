package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/store"
)

// Every committed change of an owner's chunks or vectors notifies
// docsift_chunks with "<owner> <node>" (no node outside a cluster); a
// change that rolls back notifies nothing.
func TestChunkChangesNotify(t *testing.T) {
	pg := pgtest.Start(t)
	url := pg.Database(t)
	s := open(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+chunksChannel); err != nil {
		t.Fatal(err)
	}
	expect := func(what, payload string) {
		t.Helper()
		wait, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := listener.WaitForNotification(wait)
		if err != nil {
			t.Fatalf("%s: no notification: %v", what, err)
		}
		if n.Channel != chunksChannel || n.Payload != payload {
			t.Fatalf("%s: notification %q on %s, want %q on %s", what, n.Payload, n.Channel, payload, chunksChannel)
		}
	}
	newDoc := func(owner string) *store.Document {
		d := &store.Document{ProjectID: "prj_x", OwnerID: owner, Name: "n.txt", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes([]byte("text of "+owner)), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := newDoc("cus_a")
	chunks := []store.Chunk{{Position: 0, Text: "a"}, {Position: 1, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1, 0}, nil}); err != nil {
		t.Fatal(err)
	}
	expect("ReplaceChunks", "cus_a ")
	newSeqs, _, _, err := s.AddVectors(d.ID, "m", []uint64{chunks[1].Seq}, [][]float32{{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	expect("AddVectors", "cus_a ")
	if err := s.BeginReindex("cus_a", "next"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors("next", []uint64{chunks[0].Seq, newSeqs[0]}, [][]float32{{1}, {0}}); err != nil {
		t.Fatal(err)
	}
	expect("PutVectors", "cus_a ")
	if err := s.FinishReindex("cus_a", "next", 1); err != nil {
		t.Fatal(err)
	}
	expect("FinishReindex", "cus_a ")

	// A refused write rolls back, and its notification with it: the next
	// one heard is another owner's.
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1, 0}, {0, 1}}); !errors.Is(err, store.ErrModelMismatch) {
		t.Fatalf("vectors of the old model: err = %v, want ErrModelMismatch", err)
	}
	other := newDoc("cus_b")
	if _, err := s.ReplaceChunks(other.ID, "m", []store.Chunk{{Position: 0, Text: "b"}}, [][]float32{nil}); err != nil {
		t.Fatal(err)
	}
	expect("ReplaceChunks of another owner after a refused one", "cus_b ")

	if _, err := s.DeleteChunks(other.ID); err != nil {
		t.Fatal(err)
	}
	expect("DeleteChunks", "cus_b ")
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	expect("DeleteDocument", "cus_a ")
}

// benchChunks is what one ingest call writes: a few hundred chunks of a
// document with vectors of a nomic-sized model.
func benchChunks(n, dim int) ([]store.Chunk, [][]float32) {
	chunks := make([]store.Chunk, n)
	vectors := make([][]float32, n)
	for i := range chunks {
		text := strings.Repeat("word ", 60) + strconv.Itoa(i)
		chunks[i] = store.Chunk{Position: i, Page: i/4 + 1, End: len(text), Text: text, TextHash: store.TextHash(text)}
		vectors[i] = make([]float32, dim)
		vectors[i][i%dim] = 1
	}
	return chunks, vectors
}

// BenchmarkReplaceChunks writes 300 chunks with 768-dimension vectors
// per operation, replacing the previous run's.
func BenchmarkReplaceChunks(b *testing.B) {
	pg := pgtest.Start(b)
	s := openBench(b, pg.Database(b))
	d := &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n.txt", Format: "text"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("x")), store.ProjectLimits{}); err != nil {
		b.Fatal(err)
	}
	chunks, vectors := benchChunks(300, 768)
	b.ResetTimer()
	for range b.N {
		if _, err := s.ReplaceChunks(d.ID, "m", chunks, vectors); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(chunks))/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkChunksBySeq reads 50 chunks by sequence, as a query's results
// are, out of 3,000.
func BenchmarkChunksBySeq(b *testing.B) {
	pg := pgtest.Start(b)
	s := openBench(b, pg.Database(b))
	var seqs []uint64
	for range 10 {
		d := &store.Document{ProjectID: "prj_x", OwnerID: "cus_a", Name: "n.txt", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes([]byte(d.Name)), store.ProjectLimits{}); err != nil {
			b.Fatal(err)
		}
		chunks, vectors := benchChunks(300, 8)
		if _, err := s.ReplaceChunks(d.ID, "m", chunks, vectors); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(chunks); i += 60 {
			seqs = append(seqs, chunks[i].Seq)
		}
	}
	b.ResetTimer()
	for range b.N {
		got, err := s.ChunksBySeq(seqs)
		if err != nil || len(got) != len(seqs) {
			b.Fatalf("ChunksBySeq = %d chunks, %v; want %d", len(got), err, len(seqs))
		}
	}
}

func openBench(b *testing.B, url string) *Store {
	s, err := Open(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
