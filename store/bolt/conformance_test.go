package bolt_test

import (
	"testing"

	"github.com/docsift/docsift/store/bolt"
	"github.com/docsift/docsift/store/storetest"
)

// The bbolt store passes the conformance suite the PostgreSQL store
// (store/postgres) passes too.
func TestConformanceProjects(t *testing.T) {
	storetest.RunProjects(t, func(t *testing.T) storetest.Projects {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceJobs(t *testing.T) {
	storetest.RunJobs(t, func(t *testing.T) storetest.Jobs {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceSubpages(t *testing.T) {
	storetest.RunSubpages(t, func(t *testing.T) storetest.Subpages {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceWebhooks(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) storetest.Webhooks {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceChunks(t *testing.T) {
	storetest.RunChunks(t, func(t *testing.T) storetest.Chunks {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceQuotas(t *testing.T) {
	storetest.RunQuotas(t, func(t *testing.T) storetest.Quotas {
		s, err := bolt.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
