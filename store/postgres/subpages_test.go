package postgres

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/internal/pgtest"
	"github.com/docsift/docsift/store"
)

// Subpages of a database before migration 0012 were found by chunk and
// varience. Migrated, each is found by its document's pages, counts
// toward its owner's budget, reads whole, and goes with its document; two
// of the same pages both stay until then; one whose chunk is gone goes.
func TestSubpagesMigratedToPages(t *testing.T) {
	pg := pgtest.Start(t)
	url := pg.Database(t)
	s := open(t, url)
	d := &store.Document{ProjectID: "prj_a", OwnerID: "cus_a", Name: "a.pdf", Format: "pdf"}
	if _, err := s.CreateDocument(d, store.Bytes([]byte("%PDF-")), store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	chunks := []store.Chunk{{Position: 0, Page: 3, Text: "a"}, {Position: 1, Page: 3, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}, {1}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Back to the tables as migration 0004 made them, with three subpages.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	now := time.Now().UTC().Truncate(time.Microsecond)
	first, second, gone := store.NewSubpageID(), store.NewSubpageID(), store.NewSubpageID()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{sql: "DROP TABLE subpage_cuts, subpages"},
		{sql: "DELETE FROM schema_migrations WHERE version >= 12"},
		{sql: `CREATE TABLE subpages (id text PRIMARY KEY, project_id text NOT NULL, owner_id text NOT NULL,
			chunk_id text NOT NULL, varience int NOT NULL, first_page int NOT NULL, last_page int NOT NULL,
			file_name text NOT NULL, created_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, data bytea NOT NULL)`},
		{sql: "CREATE INDEX subpages_expiry ON subpages (expires_at)"},
		{sql: `CREATE TABLE subpage_cuts (chunk_id text NOT NULL, varience int NOT NULL,
			subpage_id text NOT NULL REFERENCES subpages (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
			expires_at timestamptz NOT NULL, PRIMARY KEY (chunk_id, varience))`},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	for _, sp := range []struct {
		id, chunk string
		expires   time.Time
		data      string
	}{
		{first, chunks[0].ID, now.Add(time.Hour), "%PDF-first"},
		{second, chunks[1].ID, now.Add(2 * time.Hour), "%PDF-second"},
		{gone, "chk_gone-0001", now.Add(time.Hour), "%PDF-gone"},
	} {
		if _, err := conn.Exec(ctx, `INSERT INTO subpages VALUES ($1, 'prj_a', 'cus_a', $2, 1, 2, 4, 'a-pages-2-4.pdf', $3, $4, $5)`,
			sp.id, sp.chunk, now, sp.expires, []byte(sp.data)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO subpage_cuts VALUES ($1, 1, $2, $3)", sp.chunk, sp.id, sp.expires); err != nil {
			t.Fatal(err)
		}
	}

	s = open(t, url)
	sp, err := s.SubpageFor(d.ID, 2, 4)
	if err != nil || sp.ID != second || sp.Size != int64(len("%PDF-second")) {
		t.Fatalf("SubpageFor(pages 2-4) = %+v, %v; want %s, the later to expire", sp, err, second)
	}
	f, err := s.OpenSubpage(first)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "%PDF-first" {
		t.Fatalf("the other subpage of pages 2-4 = %q, %v", data, err)
	}
	if u, err := s.SubpageUsage("prj_a", "cus_a"); err != nil || u.ProjectSubpages != 2 || u.OwnerBytes != int64(len("%PDF-first%PDF-second")) {
		t.Fatalf("usage = %+v, %v; want both subpages", u, err)
	}
	if _, err := s.Subpage(gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the subpage of a chunk gone: err = %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteDocument(d.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first, second} {
		if _, err := s.Subpage(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("subpage %s of a deleted document: err = %v", id, err)
		}
	}
	// New PDFs are stored uncompressed, so that a piece reads alone.
	var storage string
	if err := conn.QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'subpages'::regclass AND attname = 'data'`).Scan(&storage); err != nil || !strings.EqualFold(storage, "e") {
		t.Errorf("subpages.data storage = %q, %v; want e (external, uncompressed)", storage, err)
	}
}
