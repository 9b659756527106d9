package pdf

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// zipFormats are the formats MuPDF reads out of a zip archive.
var zipFormats = map[Format]bool{
	FormatEPUB: true, FormatXPS: true, FormatDOCX: true, FormatXLSX: true, FormatPPTX: true,
}

// zipEnd is the zip end-of-central-directory record: its signature, and
// where in it the number of members is.
const (
	zipEndSignature = 0x06054b50
	zipEndSize      = 22
	zipEndCount     = 10
	// zipEndSearch is how far from the end the record may start: its
	// comment may be up to 65,535 bytes long.
	zipEndSearch = zipEndSize + 0xffff
)

// zipMemberCount returns the number of members an archive's directory
// announces, or false when its end record is not found. Reading the
// directory costs memory per member (archive/zip keeps a record of each),
// so the count is checked before the directory is read. An archive of
// more than 65,534 members says so in a zip64 record instead, and 0xffff
// stands for it here: far over maxZipMembers either way.
func zipMemberCount(tail []byte) (int, bool) {
	tail = tail[max(0, len(tail)-zipEndSearch):]
	for i := len(tail) - zipEndSize; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == zipEndSignature {
			return int(binary.LittleEndian.Uint16(tail[i+zipEndCount:])), true
		}
	}
	return 0, false
}

// openZip reads the directory of an archive of size bytes, whose last
// bytes are tail, once its member count is within maxZipMembers.
func openZip(r io.ReaderAt, size int64, tail []byte) (*zip.Reader, error) {
	n, ok := zipMemberCount(tail)
	if !ok {
		return nil, fmt.Errorf("pdf: read zip archive: no directory: %w", ErrCorrupt)
	}
	if n > maxZipMembers {
		return nil, errUnpacksTooLarge(fmt.Sprintf("it holds %d or more files, over the limit of %d", n, maxZipMembers))
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("pdf: read zip archive: %w", ErrCorrupt)
	}
	if len(zr.File) > maxZipMembers { // a directory longer than its end record says
		return nil, errUnpacksTooLarge(fmt.Sprintf("it holds %d files, over the limit of %d", len(zr.File), maxZipMembers))
	}
	return zr, nil
}

// checkUnzipped inflates every member of a zip-based document, keeping
// nothing of what they hold, and refuses one that unpacks past
// maxUnzipped in all or one member past maxZipRatio times its packed size
// (once over zipRatioFloor). Sizes are counted as inflated, not taken from
// the directory, which a bomb may misstate. The worker runs it before
// MuPDF opens the document.
func checkUnzipped(data []byte) error {
	zr, err := openZip(bytes.NewReader(data), int64(len(data)), data)
	if err != nil {
		return err
	}
	buf := make([]byte, 32<<10)
	var total int64
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			// A member archive/zip cannot open (an unknown method)
			// MuPDF cannot either: it is not read at all.
			continue
		}
		limit := min(maxUnzipped-total, max(zipRatioFloor, maxZipRatio*int64(f.CompressedSize64)))
		// A member that fails to inflate part way is MuPDF's to judge
		// (it repairs more than archive/zip reads): what it held so far
		// counts.
		n, _ := io.CopyBuffer(io.Discard, io.LimitReader(rc, limit+1), buf)
		rc.Close()
		total += n
		switch {
		case total > maxUnzipped:
			return errUnpacksTooLarge(fmt.Sprintf("its files unpack to more than %s in all", byteCount(maxUnzipped)))
		case n > limit:
			return errUnpacksTooLarge(fmt.Sprintf("its file %.100q unpacks to more than %d times its packed size", f.Name, maxZipRatio))
		}
	}
	return nil
}
