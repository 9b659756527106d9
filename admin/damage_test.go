package admin_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/store/bolt"
)

// A damaged database (a page bbolt did not write) is said to be damaged
// by doctor, is not backed up, and a backup holding one is not restored:
// bbolt panicked on reading it, in doctor and in the server answering it.
func TestDamagedDatabase(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	for i := range 200 {
		n.upload(t, "prj_dmg", i)
	}
	n.wait(t, n.upload(t, "prj_dmg", 200))
	var sound bytes.Buffer
	if _, err := admin.WriteBackup(&sound, n.store, dir); err != nil {
		t.Fatal(err)
	}
	if err := n.engine.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.store.Close()

	// The documents bucket's root page gets flags no page has.
	file, err := os.ReadFile(filepath.Join(dir, bolt.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	damage(t, file)
	if err := os.WriteFile(filepath.Join(dir, bolt.DBFileName), file, 0o600); err != nil {
		t.Fatal(err)
	}

	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if f := findingsOf(admin.Doctor(st, dir, false), "store"); len(f) != 1 || f[0].Status != admin.StatusFail ||
		!strings.Contains(f[0].Detail, "the database file is damaged") || !strings.Contains(f[0].Fix, "backup taken before the damage") {
		t.Errorf("doctor on a damaged database: %+v", f)
	}
	var out bytes.Buffer
	if _, err := admin.WriteBackup(&out, st, dir); !errors.Is(err, bolt.ErrDamaged) || out.Len() != 0 {
		t.Errorf("a backup of a damaged database: %v, %d bytes written", err, out.Len())
	}

	// The sound backup with its database damaged as above, and its
	// manifest made to agree.
	archive := rewriteDatabase(t, sound.Bytes(), func(db []byte) { damage(t, db) })
	dst := filepath.Join(t.TempDir(), "d")
	if _, _, err := admin.Restore(bytes.NewReader(archive), dst, false); err == nil || !strings.Contains(err.Error(), "the backup's database is damaged") {
		t.Errorf("restoring a backup of a damaged database: %v", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("the refused restore left %s (%v)", dst, err)
	}
}

// damage gives the documents bucket's root page of the database file db
// flags no page has.
func damage(t *testing.T, db []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var offset int64
	bdb.View(func(tx *bbolt.Tx) error {
		offset = int64(tx.Bucket([]byte("documents")).Root())*int64(bdb.Info().PageSize) + 8
		return nil
	})
	bdb.Close()
	if offset == 8 {
		t.Fatal("the documents bucket is inline: upload more")
	}
	copy(db[offset:], []byte{0xde, 0xad})
}

// rewriteDatabase returns archive with change made to its database file,
// and the manifest's checksum of it to match.
func rewriteDatabase(t *testing.T, archive []byte, change func([]byte)) []byte {
	t.Helper()
	type entry struct {
		hdr  *tar.Header
		body []byte
	}
	var entries []entry
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		entries = append(entries, entry{hdr, body})
	}
	var sum string
	for _, e := range entries {
		if e.hdr.Name == bolt.DBFileName {
			change(e.body)
			h := sha256.Sum256(e.body)
			sum = hex.EncodeToString(h[:])
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if e.hdr.Name == "MANIFEST.json" {
			var m admin.Manifest
			if err := json.Unmarshal(e.body, &m); err != nil {
				t.Fatal(err)
			}
			for i := range m.Files {
				if m.Files[i].Name == bolt.DBFileName {
					m.Files[i].SHA256 = sum
				}
			}
			e.body, _ = json.Marshal(m)
			e.hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(e.hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if sum == "" {
		t.Fatalf("no %s in the backup", bolt.DBFileName)
	}
	return buf.Bytes()
}
