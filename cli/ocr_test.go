package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesMissingOCRLanguage checks that `serve` stops at start when
// asked for an OCR language whose pack is not installed, naming the Debian
// package, or for a code that is no language, from the flag or its
// environment twin, before it touches the data directory.
func TestServeRefusesMissingOCRLanguage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  string
		want string
		tess bool // needs the real Tesseract
	}{
		{"pack not installed", []string{"--ocr-languages", "eng+qqq"}, "", `OCR language "qqq" is not installed: install the Debian package tesseract-ocr-qqq`, true},
		{"pack not installed, from the environment", nil, "eng+qqq", "tesseract-ocr-qqq", true},
		{"not a language code", []string{"--ocr-languages", "eng,deu"}, "", "--ocr-languages", false},
	}
	_, lookErr := exec.LookPath("tesseract")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.tess && lookErr != nil {
				if os.Getenv("CI") != "" {
					t.Fatal("tesseract not installed; CI must run the OCR tests (.ci/run installs it)")
				}
				t.Skip("tesseract not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-eng); skipping")
			}
			if c.env != "" {
				t.Setenv("DOCSIFT_OCR_LANGUAGES", c.env)
			}
			data := filepath.Join(t.TempDir(), "data")
			_, err := runCLI(t, append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("serve = %v, want an error saying %q", err, c.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("serve created the data directory before refusing to start (%v)", err)
			}
		})
	}
}
