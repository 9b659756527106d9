package admin

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/docsift/docsift/store/bolt"
)

// A backup is a tar archive: the database (bbolt's consistent copy), the
// original files it refers to, the index snapshots, the subpages and last MANIFEST.json
// with each file's size and SHA-256. Tar because every system can list and
// unpack it; the manifest last because the sums are known only once the
// files are written, and a backup is written as a stream.
const (
	manifestName    = "MANIFEST.json"
	backupFormat    = 1
	indexDirName    = "index"    // index snapshots in the data dir: caches, rebuilt from the database when absent
	subpagesDirName = "subpages" // subpage PDFs in the data dir, as the store keeps them
	maxBackupFile   = 1 << 40    // no entry of a real backup comes near it
)

// Manifest describes a backup.
type Manifest struct {
	Format    int            `json:"format"`
	CreatedAt time.Time      `json:"created_at"`
	Files     []ManifestFile `json:"files"`
}

// ManifestFile is one file of a backup.
type ManifestFile struct {
	Name   string `json:"name"` // relative to the data dir, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Bytes is the total size of the files.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// WriteBackup writes a hot backup of the data dir st keeps to w. Uploads
// and queries go on meanwhile; the backup holds the store as of one moment,
// and index snapshots as they are (a restored server catches them up with
// the database, as it does after any restart).
func WriteBackup(w io.Writer, st *bolt.Store, dataDir string) (*Manifest, error) {
	// A copy of a damaged database holds the damage: better no backup
	// than one that replaces a sound one in its rotation.
	if _, err := st.Inspect(); errors.Is(err, bolt.ErrDamaged) {
		return nil, fmt.Errorf("%w: no backup was written, as it would hold the damage; keep the backups you have, and see docsift doctor", err)
	}
	tw := tar.NewWriter(w)
	m := &Manifest{Format: backupFormat, CreatedAt: time.Now().UTC()}
	add := func(it bolt.BackupItem) error {
		h := sha256.New()
		hdr := &tar.Header{Name: it.Name, Size: it.Size, Mode: 0o600, ModTime: m.CreatedAt, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		n, err := io.Copy(tw, io.TeeReader(it.Body, h))
		if err != nil {
			return fmt.Errorf("%s: %w", it.Name, err)
		}
		if n != it.Size {
			return fmt.Errorf("%s: %d bytes read, %d expected", it.Name, n, it.Size)
		}
		m.Files = append(m.Files, ManifestFile{Name: it.Name, Size: it.Size, SHA256: hex.EncodeToString(h.Sum(nil))})
		return nil
	}
	if err := st.Backup(add); err != nil {
		return nil, fmt.Errorf("admin: backup: %w", err)
	}
	if err := addFiles(add, dataDir, indexDirName); err != nil {
		return nil, fmt.Errorf("admin: backup: index snapshots: %w", err)
	}
	// The subpages the copy names, so that their URLs work after a
	// restore: listed after the copy, they are there but for those swept
	// or deleted since.
	if err := addFiles(add, dataDir, subpagesDirName); err != nil {
		return nil, fmt.Errorf("admin: backup: subpages: %w", err)
	}
	body, _ := json.MarshalIndent(m, "", "  ")
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Size: int64(len(body)), Mode: 0o600, ModTime: m.CreatedAt, Typeflag: tar.TypeReg}); err != nil {
		return nil, fmt.Errorf("admin: backup: %w", err)
	}
	if _, err := tw.Write(body); err != nil {
		return nil, fmt.Errorf("admin: backup: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("admin: backup: %w", err)
	}
	return m, nil
}

// addFiles adds the finished files of the data dir's folder name: index
// snapshots or subpages. Both are written whole and renamed into place,
// so an open file is a whole one; temporary files are left out.
func addFiles(add func(bolt.BackupItem) error, dataDir, name string) error {
	dir := filepath.Join(dataDir, name)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.Contains(e.Name(), ".tmp") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		err := bolt.AddFile(add, name+"/"+e.Name(), filepath.Join(dir, e.Name()))
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // one removed since the listing is no loss
			return err
		}
	}
	return nil
}

// checkRestored checks that the database unpacked in dir opens and its
// records read without damage. Data an older docsift wrote is checked on
// a copy, which opening upgrades, so that what is restored stays as that
// version wrote it: restoring is how one goes back to it.
func checkRestored(dir string) error {
	st, err := bolt.OpenAsIs(dir)
	if errors.Is(err, bolt.ErrOlderData) {
		scratch, mkErr := os.MkdirTemp(dir, ".check-")
		if mkErr != nil {
			return fmt.Errorf("admin: restore: %w", mkErr)
		}
		defer os.RemoveAll(scratch)
		if cpErr := copyFile(filepath.Join(dir, bolt.DBFileName), filepath.Join(scratch, bolt.DBFileName)); cpErr != nil {
			return fmt.Errorf("admin: restore: %w", cpErr)
		}
		st, err = bolt.Open(scratch)
	}
	if err != nil {
		return fmt.Errorf("restore: the backup's database does not open: %w", err)
	}
	_, inspectErr := st.Inspect()
	st.Close()
	if errors.Is(inspectErr, bolt.ErrDamaged) {
		return fmt.Errorf("restore: the backup's database is damaged (%v): restore an older backup", inspectErr)
	}
	return nil
}

// copyFile copies the file src to dst, which it creates.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Restore unpacks a backup into dataDir, which must be empty or absent
// unless force is set; then its contents are moved aside, to the returned
// path, not deleted. Nothing in dataDir changes until every file has been
// unpacked beside it and checked against the manifest, and the database
// opens.
func Restore(r io.Reader, dataDir string, force bool) (m *Manifest, movedAside string, err error) {
	if _, err := Dial(dataDir); err == nil {
		return nil, "", fmt.Errorf("a docsift server is running on %s: stop it before restoring into its data directory", dataDir)
	}
	empty, err := isEmptyDir(dataDir)
	if err != nil {
		return nil, "", fmt.Errorf("admin: restore: %w", err)
	}
	if !empty && !force {
		return nil, "", fmt.Errorf("%s is not empty: restore into an empty or new directory, or pass --force to move its contents aside and restore in their place", dataDir)
	}
	parent := filepath.Dir(filepath.Clean(dataDir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, "", fmt.Errorf("admin: restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dataDir)+".restoring-")
	if err != nil {
		return nil, "", fmt.Errorf("admin: restore: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if m, err = unpack(r, tmp); err != nil {
		return nil, "", fmt.Errorf("restore: %w", err)
	}
	if err := checkRestored(tmp); err != nil {
		return nil, "", err
	}
	if !empty {
		movedAside = fmt.Sprintf("%s.before-restore-%s", filepath.Clean(dataDir), time.Now().UTC().Format("20060102-150405"))
		// Two restores in one second: the second's contents go beside.
		for n, base := 2, movedAside; ; n++ {
			if _, err := os.Lstat(movedAside); errors.Is(err, fs.ErrNotExist) {
				break
			}
			movedAside = fmt.Sprintf("%s-%d", base, n)
		}
		if err = os.Rename(dataDir, movedAside); err != nil {
			return nil, "", fmt.Errorf("admin: restore: %w", err)
		}
	} else if err = os.Remove(dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("admin: restore: %w", err)
	}
	if err = os.Rename(tmp, dataDir); err != nil {
		return nil, movedAside, fmt.Errorf("admin: restore: %w", err)
	}
	return m, movedAside, syncDir(parent)
}

// unpack writes the archive's files under dir and checks them against its
// manifest: every file listed, of its size and SHA-256, and nothing else.
func unpack(r io.Reader, dir string) (*Manifest, error) {
	tr := tar.NewReader(r)
	got := map[string]ManifestFile{}
	var m *Manifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// archive/tar names itself in its errors ("archive/tar: invalid
			// tar header"): the user needs what it found, not where.
			return nil, fmt.Errorf("the file is not a docsift backup, or is damaged (%s)", strings.TrimPrefix(err.Error(), "archive/tar: "))
		}
		if m != nil {
			return nil, fmt.Errorf("the backup has %s after its manifest: it is not one docsift wrote", hdr.Name)
		}
		if hdr.Name == manifestName {
			m = &Manifest{}
			if err := json.NewDecoder(io.LimitReader(tr, 64<<20)).Decode(m); err != nil {
				return nil, fmt.Errorf("the backup's manifest is damaged: %w", err)
			}
			continue
		}
		name, err := entryName(hdr)
		if err != nil {
			return nil, err
		}
		f, err := writeEntry(tr, dir, name)
		if err != nil {
			return nil, err
		}
		got[name] = f
	}
	if m == nil {
		return nil, errors.New("the backup has no manifest: it is incomplete (was it cut off while being written?)")
	}
	if m.Format != backupFormat {
		return nil, fmt.Errorf("the backup is in format %d; this docsift reads format %d", m.Format, backupFormat)
	}
	for _, want := range m.Files {
		f, ok := got[want.Name]
		switch {
		case !ok:
			return nil, fmt.Errorf("the backup lacks %s, which its manifest lists", want.Name)
		case f != want:
			return nil, fmt.Errorf("%s does not match the manifest (size %d, sha256 %s; the manifest says %d, %s): the backup is damaged", want.Name, f.Size, f.SHA256, want.Size, want.SHA256)
		}
		delete(got, want.Name)
	}
	for name := range got {
		return nil, fmt.Errorf("the backup holds %s, which its manifest does not list", name)
	}
	return m, nil
}

// entryName checks that an archive entry is a plain file inside the data
// dir and returns its clean, slash-separated name.
func entryName(hdr *tar.Header) (string, error) {
	name := path.Clean(hdr.Name)
	if hdr.Typeflag != tar.TypeReg || path.IsAbs(name) || name == "." || strings.HasPrefix(name, "../") || name == ".." {
		return "", fmt.Errorf("the backup holds %q, which is not a file inside a data directory", hdr.Name)
	}
	if hdr.Size < 0 || hdr.Size > maxBackupFile {
		return "", fmt.Errorf("the backup's entry %s claims %d bytes", name, hdr.Size)
	}
	return name, nil
}

func writeEntry(r io.Reader, dir, name string) (ManifestFile, error) {
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return ManifestFile{}, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ManifestFile{}, fmt.Errorf("admin: restore %s: %w", name, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return ManifestFile{}, fmt.Errorf("the backup is cut short: it ends inside %s", name)
	}
	if err != nil {
		return ManifestFile{}, fmt.Errorf("admin: restore %s: %w", name, err)
	}
	return ManifestFile{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func isEmptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return len(entries) == 0, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// backupHandler streams a backup of the running server's data. A failure
// after the first byte can no longer change the status: it goes in the
// Docsift-Error trailer, and the archive lacks its manifest, so it cannot
// be restored by mistake.
func backupHandler(st *bolt.Store, dataDir string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-tar")
		w.Header().Set("Trailer", backupErrorTrailer)
		if _, err := WriteBackup(w, st, dataDir); err != nil {
			w.Header().Set(backupErrorTrailer, err.Error())
		}
	}
}

const backupErrorTrailer = "Docsift-Error"

// Backup asks the running server for a backup and writes it to w.
func (c *Client) Backup(ctx context.Context, w io.Writer) (*Manifest, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docsift/backup", nil)
	if err != nil {
		return nil, err
	}
	client := *c.http
	client.Timeout = 0 // a backup takes as long as its data
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin: socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e errorReply
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return nil, errors.New(e.Error)
		}
		return nil, fmt.Errorf("admin: backup: the server answered %s", resp.Status)
	}
	m, err := copyBackup(w, resp.Body)
	if msg := resp.Trailer.Get(backupErrorTrailer); msg != "" {
		return nil, errors.New(msg)
	}
	return m, err
}

// copyBackup copies an archive from r to w and returns its manifest, read
// on the way.
func copyBackup(w io.Writer, r io.Reader) (*Manifest, error) {
	tr := tar.NewReader(io.TeeReader(r, w))
	var m *Manifest
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("admin: backup: %w", err)
		}
		if hdr.Name == manifestName {
			m = &Manifest{}
			if err := json.NewDecoder(tr).Decode(m); err != nil {
				return nil, fmt.Errorf("admin: backup: manifest: %w", err)
			}
		}
	}
	// The tar reader stops at the end-of-archive marker; what follows is
	// padding, which belongs in the file too.
	if _, err := io.Copy(w, r); err != nil {
		return nil, fmt.Errorf("admin: backup: %w", err)
	}
	if m == nil {
		return nil, errors.New("admin: backup: the server's archive ended without a manifest")
	}
	return m, nil
}
