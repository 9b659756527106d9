package ollamareal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// float16Value decodes IEEE half precision, to check float16Bits.
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * mant * math.Pow(2, -24)
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + mant/1024) * math.Pow(2, float64(exp-15))
}

func TestFloat16Bits(t *testing.T) {
	for _, tt := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff},
		{70000, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{1 + 1.0/2048, 0x3c00},    // a tie rounds to even
		{1 + 3.0/2048, 0x3c02},    // a tie rounds to even, upwards
		{5.960464477539063e-8, 1}, // the smallest subnormal
		{1e-9, 0},                 // underflow
	} {
		if got := float16Bits(tt.in); got != tt.want {
			t.Errorf("float16Bits(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := float16Bits(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("NaN became %#04x", got)
	}
	// Weights of deviation 0.02, subnormals included, keep half precision's
	// accuracy.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		v := float32(rng.NormFloat64() * 0.02)
		if i%10 == 0 {
			v *= 1e-3 // subnormal range
		}
		got := float16Value(float16Bits(v))
		if err := math.Abs(got - float64(v)); err > math.Max(math.Abs(float64(v))/2048, math.Pow(2, -25)) {
			t.Fatalf("%g became %g", v, got)
		}
	}
}

func TestWriteSafetensors(t *testing.T) {
	dir := t.TempDir()
	tensors := []tensorSpec{
		{Name: "b.weight", Shape: []int{3, 5}, Fill: weight},
		{Name: "a.bias", Shape: []int{5}, Fill: zeros},
		{Name: "c.norm", Shape: []int{4}, Fill: ones, Set: func(i int) (float32, bool) { return 7, i == 2 }},
	}
	p1, p2 := filepath.Join(dir, "1.safetensors"), filepath.Join(dir, "2.safetensors")
	if err := writeSafetensors(p1, 9, tensors); err != nil {
		t.Fatal(err)
	}
	// Order does not change a tensor's values.
	if err := writeSafetensors(p2, 9, []tensorSpec{tensors[2], tensors[1], tensors[0]}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	if n%8 != 0 {
		t.Errorf("header length %d is not 8-byte aligned", n)
	}
	var header map[string]struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(bytes.TrimRight(data[8:8+n], " "), &header); err != nil {
		t.Fatal(err)
	}
	body := data[8+n:]
	want := map[string]string{"b.weight": "F16", "a.bias": "F32", "c.norm": "F32", "__metadata__": ""}
	if len(header) != len(want) {
		t.Errorf("header has %d entries", len(header))
	}
	end := int64(0)
	for name, e := range header {
		if name == "__metadata__" {
			continue
		}
		if e.DType != want[name] {
			t.Errorf("%s: dtype %s, want %s", name, e.DType, want[name])
		}
		end = max(end, e.Offsets[1])
	}
	if end != int64(len(body)) || end != 3*5*2+5*4+4*4 {
		t.Errorf("data is %d bytes, offsets end at %d", len(body), end)
	}
	norm := header["c.norm"]
	for i := 0; i < 4; i++ {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[norm.Offsets[0]+int64(4*i):]))
		if want := map[bool]float32{true: 7, false: 1}[i == 2]; v != want {
			t.Errorf("c.norm[%d] = %g, want %g", i, v, want)
		}
	}
	// The same weights by name in both files.
	other, _ := os.ReadFile(p2)
	m := binary.LittleEndian.Uint64(other)
	var header2 map[string]json.RawMessage
	json.Unmarshal(bytes.TrimRight(other[8:8+m], " "), &header2)
	var e2 struct {
		Offsets [2]int64 `json:"data_offsets"`
	}
	json.Unmarshal(header2["b.weight"], &e2)
	w1 := body[header["b.weight"].Offsets[0]:header["b.weight"].Offsets[1]]
	w2 := other[8+m:][e2.Offsets[0]:e2.Offsets[1]]
	if !bytes.Equal(w1, w2) || bytes.Count(w1, []byte{0}) == len(w1) {
		t.Error("b.weight differs with the order of tensors, or is zero")
	}
}

func TestVocabularies(t *testing.T) {
	vocab := bertVocab(BertSpec{Words: 500})
	if strings.Join(vocab[:5], " ") != "[PAD] [UNK] [CLS] [SEP] [MASK]" {
		t.Errorf("control tokens: %q", vocab[:5])
	}
	seen := make(map[string]bool)
	for _, v := range vocab {
		if seen[v] {
			t.Errorf("%q twice", v)
		}
		seen[v] = true
	}
	for _, want := range []string{"##q", "z", "the", "."} {
		if !seen[want] {
			t.Errorf("vocabulary lacks %q", want)
		}
	}

	if byteLevel(" a\n") != "Ġa\u010a" {
		t.Errorf("byteLevel = %q", byteLevel(" a\n"))
	}
	passages := loadCorpus().Passages
	passages = passages[:min(len(passages), 500)]
	tokens, merges := trainBPE(passages, 2000, 300)
	again, _ := trainBPE(passages, 2000, 300)
	if strings.Join(tokens, "\x00") != strings.Join(again, "\x00") {
		t.Error("BPE training is not deterministic")
	}
	if len(merges) < 100 || len(tokens) < 256+len(merges)*9/10 {
		t.Fatalf("%d merges, %d tokens", len(merges), len(tokens))
	}
	in := make(map[string]bool)
	for _, tok := range tokens {
		if in[tok] {
			t.Errorf("%q twice", tok)
		}
		in[tok] = true
	}
	for _, m := range merges {
		l, r, ok := strings.Cut(m, " ")
		if !ok || !in[l] || !in[r] || !in[l+r] {
			t.Errorf("merge %q: a part or the result is not a token", m)
		}
	}
	if !in["Ġthe"] {
		t.Error("the commonest word did not become a token")
	}
}

func TestWriteModels(t *testing.T) {
	bert := t.TempDir()
	if err := WriteBert(bert, BertSpec{Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, Positions: 64, Words: 100, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	qwen := t.TempDir()
	if err := WriteQwen2(qwen, Qwen2Spec{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Intermediate: 32, Positions: 64, Merges: 50, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for dir, files := range map[string][]string{
		bert: {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json", "1_Pooling/config.json"},
		qwen: {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"},
	} {
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
		var config struct {
			VocabSize int `json:"vocab_size"`
		}
		var tok struct {
			Added []struct {
				ID int `json:"id"`
			} `json:"added_tokens"`
			Model struct {
				Vocab map[string]int `json:"vocab"`
			} `json:"model"`
		}
		readJSON(t, filepath.Join(dir, "config.json"), &config)
		readJSON(t, filepath.Join(dir, "tokenizer.json"), &tok)
		ids := make(map[int]bool)
		for _, id := range tok.Model.Vocab {
			ids[id] = true
		}
		for _, a := range tok.Added {
			ids[a.ID] = true
		}
		if len(ids) != config.VocabSize {
			t.Errorf("%s: %d distinct token ids, vocab_size %d", dir, len(ids), config.VocabSize)
		}
		for id := 0; id < config.VocabSize; id++ {
			if !ids[id] {
				t.Errorf("%s: token id %d missing", dir, id)
				break
			}
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCPUKeyMatchesScript: the Go side must find the binary where
// scripts/ollama-build.sh put it.
func TestCPUKeyMatchesScript(t *testing.T) {
	if _, err := os.Stat("/proc/cpuinfo"); err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	script, err := os.ReadFile("../../scripts/ollama-build.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Run the script's own cpu_key function, not a copy of it.
	start := strings.Index(string(script), "cpu_key() {")
	end := strings.Index(string(script)[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("cpu_key not found in the script")
	}
	fn := string(script)[start : start+end+3]
	out, err := exec.Command("bash", "-c", fn+"cpu_key").Output()
	if err != nil {
		t.Skipf("bash: %v", err)
	}
	if got, want := cpuKey(), strings.TrimSpace(string(out)); got != want {
		t.Errorf("cpuKey() = %q, the script says %q", got, want)
	}
}
