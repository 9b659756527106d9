package bolt

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// TestDecodeReadsWhatEncodingJSONWrites: records are written by
// encoding/json and read by decode (segmentio's decoder). Records of every
// shape of field the store keeps, with texts of any bytes (invalid UTF-8,
// control characters, escapes, lone surrogates' encodings), read back as
// encoding/json reads them, and hold nothing of the bytes they came from.
func TestDecodeReadsWhatEncodingJSONWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\n", "\t", "\x00", "\x1f", "\"", "\\", "/", "<", "&", "\u2028",
		"é", "日本", "😀", "\xff", "\xed\xa0\x80", "\xc3", "{", "]", ","}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	when := func() time.Time {
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		return time.Unix(rng.Int64N(1<<34), rng.Int64N(1e9)).UTC()
	}
	check := func(v, fresh1, fresh2 any) {
		t.Helper()
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		errStd := json.Unmarshal(data, fresh1)
		errOurs := decode(data, fresh2)
		if (errStd == nil) != (errOurs == nil) || !reflect.DeepEqual(fresh1, fresh2) {
			t.Fatalf("%s:\nencoding/json read %+v (%v)\ndecode read %+v (%v)", data, fresh1, errStd, fresh2, errOurs)
		}
		// A record's bytes are bbolt's, valid only in their transaction:
		// what decode read must not point into them.
		for i := range data {
			data[i] = 'x'
		}
		if !reflect.DeepEqual(fresh1, fresh2) {
			t.Fatalf("decode's record changed with the bytes it was read from: %+v", fresh2)
		}
	}
	for range 2000 {
		c := store.Chunk{ID: text(), Seq: rng.Uint64(), DocumentID: text(), OwnerID: text(), Position: rng.IntN(1 << 20),
			Page: rng.IntN(3), Start: -rng.IntN(5), End: rng.IntN(1 << 30), Text: text(), TextHash: text()}
		for range rng.IntN(3) {
			c.Sections = append(c.Sections, text())
		}
		check(&c, &store.Chunk{}, &store.Chunk{})
		d := store.Document{ID: text(), Name: text(), Size: rng.Int64(), CreatedAt: when(), UpdatedAt: when(), Seq: rng.Uint64()}
		if rng.IntN(2) == 0 {
			d.Metadata = map[string]string{text(): text(), text(): text()}
		}
		check(&d, &store.Document{}, &store.Document{})
		j := store.Job{ID: text(), Status: store.StatusProcessing, Error: text(), Chunks: rng.IntN(1000), SearchableAt: when(),
			NotBefore: when(), CreatedAt: when(), UpdatedAt: when()}
		if rng.IntN(2) == 0 {
			j.QueueKey = []byte(text())
		}
		if rng.IntN(2) == 0 {
			j.Progress = &store.JobProgress{}
		}
		check(&j, &store.Job{}, &store.Job{})
	}
}
