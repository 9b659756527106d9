package indexes

import (
	"slices"
	"testing"

	"github.com/docsift/docsift/index"
)

// TestFilterStaysWithinOwner: every owner has an index of its own, with a
// document table of its own, so a filter naming another owner's documents,
// or metadata they share, finds only the owner's own chunks.
func TestFilterStaysWithinOwner(t *testing.T) {
	r := testIndexes(t)
	docs := map[string]*index.Document{
		"cus_a": {ID: "doc_a", Metadata: map[string]string{"dept": "legal"}},
		"cus_b": {ID: "doc_b", Metadata: map[string]string{"dept": "legal"}},
	}
	first := map[string]uint64{"cus_a": 1, "cus_b": 100}
	for owner, d := range docs {
		es := chunkEntries(first[owner], 5, "walrus on sea ice")
		for i := range es {
			es[i].Doc = d
		}
		if err := r.Update(owner, func(x *index.OwnerIndex) (uint64, error) { return 0, x.Add(es...) }); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range map[string]index.Filter{
		"the other owner's document": func(d *index.Document) bool { return d.ID == "doc_b" },
		"shared metadata":            func(d *index.Document) bool { return d.Metadata["dept"] == "legal" },
		"everything":                 func(*index.Document) bool { return true },
	} {
		got := searchOwner(t, r, "cus_a", index.Query{Vector: []float32{0.6, 0.8}, Text: "walrus", K: 100, Filter: f})
		for _, id := range got {
			if !slices.Contains([]uint64{1, 2, 3, 4, 5}, id) {
				t.Errorf("%s: cus_a's filtered search found %d, not one of its chunks", name, id)
			}
		}
	}
}
