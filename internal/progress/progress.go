// Package progress draws progress bars for the command line.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar draws a one-line progress bar on a terminal and stays silent
// elsewhere (a log file or a pipe gets no carriage-return noise).
type Bar struct {
	w     io.Writer
	label string
	total int
	last  time.Time
}

// New returns a bar on w if w is a terminal, else a silent one.
func New(w io.Writer, label string, total int) *Bar {
	if f, ok := w.(*os.File); !ok || !isTerminal(f) {
		w = nil
	}
	return &Bar{w: w, label: label, total: total}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Set shows done of total, at most ten times a second.
func (p *Bar) Set(done int) {
	if p == nil || p.w == nil || (time.Since(p.last) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.last = time.Now()
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = float64(done) / float64(p.total)
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d", p.label, strings.Repeat("=", n), strings.Repeat(" ", width-n), done, p.total)
}

// Done ends the bar's line.
func (p *Bar) Done() {
	if p != nil && p.w != nil {
		p.Set(p.total)
		fmt.Fprintln(p.w)
	}
}
