package ollamareal

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// BertSpec sizes a BERT embedding model (Hugging Face BertModel, WordPiece
// vocabulary, mean pooling, normalised output: the sentence-transformers
// layout Ollama's converter reads).
type BertSpec struct {
	Hidden, Layers, Heads, Intermediate int
	Positions                           int // context length in tokens
	Words                               int // whole words in the vocabulary
	Seed                                uint64
}

// bertSpecials are BERT's control tokens, first in the vocabulary.
var bertSpecials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// bertVocab returns the WordPiece vocabulary: the control tokens, every
// character of the corpus's words and common punctuation both as a word
// and as a continuation ("##x"), so that any ASCII word can be spelt, then
// the spec's number of frequent whole words. Characters outside it (CJK
// text, most symbols) become [UNK], as with a real English model.
func bertVocab(s BertSpec) []string {
	c := loadCorpus()
	vocab := append([]string(nil), bertSpecials...)
	seen := make(map[string]bool)
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			vocab = append(vocab, t)
		}
	}
	chars := "abcdefghijklmnopqrstuvwxyz0123456789"
	for _, r := range chars {
		add(string(r))
		add("##" + string(r))
	}
	for _, r := range `.,;:!?'"()[]{}-/&%$#@*+=<>_` {
		add(string(r))
	}
	for _, w := range c.topWords(s.Words) {
		add(w)
	}
	return vocab
}

// WriteBert writes a BERT model directory: config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json, modules.json and
// 1_Pooling/config.json (Ollama's converter refuses a BertModel without
// modules.json, and reads the pooling mode from the pooling module).
func WriteBert(dir string, s BertSpec) error {
	vocab := bertVocab(s)
	config := map[string]any{
		"architectures":           []string{"BertModel"},
		"model_type":              "bert",
		"vocab_size":              len(vocab),
		"hidden_size":             s.Hidden,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"intermediate_size":       s.Intermediate,
		"max_position_embeddings": s.Positions,
		"type_vocab_size":         2,
		"layer_norm_eps":          1e-12,
		"hidden_act":              "gelu",
		"torch_dtype":             "float16",
	}
	vocabIDs := make(map[string]int, len(vocab))
	for i, t := range vocab {
		vocabIDs[t] = i
	}
	var added []map[string]any
	for i, t := range bertSpecials {
		added = append(added, addedToken(i, t))
	}
	tok := map[string]any{
		"version":        "1.0",
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "BertNormalizer", "lowercase": true, "clean_text": true, "handle_chinese_chars": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{
			"type":                      "WordPiece",
			"unk_token":                 "[UNK]",
			"continuing_subword_prefix": "##",
			"max_input_chars_per_word":  100,
			"vocab":                     vocabIDs,
		},
	}
	tokConfig := map[string]any{
		"do_lower_case": true,
		"cls_token":     "[CLS]",
		"sep_token":     "[SEP]",
		"unk_token":     "[UNK]",
		"pad_token":     "[PAD]",
		"mask_token":    "[MASK]",
		// Checked by Ollama only to bound the input; the model's own limit.
		"model_max_length": s.Positions,
	}
	modules := []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
	}
	pooling := map[string]any{
		"word_embedding_dimension": s.Hidden,
		"pooling_mode_cls_token":   false,
		"pooling_mode_mean_tokens": true,
	}
	for name, v := range map[string]any{
		"config.json":           config,
		"tokenizer.json":        tok,
		"tokenizer_config.json": tokConfig,
		"modules.json":          modules,
		"1_Pooling/config.json": pooling,
	} {
		if err := writeJSONFile(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), s.Seed, bertTensors(s, len(vocab)))
}

// bertTensors lists BertModel's tensors under the names Hugging Face saves
// them with, which Ollama's converter maps to GGUF names.
func bertTensors(s BertSpec, vocab int) []tensorSpec {
	h, in := s.Hidden, s.Intermediate
	ts := []tensorSpec{
		{Name: "embeddings.word_embeddings.weight", Shape: []int{vocab, h}, Fill: weight},
		{Name: "embeddings.position_embeddings.weight", Shape: []int{s.Positions, h}, Fill: weight},
		{Name: "embeddings.token_type_embeddings.weight", Shape: []int{2, h}, Fill: weight},
		{Name: "embeddings.LayerNorm.weight", Shape: []int{h}, Fill: ones},
		{Name: "embeddings.LayerNorm.bias", Shape: []int{h}, Fill: zeros},
	}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		ts = append(ts,
			tensorSpec{Name: p + "attention.self.query.weight", Shape: []int{h, h}, Fill: weight},
			tensorSpec{Name: p + "attention.self.query.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "attention.self.key.weight", Shape: []int{h, h}, Fill: weight},
			tensorSpec{Name: p + "attention.self.key.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "attention.self.value.weight", Shape: []int{h, h}, Fill: weight},
			tensorSpec{Name: p + "attention.self.value.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "attention.output.dense.weight", Shape: []int{h, h}, Fill: weight},
			tensorSpec{Name: p + "attention.output.dense.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "attention.output.LayerNorm.weight", Shape: []int{h}, Fill: ones},
			tensorSpec{Name: p + "attention.output.LayerNorm.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "intermediate.dense.weight", Shape: []int{in, h}, Fill: weight},
			tensorSpec{Name: p + "intermediate.dense.bias", Shape: []int{in}, Fill: zeros},
			tensorSpec{Name: p + "output.dense.weight", Shape: []int{h, in}, Fill: weight},
			tensorSpec{Name: p + "output.dense.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "output.LayerNorm.weight", Shape: []int{h}, Fill: ones},
			tensorSpec{Name: p + "output.LayerNorm.bias", Shape: []int{h}, Fill: zeros},
		)
	}
	return ts
}

// addedToken is a tokenizer.json added_tokens entry for a control token.
func addedToken(id int, content string) map[string]any {
	return map[string]any{
		"id": id, "content": content, "special": true,
		"single_word": false, "lstrip": false, "rstrip": false, "normalized": false,
	}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("ollamareal: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("ollamareal: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("ollamareal: %w", err)
	}
	return nil
}
