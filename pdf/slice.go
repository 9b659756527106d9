package pdf

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// Slicing writes a new PDF, which MuPDF through go-fitz cannot do, so it
// uses pdfcpu. pdfcpu by default reads and may create a configuration
// directory in the user's home; docsift keeps all state in its data
// directory, so that is switched off once before first use.
var disablePdfcpuConfig sync.Once

// Slice returns a new PDF holding pages first..last of data (1-based,
// inclusive, in their original order). The range is clamped to the
// document, as the subpage operation requires; a range that selects no page
// at all wraps ErrPageRange. Only PDFs can be sliced: other formats wrap
// ErrUnsupported.
func Slice(data []byte, first, last int) ([]byte, error) {
	f, err := Detect(data)
	if err != nil {
		return nil, err
	}
	if f != FormatPDF {
		return nil, fmt.Errorf("pdf: slice: only PDFs can be sliced, not %s: %w", f, ErrUnsupported)
	}
	disablePdfcpuConfig.Do(api.DisableConfigDir)
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed

	n, err := countFitz(f, data)
	if err != nil {
		return nil, fmt.Errorf("pdf: slice: %w", err)
	}
	first, last = max(first, 1), min(last, n)
	if first > last {
		return nil, fmt.Errorf("pdf: slice pages %d-%d of %d: %w", first, last, n, ErrPageRange)
	}
	sel := []string{strconv.Itoa(first) + "-" + strconv.Itoa(last)}
	var out bytes.Buffer
	if err := trim(data[max(pdfHeaderOffset(data, data), 0):], &out, sel, conf); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// trim runs pdfcpu's Trim under recover and maps its errors.
func trim(data []byte, out *bytes.Buffer, sel []string, conf *model.Configuration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pdf: slice failed: %v: %w", r, ErrCorrupt)
		}
	}()
	if err := api.Trim(bytes.NewReader(data), out, sel, conf); err != nil {
		return fmt.Errorf("pdf: slice: %v: %w", err, ErrCorrupt)
	}
	return nil
}
