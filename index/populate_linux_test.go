package index

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A snapshot read in place is mapped into the process whole once its
// prefault is done, pages the load's checks never touched included: the
// kernel's count of the mapping's resident pages covers the file.
func TestSnapshotPrefaulted(t *testing.T) {
	const dim = 384
	x := New("m", dim)
	must(t, x.Add(textEntries(1, 3000, dim, "walrus")...))
	path := filepath.Join(t.TempDir(), "x.idx")
	must(t, x.WriteSnapshot(path, 1))
	y, _, err := ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	prefaults.done.Wait()
	m := y.gen.lex.base.src
	if m == nil {
		t.Fatal("the snapshot was not read in place")
	}
	if got := residentBytes(t, m.b); got < len(m.b) {
		t.Errorf("%d of the snapshot's %d bytes are mapped after its prefault", got, len(m.b))
	}
}

// populate maps pages nothing has touched: none are resident before it.
func TestPopulate(t *testing.T) {
	_, b := mappedTestFile(t, 1<<20, nil)
	if got := residentBytes(t, b); got != 0 {
		t.Fatalf("%d bytes resident before populate, want 0", got)
	}
	must(t, populate(b))
	if got := residentBytes(t, b); got != len(b) {
		t.Errorf("%d bytes resident after populate, want %d", got, len(b))
	}
}

// populate maps only what the page cache holds: of a file dropped from
// the cache and then partly read again (without readahead), that part.
func TestPopulateReadsNothing(t *testing.T) {
	f, b := mappedTestFile(t, 4<<20, func(f *os.File) {
		must(t, f.Sync())
		must(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
		must(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM))
	})
	must(t, populate(b))
	if got := residentBytes(t, b); got != 0 {
		t.Fatalf("%d bytes mapped from a file out of the page cache, want 0", got)
	}
	const read = 64 << 10
	if _, err := f.ReadAt(make([]byte, read), 0); err != nil {
		t.Fatal(err)
	}
	must(t, populate(b))
	if got := residentBytes(t, b); got != read {
		t.Errorf("%d bytes mapped once the first %d were read, want those", got, read)
	}
}

// mappedTestFile maps a new file of size bytes, all zero, after prepare (if
// set) has had the open file; both stay open until the test ends.
func mappedTestFile(t *testing.T, size int, prepare func(*os.File)) (*os.File, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(path, make([]byte, size), 0o600))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if prepare != nil {
		prepare(f)
	}
	b, unmap, err := mapFile(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unmap)
	return f, b
}

// residentBytes is the Rss the kernel reports for the mapping that starts
// at b (/proc/self/smaps).
func residentBytes(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	sc := bufio.NewScanner(f)
	found := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, start):
			found = true
		case found && strings.HasPrefix(line, "Rss:"):
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", start)
	return 0
}
