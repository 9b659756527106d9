package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this project's import path.
const module = "github.com/docsift/docsift"

// The import rules are written once, in docs/architecture.md's table
// "Import rules", for people; this test reads them from there and holds
// the code to them, so that the document and the code cannot drift
// apart: a package's imports of this project's packages must be among
// those its row names, and every package must have a row.

// importRules reads the table: package → the packages it may import.
func importRules(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := map[string][]string{}
	name := regexp.MustCompile("`([^`]+)`")
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Import rules"
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			pkg := name.FindStringSubmatch(cells[1])
			if pkg == nil {
				continue
			}
			var may []string
			for _, m := range name.FindAllStringSubmatch(cells[2], -1) {
				may = append(may, m[1])
			}
			rules[pkg[1]] = may
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatal(`docs/architecture.md has no table under "## Import rules"`)
	}
	return rules
}

// listedPackage is what `go list -json` says of a package.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// projectPackages lists this project's packages with their imports (not
// their tests'), by name relative to the module ("main" for the root).
func projectPackages(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !ours(p.ImportPath) {
			continue
		}
		var imports []string
		for _, i := range p.Imports {
			if ours(i) {
				imports = append(imports, relative(i))
			}
		}
		pkgs[relative(p.ImportPath)] = imports
	}
	return pkgs
}

func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func relative(path string) string {
	if path == module {
		return "main"
	}
	return strings.TrimPrefix(path, module+"/")
}

func TestImportsFollowTheArchitecture(t *testing.T) {
	rules := importRules(t)
	pkgs := projectPackages(t, "./...")
	for pkg, imports := range pkgs {
		may, ok := rules[pkg]
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md's import rules", pkg)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(may, imp) {
				t.Errorf("%s imports %s, which docs/architecture.md's import rules do not let it", pkg, imp)
			}
		}
	}
	for pkg := range rules {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("docs/architecture.md's import rules name %s, which is not a package", pkg)
		}
	}
}

// testFixture matches the packages that exist for tests only
// (internal/pgtest, internal/ollamatest, internal/testpdf, store/storetest…):
// those whose last path element begins or ends with "test".
var testFixture = regexp.MustCompile(`(^|/)(test[^/]*|[^/]*test)$`)

// The server binary links no test fixture: what `docsift bench` and
// `docsift eval` need of one (a throwaway PostgreSQL) lives in a package of
// its own (internal/pgserver) that the fixture is built on.
func TestBinaryLinksNoTestFixture(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked := 0
	for _, path := range strings.Fields(string(out)) {
		if !ours(path) {
			continue
		}
		linked++
		if pkg := relative(path); testFixture.MatchString(pkg) {
			t.Errorf("the server binary links %s, a package for tests", pkg)
		}
	}
	// The binary's own packages are many: a listing without them would
	// pass whatever it links.
	if linked < 10 {
		t.Fatalf("go list -deps . lists %d of this project's packages:\n%s", linked, out)
	}
}

func TestTestFixturePattern(t *testing.T) {
	for pkg, want := range map[string]bool{
		"internal/pgtest": true, "internal/ollamatest": true, "internal/searxtest": true,
		"internal/drivetest": true, "internal/testpdf": true, "store/storetest": true,
		"internal/pgserver": false, "internal/progress": false, "index": false, "main": false,
		"hostile": false, "internal/ollamareal": false,
	} {
		if got := testFixture.MatchString(pkg); got != want {
			t.Errorf("%s: test fixture %v, want %v", pkg, got, want)
		}
	}
}
