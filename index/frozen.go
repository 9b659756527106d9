package index

import (
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// mapping is a snapshot file mapped into memory, privately: pages and a
// lexicon read in place from it (see mapped.go) point into its bytes, and
// each holds the mapping, which is unmapped once none of them is reachable.
// Private means copy-on-write: the few words a writer changes in a mapped
// page (a deletion epoch, a graph link list) become anonymous memory, the
// rest stays the page cache's, shared with the file and never written back
// to it.
type mapping struct {
	b []byte
	// inHeap says b was read into the heap rather than mapped (see
	// openMapping): there is no page cache to ask ahead of reading.
	inHeap bool
}

// openMapping maps an open file, or reads it into the heap once budget's
// maps are all held (see SnapshotMaps).
func openMapping(f *os.File, budget *SnapshotMaps) (*mapping, error) {
	if !budget.take() {
		info, err := f.Stat()
		if err != nil {
			return nil, err
		}
		b := make([]byte, info.Size())
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, info.Size()), b); err != nil {
			return nil, err
		}
		return &mapping{b: b, inHeap: true}, nil
	}
	b, unmap, err := mapFile(f)
	if err != nil {
		budget.release()
		return nil, err
	}
	m := &mapping{b: b}
	runtime.AddCleanup(m, func(unmap func()) { unmap(); budget.release() }, unmap)
	return m, nil
}

// SnapshotMaps is a budget of the memory maps snapshots take. A mapped
// snapshot costs the process one memory map, and the kernel allows a
// process vm.max_map_count of them (65,530 by default), past which the Go
// runtime cannot grow its heap and the process dies. A SaaS has an owner
// for every customer: 1,200 owners were 1,285 maps, and a tenant creating
// customers could take the server past the limit, at every start again.
// So the maps held for snapshots are counted, and once the budget's are
// held, further snapshots are read into the heap: they cost their size
// there rather than the page cache's shared pages, which costs memory,
// not the process. Every index of a process shares one (see
// Options.Maps).
type SnapshotMaps struct {
	held  atomic.Int64
	limit int64
}

// NewSnapshotMaps returns a budget of limit maps (serve's
// --max-mapped-snapshots).
func NewSnapshotMaps(limit int) *SnapshotMaps { return &SnapshotMaps{limit: int64(limit)} }

// defaultSnapshotMaps is the budget of the indexes made with no other (see
// Options.Maps): half of what vm.max_map_count leaves beside mapsReserve,
// for the heap's and the libraries' maps and the vector scratch files'
// (and at least a thousand). The kernel's limit is the process's, so its
// default budget is too.
var defaultSnapshotMaps = NewSnapshotMaps(MapBudget(MaxMapCount()))

// take holds a map if the budget has one left.
func (b *SnapshotMaps) take() bool {
	if b.held.Add(1) > b.limit {
		b.held.Add(-1)
		return false
	}
	return true
}

func (b *SnapshotMaps) release() { b.held.Add(-1) }

// castSlice reads n values of T from b, which holds at least n of them at
// an offset aligned for T: the words of a mapped snapshot as Go values.
// Snapshots are little-endian (see littleEndian).
func castSlice[T any](b []byte, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// littleEndian reports whether this machine stores words as snapshots do;
// on one that does not, a version 6 snapshot is refused and the owner
// rebuilt from the store.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// frozenLexicon is the inverted index of the slots a snapshot holds, read
// in place from it: the terms' keys in ascending order, where each term's
// postings end, and the postings, each list in slot order. A search finds
// a term by binary search over the keys, which costs a few cache misses
// per query term and no memory at all per term, where the hash table of a
// live lexicon costs about 40 bytes each (most terms are word pairs that
// occur once).
type frozenLexicon struct {
	src      *mapping
	keys     []uint64
	ends     []uint64 // postings of keys[i]: postings[ends[i-1]:ends[i]]
	postings []posting
}

// find returns the postings of the term with key k, or nil.
func (f *frozenLexicon) find(k termKey) []posting {
	i, ok := searchKeys(f.keys, uint64(k))
	if !ok {
		return nil
	}
	return f.list(i)
}

// interpolationProbes bounds searchKeys' interpolation before it falls
// back to halving: evenly spread keys need four or five probes, and keys
// that are not (a damaged file whose checksum still matched) must not
// cost a probe a key.
const interpolationProbes = 8

// searchKeys is slices.BinarySearch for keys ascending and spread evenly
// over 64 bits, as term keys are (see keyOf): it guesses where k stands
// from its value, between the keys already known to bracket it, which
// takes a few probes where halving takes one per bit of the count. At a
// million chunks the keys are tens of millions of words in mapped pages,
// and each probe of the last twenty or so that halving makes is a miss
// of the cache: the lexical side took 4.5% of a query's time to find its
// terms' postings. Among 32 million keys a look-up took 315–350 ns
// against 645–655 (BenchmarkFrozenFind).
func searchKeys(keys []uint64, k uint64) (int, bool) {
	// Every key before lo is less than k, every key after hi greater.
	lo, hi := 0, len(keys)-1
	for range interpolationProbes {
		if hi-lo < 16 {
			break
		}
		a, b := keys[lo], keys[hi]
		switch {
		case k < a:
			return lo, false
		case k == a:
			return lo, true
		case k > b:
			return hi + 1, false
		case k == b:
			return hi, true
		}
		// a < k < b, so the guess falls strictly between lo and hi.
		h, l := bits.Mul64(k-a, uint64(hi-lo))
		q, _ := bits.Div64(h, l, b-a)
		guess := min(lo+max(int(q), 1), hi-1)
		switch g := keys[guess]; {
		case g == k:
			return guess, true
		case g < k:
			lo = guess + 1
		default:
			hi = guess - 1
		}
	}
	i, ok := slices.BinarySearch(keys[lo:hi+1], k)
	return lo + i, ok
}

// list returns the postings of the i-th term.
func (f *frozenLexicon) list(i int) []posting {
	start := uint64(0)
	if i > 0 {
		start = f.ends[i-1]
	}
	return f.postings[start:f.ends[i]]
}

// readAheadBlock and readAheadWorkers shape readAhead: requests of a few
// megabytes, four in flight.
const (
	readAheadBlock   = 8 << 20
	readAheadWorkers = 4
)

// readAhead has the kernel read b's file into the page cache with several
// requests in flight, ahead of the checksum and the loader's checks, which
// on their own fault a mapping in one readahead window at a time. A disk
// that serves parallel requests far faster than one stream (this machine's
// virtual disk, most SSDs) then reads a snapshot in a fraction of the
// time: with the page cache dropped, a million-chunk owner (a 3.7 GB
// snapshot) answered its first query 6.1-6.5 s after the server started
// without it, 3.4-3.7 s with it; on a warm cache it costs nothing
// measurable. Workers take the blocks in file order, so a reader going
// from the start finds them read. advise asks for one block without
// waiting for it; stop ends the workers early (a load that fails needs
// the rest no more) and waits for them.
func readAhead(b []byte, advise func([]byte) error) (stop func()) {
	var (
		next    atomic.Int64
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	blocks := (len(b) + readAheadBlock - 1) / readAheadBlock
	for range min(readAheadWorkers, blocks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped.Load() {
				i := int(next.Add(1) - 1)
				if i >= blocks {
					return
				}
				advise(b[i*readAheadBlock : min((i+1)*readAheadBlock, len(b))]) // advice: its error costs speed only
			}
		}()
	}
	return func() {
		stopped.Store(true)
		wg.Wait()
	}
}
