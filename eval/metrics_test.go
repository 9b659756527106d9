package eval

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestScoreHandComputed(t *testing.T) {
	// Judged: a=2, b=1, c=0 (judged irrelevant), d=1 (never retrieved).
	rels := map[string]int{"a": 2, "b": 1, "c": 0, "d": 1}
	ranked := []string{"x", "b", "a", "c"}
	// DCG  = 0/log2(2) + 1/log2(3) + 2/log2(4) + 0 = 0.63093 + 1 = 1.63093
	// IDCG = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2 + 0.63093 + 0.5 = 3.13093
	s, ok := Score(ranked, rels, 10)
	if !ok {
		t.Fatal("query with relevant documents skipped")
	}
	want := Scores{NDCG: 1.6309297535714575 / 3.1309297535714578, Recall: 2.0 / 3, MRR: 0.5}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"nDCG", s.NDCG, want.NDCG}, {"recall", s.Recall, want.Recall}, {"MRR", s.MRR, want.MRR}} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %.15f, want %.15f", c.name, c.got, c.want)
		}
	}
	// The cut-off applies to the ranking and the ideal alike.
	s, _ = Score(ranked, rels, 2)
	if want := (1 / math.Log2(3)) / (2 + 1/math.Log2(3)); math.Abs(s.NDCG-want) > 1e-12 || s.Recall != 1.0/3 {
		t.Errorf("at k=2: %+v, want nDCG %.6f recall 1/3", s, want)
	}
	if _, ok := Score(ranked, map[string]int{"a": 0}, 10); ok {
		t.Error("query without a relevant judgment was scored")
	}
	if s, _ := Score(nil, rels, 10); s != (Scores{}) {
		t.Errorf("empty ranking scored %+v", s)
	}
}

func TestReadQrelsWithAndWithoutHeader(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"header.tsv":   "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n",
		"noheader.tsv": "q1\td1\t2\nq1\td2\t0\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		q, err := ReadQrels(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(q) != 1 || q["q1"]["d1"] != 2 || len(q["q1"]) != 2 {
			t.Errorf("%s: %v", name, q)
		}
	}
	p := filepath.Join(dir, "bad.tsv")
	os.WriteFile(p, []byte("q1\td1\thigh\n"), 0o600)
	if _, err := ReadQrels(p); err == nil {
		t.Error("non-numeric score accepted")
	}
}
