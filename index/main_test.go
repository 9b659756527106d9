package index

import (
	"os"
	"testing"
)

// TestMain builds the tests' graphs of learned-model vectors from the
// built-in embedder's narrower list (see learnedEfConstruction), but for
// the tests that ask for the real one (withLearnedEfConstruction).
func TestMain(m *testing.M) {
	learnedEfConstruction = hnswEfConstruction
	os.Exit(m.Run())
}

// withLearnedEfConstruction makes the rest of t build learned-model graphs
// as the product does. The package's tests run one at a time, so the
// variable is never read while it changes.
func withLearnedEfConstruction(t *testing.T) {
	t.Helper()
	was := learnedEfConstruction
	learnedEfConstruction = hnswEfConstructionLearned
	t.Cleanup(func() { learnedEfConstruction = was })
}
