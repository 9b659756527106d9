package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// Finding statuses, from good to bad.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
	StatusFail = "fail"
)

// Disk space thresholds: below lowDiskFail uploads fail with 507 soon;
// below lowDiskWarn, or lowDiskWarnShare of the file system, it is time to
// make room.
const (
	lowDiskFail      = 100 << 20
	lowDiskWarn      = 1 << 30
	lowDiskWarnShare = 0.05
)

// Finding is one thing doctor checked, and what to do about it.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Doctor checks a data dir: the store's schema and contents, original files
// against the records that refer to them, every owner's index snapshot
// against the store, leftovers of interrupted writes, the kernel's limit
// on memory maps against the owners, the snapshots against the memory
// there is to hold them, and free disk space.
// serverRunning says whether a server holds the dir (the report then comes
// from inside it).
func Doctor(st *bolt.Store, dataDir string, serverRunning bool) []Finding {
	var out []Finding
	add := func(check, status, detail, fix string) {
		out = append(out, Finding{Check: check, Status: status, Detail: detail, Fix: fix})
	}
	in, err := st.Inspect()
	switch {
	case errors.Is(err, fs.ErrPermission):
		add("store", StatusFail, err.Error(), "give the data dir to the user docsift serves as (chown -R)")
		return out
	case errors.Is(err, bolt.ErrDamaged):
		add("store", StatusFail, err.Error(), "restore the data dir from a backup taken before the damage (docsift restore)")
		return out
	case err != nil:
		add("store", StatusFail, err.Error(), "")
		return out
	}
	add("store", StatusOK, fmt.Sprintf("schema %d; %d projects, %d documents, %d chunks, %d owners with chunks",
		in.SchemaVersion, in.Projects, in.Documents, in.Chunks, len(in.Owners)), "")

	switch {
	case len(in.FilesMissing) > 0:
		sort.Strings(in.FilesMissing)
		add("files", StatusFail, fmt.Sprintf("%d original files are missing, e.g. files/%s: subpages and reindexing of their documents fail", len(in.FilesMissing), in.FilesMissing[0]),
			"restore files/ from a backup, or delete and upload those documents again")
	case in.FilesOrphaned > 0:
		add("files", StatusWarn, fmt.Sprintf("%d files no document refers to (left by interrupted uploads or deletes)", in.FilesOrphaned),
			"nothing: they are removed at the next start")
	default:
		add("files", StatusOK, "every original file a document refers to is there, and no other", "")
	}

	pending, processing, failed := in.Jobs[store.StatusPending], in.Jobs[store.StatusProcessing], in.Jobs[store.StatusFailed]
	switch {
	case processing > 0 && !serverRunning:
		add("jobs", StatusWarn, fmt.Sprintf("%d jobs were interrupted while processing; %d pending, %d failed", processing, pending, failed),
			"nothing: they run again at the next start")
	default:
		add("jobs", StatusOK, fmt.Sprintf("%d pending, %d processing, %d succeeded, %d failed", pending, processing, in.Jobs[store.StatusSucceeded], failed), "")
	}

	indexDir := filepath.Join(dataDir, indexDirName)
	out = append(out, checkSnapshots(indexDir, in.Owners)...)
	out = append(out, checkMaps(snapshotCount(indexDir), index.MaxMapCount()))
	available, where := AvailableMemory()
	out = append(out, checkMemory(snapshotBytes(indexDir), available, where))
	return append(out, checkDisk(dataDir))
}

// checkMaps compares the owners' snapshots, a memory map each, with the
// maps a server holds for them at most (index.MapBudget): past it, the
// rest are read into the heap, where their bytes are not the page cache's
// to share. It is never a failure: the budget keeps the process within
// the kernel's limit, whatever the number of owners.
func checkMaps(snapshots, limit int) Finding {
	budget := index.MapBudget(limit)
	if snapshots > budget && limit > 0 {
		return Finding{Check: "memory maps", Status: StatusWarn,
			Detail: fmt.Sprintf("%d owners' snapshots, over the %d memory maps a server holds for them under the kernel's limit of %d (vm.max_map_count); the rest are read into its heap", snapshots, budget, limit),
			Fix:    fmt.Sprintf("to have them all share the page cache instead, raise it: sysctl -w vm.max_map_count=%d, and the same line in /etc/sysctl.d/ to keep it", 2*snapshots+20000)}
	}
	return Finding{Check: "memory maps", Status: StatusOK, Detail: fmt.Sprintf("%d owners' snapshots, within the %d memory maps a server holds for them", snapshots, budget)}
}

// checkSnapshots reads every owner's snapshot. A missing, corrupt or stale
// one is never wrong (the store is the truth), only slow: the owner's index
// is rebuilt or caught up when it loads.
func checkSnapshots(dir string, owners map[string]bolt.Holder) []Finding {
	var out []Finding
	var behind []string
	var temp []string
	seen := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return []Finding{{Check: "index", Status: StatusFail, Detail: err.Error(), Fix: "check the data dir's permissions"}}
	}
	for _, e := range entries {
		name := e.Name()
		owner, isSnapshot := strings.CutSuffix(name, ".idx")
		if !isSnapshot {
			if strings.Contains(name, ".tmp") {
				temp = append(temp, name)
			}
			continue
		}
		seen[owner] = true
		h, known := owners[owner]
		if !known {
			out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%s is the snapshot of an owner with no chunks", name), Fix: "delete index/" + name})
			continue
		}
		x, lastSeq, err := index.ReadSnapshot(filepath.Join(dir, name))
		switch {
		case errors.Is(err, index.ErrOtherVersion):
			out = append(out, Finding{Check: "index", Status: StatusOK, Detail: fmt.Sprintf("%s: %v; it is rebuilt from the store when the owner's index loads", name, err)})
		case err != nil:
			out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%s: %v", name, err),
				Fix: "nothing: it is rebuilt from the store when the owner's index loads (slower, for large owners)"})
		case h.Model != "" && x.Model() != h.Model:
			out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%s holds vectors of %s, the store %s", name, x.Model(), h.Model),
				Fix: "nothing: it is rebuilt from the store when the owner's index loads"})
		case x.SkippedSegment() != nil:
			out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%s: %v", name, x.SkippedSegment()),
				Fix: "nothing: what it held is indexed again from the store when the owner's index loads"})
		case lastSeq < h.LastSeq:
			behind = append(behind, owner)
		}
	}
	var missing []string
	for owner := range owners {
		if !seen[owner] {
			missing = append(missing, owner)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%d owners have no snapshot yet (e.g. %s)", len(missing), missing[0]),
			Fix: "nothing: a running server writes them every few minutes and at shutdown; until then their indexes are built from the store at start"})
	}
	if len(behind) > 0 {
		out = append(out, Finding{Check: "index", Status: StatusOK, Detail: fmt.Sprintf("%d snapshots predate the owner's newest chunks; they are caught up when loaded", len(behind))})
	}
	if len(temp) > 0 {
		out = append(out, Finding{Check: "index", Status: StatusWarn, Detail: fmt.Sprintf("%d temporary files of interrupted snapshots (e.g. %s)", len(temp), temp[0]), Fix: "nothing: they are removed at the next start"})
	}
	if len(out) == 0 || (len(out) == 1 && len(behind) > 0) {
		out = append(out, Finding{Check: "index", Status: StatusOK, Detail: fmt.Sprintf("%d snapshots, each readable and of its owner's model", len(seen))})
	}
	return out
}

func checkDisk(dir string) Finding {
	var fsStat syscall.Statfs_t
	if err := syscall.Statfs(dir, &fsStat); err != nil {
		return Finding{Check: "disk", Status: StatusWarn, Detail: "free space unknown: " + err.Error()}
	}
	free := int64(fsStat.Bavail) * int64(fsStat.Bsize)
	total := int64(fsStat.Blocks) * int64(fsStat.Bsize)
	detail := fmt.Sprintf("%s free of %s", bytesLabel(free), bytesLabel(total))
	switch {
	case free < lowDiskFail:
		return Finding{Check: "disk", Status: StatusFail, Detail: detail, Fix: "make room now: uploads fail with 507 when the disk fills"}
	case free < lowDiskWarn || float64(free) < lowDiskWarnShare*float64(total):
		return Finding{Check: "disk", Status: StatusWarn, Detail: detail, Fix: "make room: uploads fail with 507 when the disk fills"}
	}
	return Finding{Check: "disk", Status: StatusOK, Detail: detail}
}

func bytesLabel(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
