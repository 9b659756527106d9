package index

import (
	"os"
	"testing"
)

// testLearnedEfConstruction is the narrower list the tests' graphs of
// learned-model vectors build from: wide enough for their recall checks
// against exact search, a quarter of the product's work under -race.
const testLearnedEfConstruction = 48

// TestMain builds the tests' graphs of learned-model vectors from
// testLearnedEfConstruction (see learnedEfConstruction), but for the
// tests that ask for the real list (withLearnedEfConstruction).
func TestMain(m *testing.M) {
	learnedEfConstruction = testLearnedEfConstruction
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
