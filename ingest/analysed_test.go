package ingest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// TestDocumentsAnalysedEitherWayAreFound uploads a small text, whose
// chunks the index takes analysed from the built-in embedder, and one of
// more than analysedTextMax, whose chunks it analyses again itself, and
// finds each by a word of its last chunk and by its name.
func TestDocumentsAnalysedEitherWayAreFound(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := startEngine(t, st, dir, llm.NewBuiltin())
	var large strings.Builder
	for i := 0; large.Len() <= 2*analysedTextMax; i++ { // past the bound whatever chunking trims
		fmt.Fprintf(&large, "Paragraph %d of the handbook describes the loading dock and its schedule.\n\n", i)
	}
	large.WriteString("The last page names the quartermaster.")
	docs := []struct{ name, text, word string }{
		{"zoo.txt", "The zebra sleeps standing up. Penguins cannot fly.", "penguins"},
		{"handbook.txt", large.String(), "quartermaster"},
	}
	for _, d := range docs {
		job, _, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: d.name, Data: []byte(d.text)})
		if err != nil {
			t.Fatal(err)
		}
		if j := waitJob(t, e, job.ID); j.Status != store.StatusSucceeded {
			t.Fatalf("%s: job %+v", d.name, j)
		}
	}
	for _, d := range docs {
		for _, q := range []string{d.word, strings.TrimSuffix(d.name, ".txt")} {
			res, _, err := searcher(e).Search(context.Background(), "cus_a", q, 3)
			if err != nil || len(res) == 0 {
				t.Fatalf("%q: %v, %v", q, res, err)
			}
			if res[0].DocumentName != d.name {
				t.Errorf("%q: first hit from %q, want %q", q, res[0].DocumentName, d.name)
			}
		}
	}
}
