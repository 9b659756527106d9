package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/store"
)

// A database from before migration 0013 kept no counters: migrated, each
// project's are filled from its rows, and the quotas count what was
// there.
func TestProjectUsageMigrated(t *testing.T) {
	pg := pgtest.Start(t)
	url := pg.Database(t)
	s := open(t, url)
	p, _, _ := s.CreateProject("acme")
	other, _, _ := s.CreateProject("other")
	for i := range 3 {
		if _, err := s.CreateCustomer(p.ID, fmt.Sprint(i), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	var bytes int64
	for i, content := range []string{"short", strings.Repeat("long ", 300_000), strings.Repeat("long ", 300_000)} {
		d := &store.Document{ProjectID: p.ID, OwnerID: fmt.Sprint("cus_", i%2), Name: "n", Format: "text"}
		if _, err := s.CreateDocument(d, store.Bytes([]byte(content)), store.ProjectLimits{}); err != nil {
			t.Fatal(err)
		}
		bytes += d.Size
	}
	if _, err := s.CreateDocument(&store.Document{ProjectID: other.ID, OwnerID: other.ID, Name: "n", Format: "text"},
		store.Bytes([]byte("another project's")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateSession(store.Session{ProjectID: p.ID, OwnerID: p.ID}, time.Hour, store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"DROP TABLE project_usage",
		"DROP INDEX sessions_project_expiry, sessions_expiry",
		"DELETE FROM schema_migrations WHERE version >= 13",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	s = open(t, url)
	u, err := s.ProjectUsage(p.ID)
	if err != nil || u.Customers != 3 || u.Documents != 3 || u.StoredBytes != bytes || u.Sessions != 1 {
		t.Fatalf("usage after the migration = %+v, %v; want 3 customers, 3 documents of %d bytes, 1 session", u, err, bytes)
	}
	if u, err := s.ProjectUsage(other.ID); err != nil || u.Documents != 1 || u.Customers != 0 {
		t.Fatalf("the other project's usage after the migration = %+v, %v", u, err)
	}
	if _, err := s.CreateCustomer(p.ID, "one too many", store.ProjectLimits{Customers: 3}); !errors.Is(err, store.ErrCustomerQuota) {
		t.Fatalf("a customer over the quota of what was there: %v, want ErrCustomerQuota", err)
	}
	d := &store.Document{ProjectID: p.ID, OwnerID: p.ID, Name: "n", Format: "text"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("x")), store.ProjectLimits{Documents: 3}); !errors.Is(err, store.ErrDocumentQuota) {
		t.Fatalf("a document over the quota of what was there: %v, want ErrDocumentQuota", err)
	}
}
