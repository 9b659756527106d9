package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// memory scrapes the child's metrics: the index's bytes by part (in
// total, not yet per chunk) and the Go heap in use.
func (s *childServer) memory(ctx context.Context) ([]MemoryPart, float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metrics, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: scale: %w", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: scale: read metrics: %w", err)
	}
	defer resp.Body.Close()
	var parts []MemoryPart
	at := map[string]int{}
	var heap float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			heap, _ = strconv.ParseFloat(v, 64)
			continue
		}
		m := indexBytesLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[1], ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		bytes, _ := strconv.ParseFloat(m[2], 64)
		part := labels["part"]
		i, ok := at[part]
		if !ok {
			i = len(parts)
			at[part] = i
			parts = append(parts, MemoryPart{Part: part})
		}
		if labels["memory"] == "mapped" {
			parts[i].MappedPerChunk += bytes
		} else {
			parts[i].HeapPerChunk += bytes
		}
	}
	// Largest first: the order to read them in.
	slices.SortFunc(parts, func(a, b MemoryPart) int {
		return cmp.Compare(b.HeapPerChunk+b.MappedPerChunk, a.HeapPerChunk+a.MappedPerChunk)
	})
	return parts, heap, sc.Err()
}

var indexBytesLine = regexp.MustCompile(`^docsift_index_bytes\{([^}]*)\} (\S+)$`)
