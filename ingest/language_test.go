package ingest

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// upload indexes texts (name → text) for one owner through the upload
// path and returns the engine and the document id of each name.
func upload(t *testing.T, em llm.Embedder, owner string, docs map[string]string) (*Engine, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := startEngine(t, st, dir, em)
	ids := map[string]string{}
	for name, text := range docs {
		job, doc, err := e.Submit(Upload{ProjectID: "prj_p", OwnerID: owner, Name: name, Data: []byte(text)})
		if err != nil {
			t.Fatal(err)
		}
		if j := waitJob(t, e, job.ID); j.Status != store.StatusSucceeded {
			t.Fatalf("%s: job %+v", name, j)
		}
		ids[name] = doc.ID
	}
	return e, ids
}

// firstName returns the name of the document of a query's best chunk.
func firstName(t *testing.T, e *Engine, owner, query string) string {
	t.Helper()
	res, warnings, err := searcher(e).Search(context.Background(), owner, query, 3)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%q: %v, warnings %q", query, err, warnings)
	}
	if len(res) == 0 {
		return ""
	}
	return res[0].DocumentName
}

// TestDocumentsFoundInTheirLanguage uploads documents in German, Arabic,
// Chinese and English to one owner, and asks for each in its own words:
// other inflections than the text's, no accents where the text has them.
func TestDocumentsFoundInTheirLanguage(t *testing.T) {
	e, _ := upload(t, llm.NewBuiltin(), "cus_a", map[string]string{
		"mietrecht.txt": "Ein unbefristeter Mietvertrag kann vom Mieter mit einer Frist von drei Monaten gekündigt werden. " +
			"Die Kündigung muss schriftlich erfolgen und dem Vermieter spätestens am dritten Werktag eines Monats zugehen.",
		"rezepte.txt": "Für ein Sauerteigbrot wird der Teig aus Roggenmehl, Wasser und Salz über Nacht gehen gelassen " +
			"und am nächsten Morgen bei hoher Temperatur gebacken.",
		"riyadh.txt":  "الرياض هي عاصمة المملكة العربية السعودية وأكبر مدنها من حيث عدد السكان، وتقع في وسط شبه الجزيرة العربية.",
		"dates.txt":   "يحتوي التمر على السكريات الطبيعية والألياف والبوتاسيوم، ويعد غذاء مهما في شهر رمضان.",
		"beijing.txt": "北京是中华人民共和国的首都，也是全国的政治和文化中心，拥有故宫、天坛等众多历史古迹。",
		"panda.txt":   "熊猫主要生活在四川、陕西和甘肃的山区，以竹子为主要食物。",
		"kernel.txt": "The kernel schedules processes on the available processors and handles interrupts " +
			"from devices such as disks and network cards.",
	})
	for _, c := range []struct {
		query, want string
		lang        analysis.Lang // the language the index analysed the chunk in
	}{
		{"Mietverträge kündigen", "mietrecht.txt", analysis.German},  // plural, infinitive
		{"Kundigungsfrist Mieter", "mietrecht.txt", analysis.German}, // umlaut left out
		{"Brot backen", "rezepte.txt", analysis.German},
		{"ما هي عاصمة السعودية", "riyadh.txt", analysis.Arabic},
		{"فوائد التمر", "dates.txt", analysis.Arabic},
		{"中国的首都", "beijing.txt", analysis.Chinese},
		{"熊猫吃竹子", "panda.txt", analysis.Chinese},
		{"scheduling a process", "kernel.txt", analysis.English},
	} {
		res, warnings, err := searcher(e).Search(context.Background(), "cus_a", c.query, 3)
		if err != nil || len(warnings) > 0 || len(res) == 0 {
			t.Fatalf("%q: %d results, %v, warnings %q", c.query, len(res), err, warnings)
		}
		if got := res[0].DocumentName; got != c.want {
			t.Errorf("%q: first is %q, want %q", c.query, got, c.want)
		}
		if got := res[0].Lang; got != c.lang {
			t.Errorf("%q: first result says it was analysed in %v, want %v", c.query, got, c.lang)
		}
	}
}

// TestFileFoundByItsName checks that a document's name is searched as a
// field of its own: split on its separators, and worth more than the same
// words in another document's text.
func TestFileFoundByItsName(t *testing.T) {
	e, _ := upload(t, llm.NewBuiltin(), "cus_a", map[string]string{
		"acme-q3-report.pdf":  "Revenue grew in every region during the quarter, led by the new product line.",
		"board-minutes.txt":   "The board discussed the Acme report and asked for the figures of the third quarter.",
		"MeetingNotes_Q4.txt": "Hiring plans, the office move and the budget for next year.",
		"holiday.txt":         "Plans for the summer holiday and the train tickets.",
	})
	for _, c := range []struct{ query, want string }{
		{"acme q3 report", "acme-q3-report.pdf"},
		{"meeting notes q4", "MeetingNotes_Q4.txt"},
	} {
		if got := firstName(t, e, "cus_a", c.query); got != c.want {
			t.Errorf("%q: first is %q, want %q", c.query, got, c.want)
		}
	}
}

// TestTitleIsSearched checks that a document's title (its first line,
// when it reads as a heading) counts as its name does.
func TestTitleIsSearched(t *testing.T) {
	e, _ := upload(t, llm.NewBuiltin(), "cus_a", map[string]string{
		"a.md": "# Backup strategy\n\nCopies go to two disks and one remote site every night.",
		"b.md": "Notes from the meeting.\n\nWe talked about the strategy for the next release and a backup of the wiki.",
	})
	if got := firstName(t, e, "cus_a", "backup strategy"); got != "a.md" {
		t.Errorf("first is %q, want the document titled so", got)
	}
}

// TestCompoundsAndAccents checks the spellings people mix up.
func TestCompoundsAndAccents(t *testing.T) {
	e, _ := upload(t, llm.NewBuiltin(), "cus_a", map[string]string{
		"fs.txt":     "Mount the volume read-only before you copy the files.",
		"mail.txt":   "Send an email to the help desk with the error message.",
		"cv.txt":     "Attach your résumé and a cover letter to the application.",
		"math.txt":   "The temperature fell to −40 degrees at night.",
		"french.txt": "Le préavis de résiliation du bail est de trois mois pour le locataire.",
	})
	for _, c := range []struct{ query, want string }{
		{"readonly volume", "fs.txt"},
		{"read only", "fs.txt"},
		{"e-mail help desk", "mail.txt"},
		{"resume", "cv.txt"},
		{"-40 degrees", "math.txt"},
		{"preavis de resiliation", "french.txt"},
	} {
		if got := firstName(t, e, "cus_a", c.query); got != c.want {
			t.Errorf("%q: first is %q, want %q", c.query, got, c.want)
		}
	}
}

// TestOldAnalyzerOwnerIsReindexed checks an owner indexed before the
// current analysis rules: its snapshot is rebuilt rather than trusted, its
// vectors of the old built-in model are never searched with a query
// embedded by the new one (the search is lexical, and says so), uploads
// wait for the reindex rather than mix models, and `docsift reindex`
// moves it to the current model.
func TestOldAnalyzerOwnerIsReindexed(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := renamed{llm.NewBuiltin(), "builtin-v1"}
	e1 := New(st, old, filepath.Join(dir, "index"), Config{Workers: 1}, quietLog())
	if err := e1.Start(); err != nil {
		t.Fatal(err)
	}
	job, _, err := e1.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "zoo.txt", Data: []byte("The zebras were sleeping standing up.")})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, e1, job.ID); j.Status != store.StatusSucceeded {
		t.Fatalf("job %+v", j)
	}
	e1.Shutdown(context.Background())

	// A snapshot of the old analysis rules: written by this version, then
	// marked as another's, as one from before the upgrade reads.
	snap := filepath.Join(dir, "index", "cus_a.idx")
	markSnapshotOfOtherRules(t, snap)

	e2 := startEngine(t, st, dir, llm.NewBuiltin())
	x, err := e2.indexes.Get("cus_a")
	if err != nil || x.Len() != 1 || x.Model() != "builtin-v1" {
		t.Fatalf("index of the old owner: %v, %v", x, err)
	}
	res, warnings, err := searcher(e2).Search(context.Background(), "cus_a", "zebra sleep", 3)
	if err != nil || len(res) != 1 {
		t.Fatalf("search before reindex = %v, %v", res, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "builtin-v1") || !strings.Contains(warnings[0], "docsift reindex") {
		t.Fatalf("warnings = %q, want one naming the old model and the way out", warnings)
	}
	job2, _, _ := e2.Submit(Upload{ProjectID: "prj_p", OwnerID: "cus_a", Name: "b.txt", Data: []byte("Giraffes have long necks.")})
	if j := waitJob(t, e2, job2.ID); j.Status != store.StatusFailed || !strings.Contains(j.Error, "docsift reindex") {
		t.Fatalf("upload into the old owner: %+v", j)
	}
	if stale, _ := e2.StaleOwners(); len(stale) != 1 || stale[0] != "cus_a" {
		t.Fatalf("StaleOwners = %v, want the old owner", stale)
	}
	if _, err := e2.Reindex(context.Background(), "cus_a", nil); err != nil {
		t.Fatal(err)
	}
	res, warnings, err = searcher(e2).Search(context.Background(), "cus_a", "zebra sleep", 3)
	if err != nil || len(res) != 1 || len(warnings) != 0 {
		t.Fatalf("search after reindex = %v, %q, %v", res, warnings, err)
	}
	if x, _ := e2.indexes.Get("cus_a"); x.Model() != llm.NewBuiltin().Model() {
		t.Fatalf("model after reindex %q", x.Model())
	}
}

// markSnapshotOfOtherRules rewrites a snapshot as one whose terms were
// analysed by other analysis rules: the version of the rules, the string after the
// magic and the format version, is changed, and the checksum fixed.
func markSnapshotOfOtherRules(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("snapshot of the old owner: %v", err)
	}
	const at = 8 + 4 + 4 // magic, format version, string length
	if string(b[at:at+len(analysis.Version)]) != analysis.Version {
		t.Fatalf("no analysis version at byte %d", at)
	}
	b[at]++
	body := b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := index.ReadSnapshot(path); err == nil || !strings.Contains(err.Error(), "analysis rules") {
		t.Fatalf("a snapshot of other rules: %v, want it refused for its rules", err)
	}
}
