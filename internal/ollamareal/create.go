package ollamareal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ollama/ollama/api"
)

// createModel generates m into a temporary directory and creates it in the
// server behind c: each file is uploaded as a blob, then /api/create gets
// the files by relative path. The `ollama create` CLI is not used because
// it uploads files by base name, and the sentence-transformers layout has
// two config.json files (the model's and 1_Pooling's).
func createModel(ctx context.Context, c *api.Client, m Model) error {
	dir, err := os.MkdirTemp("", "docsift-model-")
	if err != nil {
		return fmt.Errorf("ollamareal: create %s: %w", m.Name, err)
	}
	defer os.RemoveAll(dir)
	if err := m.write(dir); err != nil {
		return fmt.Errorf("ollamareal: create %s: %w", m.Name, err)
	}

	files := make(map[string]string)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		digest, err := uploadBlob(ctx, c, path)
		if err != nil {
			return fmt.Errorf("upload %s: %w", rel, err)
		}
		files[filepath.ToSlash(rel)] = digest
		return nil
	})
	if err != nil {
		return fmt.Errorf("ollamareal: create %s: %w", m.Name, err)
	}

	stream := false
	req := &api.CreateRequest{
		Model:      m.Name,
		Files:      files,
		Template:   m.template,
		Parameters: m.parameters,
		Stream:     &stream,
	}
	var last string
	if err := c.Create(ctx, req, func(p api.ProgressResponse) error {
		last = p.Status
		return nil
	}); err != nil {
		return fmt.Errorf("ollamareal: create %s: %w", m.Name, err)
	}
	if last != "success" {
		return fmt.Errorf("ollamareal: create %s: ended with status %q, not success", m.Name, last)
	}
	return nil
}

// uploadBlob sends the file at path to /api/blobs/sha256:<digest> and
// returns the digest.
func uploadBlob(ctx context.Context, c *api.Client, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := c.CreateBlob(ctx, digest, f); err != nil {
		return "", err
	}
	return digest, nil
}
