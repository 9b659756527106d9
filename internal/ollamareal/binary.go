package ollamareal

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// OllamaVersion is the module version scripts/ollama-build.sh builds; it
	// must match go.mod, so that the client types docsift compiles against
	// are the server's own.
	OllamaVersion = "0.17.4"

	// EnvBinary names a prebuilt `ollama` binary to use instead of the cache.
	EnvBinary = "DOCSIFT_OLLAMA_BIN"

	// EnvRequire, set to 1, turns "no binary" from a skip into a failure, so
	// that a run meant to exercise the real server cannot pass without it.
	EnvRequire = "DOCSIFT_REQUIRE_OLLAMA"

	// EnvCache is the cache root the build script and this package share.
	EnvCache = "DOCSIFT_CACHE"
)

// CacheDir is where scripts/ollama-build.sh puts its build for this CPU:
// $DOCSIFT_CACHE (default ~/.cache/docsift) /ollama-v<version>-<cpu key>.
// The binary is compiled with -march=native, so a build made on another CPU
// may die on an illegal instruction; keying the directory by the CPU's
// feature flags makes such a machine build its own.
func CacheDir() (string, error) {
	root := os.Getenv(EnvCache)
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("ollamareal: no cache dir: %w", err)
		}
		root = filepath.Join(home, ".cache", "docsift")
	}
	return filepath.Join(root, "ollama-v"+OllamaVersion+"-"+cpuKey()), nil
}

// cpuKey must agree with cpu_key in scripts/ollama-build.sh: the first 12
// hex digits of the SHA-256 of the value of the first "flags" line of
// /proc/cpuinfo, trimmed; "generic" when there is none.
func cpuKey() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "generic"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		_, value, ok := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		if !ok || value == "" {
			break
		}
		sum := sha256.Sum256([]byte(value))
		return hex.EncodeToString(sum[:])[:12]
	}
	return "generic"
}

// errNoBinary says where the binary was looked for and how to get one.
var errNoBinary = errors.New("no ollama binary")

// FindBinary returns the server binary: $DOCSIFT_OLLAMA_BIN when set (it
// must exist), else the build script's cache path when it exists.
func FindBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("ollamareal: %s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "ollama")
	if err := executable(p); err != nil {
		return "", fmt.Errorf("ollamareal: %w at %s (run `make test-ollama` or scripts/ollama-build.sh to build it, or set %s)", errNoBinary, p, EnvBinary)
	}
	return p, nil
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: not an executable file", fs.ErrInvalid)
	}
	return nil
}
