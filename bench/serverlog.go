package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// indexSaves sums the sizes of the index saves a server logged past
// offset from in its log ("index saved" lines, mb=), and how long writers
// waited for them (held_ms=; a server that does not log it held them for
// the whole save, ms=).
func indexSaves(log string, from int64) (bytes int64, heldSeconds float64) {
	b, err := logSince(log, from)
	if err != nil {
		return 0, 0
	}
	var mbs, ms float64
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, `msg="index saved"`) {
			continue
		}
		mb, _ := lineValue(line, "mb")
		held, ok := lineValue(line, "held_ms")
		if !ok {
			held, _ = lineValue(line, "ms")
		}
		mbs, ms = mbs+mb, ms+held
	}
	return int64(mbs * (1 << 20)), ms / 1000
}

// waitLogged waits until a server's log holds line past offset from.
func waitLogged(ctx context.Context, log string, from int64, line string) error {
	deadline := time.Now().Add(scaleStartWait)
	for {
		b, err := logSince(log, from)
		if err == nil && bytes.Contains(b, []byte(line)) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench: scale: the server did not log %s", line)
		}
		time.Sleep(scalePoll)
	}
}

// logSince returns what a log holds past offset from: a million-chunk
// ingest logs about a gigabyte before it.
func logSince(log string, from int64) ([]byte, error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// logValues returns the numbers after key= in the lines of a log that
// keep accepts.
func logValues(log, key string, keep func(line string) bool) []float64 {
	var out []float64
	for line := range strings.Lines(log) {
		if !keep(line) {
			continue
		}
		if x, ok := lineValue(line, key); ok {
			out = append(out, x)
		}
	}
	return out
}

// lineValue is the number after key= in a log line, if it has one.
func lineValue(line, key string) (float64, bool) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				return x, true
			}
		}
	}
	return 0, false
}

// queryTimes returns the times (ms=) of the queries answered 200 that a
// server logged past offset from in its log, once n are there: a server
// writes a request's line just after its answer, which the client may
// have read first. It returns what is there if n never are (a line
// lost to a full disk must not hang the benchmark).
func queryTimes(ctx context.Context, log string, from int64, n int) []float64 {
	answered := func(line string) bool {
		return strings.Contains(line, "msg=request ") && strings.Contains(line, "route=/query/") && strings.Contains(line, " status=200 ")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := logSince(log, from)
		if err != nil {
			return nil
		}
		took := logValues(string(b), "ms", answered)
		if len(took) >= n || time.Now().After(deadline) || ctx.Err() != nil {
			return took
		}
		time.Sleep(scalePoll)
	}
}
