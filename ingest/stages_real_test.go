package ingest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/store"
)

// realPDF is a 36-page PDF of the shared test data, read in place.
const realPDF = "../../shared/data/pdf/libtasn1.pdf"

// TestRealOllamaPDFSearchableBeforeEmbedded indexes a PDF with the real
// Ollama server, its embeddings held at a gate: the PDF's chunks are found
// by their words while the job is still PROCESSING, and by meaning too
// once it has SUCCEEDED.
func TestRealOllamaPDFSearchableBeforeEmbedded(t *testing.T) {
	data, err := os.ReadFile(realPDF)
	if err != nil {
		t.Skipf("the shared PDFs are not here (%v); this test reads %s", err, realPDF)
	}
	srv := ollamareal.Start(t)
	gate := newEmbedGate(t, srv.URL)
	n := startGatedNodeWith(t, t.TempDir(), gate, ollamareal.TinyEmbed.Name)
	const owner = "prj_realpdf"

	gate.holdAfter(0)
	job, _, err := n.engine.Submit(Upload{ProjectID: owner, OwnerID: owner, Name: "libtasn1.pdf", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	gate.waitHeld(t)
	j, err := n.store.Job(job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.StatusProcessing || j.Chunks < 10 || j.ChunksEmbedded != 0 {
		t.Fatalf("job with its embeddings held: %s, %d chunks, %d embedded; want PROCESSING with its chunks, none embedded", j.Status, j.Chunks, j.ChunksEmbedded)
	}
	const query = "DER encoding of an ASN.1 structure"
	res, warnings, err := n.search.Search(context.Background(), owner, query, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Chunk.DocumentID != job.DocumentID {
		t.Errorf("a lexical query found %d chunks before the job SUCCEEDED; want the PDF's", len(res))
	}
	if !hasWarning(warnings, "chunks are still being embedded") {
		t.Errorf("warnings %q do not say chunks wait for their vectors", warnings)
	}
	// The query's own embedding is held at the gate too, as it would wait
	// behind a busy model server: past the query's bound (the default
	// 2 s) it is answered from the lexical index, and says so.
	if !hasWarning(warnings, "was busy") {
		t.Errorf("warnings %q do not say the model was too busy to embed the query", warnings)
	}

	gate.open()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a loaded machine's model server
	defer cancel()
	if j, err = n.engine.WaitJob(ctx, job.ID); err != nil || j.Status != store.StatusSucceeded {
		t.Fatalf("job once released: %+v, %v; want SUCCEEDED", j, err)
	}
	if j.ChunksEmbedded != j.Chunks {
		t.Errorf("SUCCEEDED with %d of %d chunks embedded", j.ChunksEmbedded, j.Chunks)
	}
	res, warnings, err = n.search.Search(context.Background(), owner, query, 5)
	if err != nil || len(res) == 0 || hasWarning(warnings, "still being embedded") {
		t.Errorf("query after the job SUCCEEDED: %d chunks, warnings %q, %v", len(res), warnings, err)
	}
}
