package drive

import (
	"errors"
	"testing"
)

// TestImportable: what can be imported is judged from the type and the
// reported size, before anything is downloaded.
func TestImportable(t *testing.T) {
	var unsupported *UnsupportedError
	var tooLarge *TooLargeError
	for _, c := range []struct {
		name string
		f    File
		ok   func(error) bool
	}{
		{"PDF", File{MimeType: "application/pdf", Size: 10}, func(err error) bool { return err == nil }},
		{"text of any kind", File{MimeType: "text/x-go", Size: 10}, func(err error) bool { return err == nil }},
		{"Google Doc, exported", File{MimeType: DocumentType, Size: -1}, func(err error) bool { return err == nil }},
		{"folder", File{MimeType: FolderType}, func(err error) bool { return errors.Is(err, ErrFolder) }},
		{"shortcut", File{MimeType: ShortcutType}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"Google Form", File{MimeType: "application/vnd.google-apps.form"}, func(err error) bool {
			return errors.As(err, &unsupported) && unsupported.Reason == "Google Form files cannot be imported; Google Docs, Sheets and Slides can"
		}},
		{"legacy Word", File{MimeType: "application/msword", Size: 10}, func(err error) bool { return errors.As(err, &unsupported) }},
		{"over the limit", File{MimeType: "application/pdf", Size: 101}, func(err error) bool {
			return errors.As(err, &tooLarge) && tooLarge.Size == 101 && tooLarge.Limit == 100
		}},
	} {
		if err := c.f.Importable(100); !c.ok(err) {
			t.Errorf("%s: Importable = %v", c.name, err)
		}
	}
}
