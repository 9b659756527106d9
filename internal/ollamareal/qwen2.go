package ollamareal

import (
	"fmt"
	"path/filepath"
)

// Qwen2Spec sizes a Qwen2ForCausalLM chat model with a byte-level BPE
// tokenizer and ChatML control tokens, as qwen2.5 (docsift's default chat
// model) has.
type Qwen2Spec struct {
	Hidden, Layers, Heads, KVHeads, Intermediate int
	Positions                                    int // context length in tokens
	Merges                                       int // BPE merges to learn
	Seed                                         uint64
}

// ChatML's control tokens, after the learnt vocabulary.
const (
	tokEndOfText = "<|endoftext|>"
	tokImStart   = "<|im_start|>"
	tokImEnd     = "<|im_end|>"
)

// chatMLTemplate is the prompt template given to /api/create: Ollama's Go
// template syntax rendering ChatML, the format qwen2.5 is trained on.
const chatMLTemplate = `{{- range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`

// chatStops ends an answer at the next turn, as Qwen's own parameters do.
var chatStops = []string{tokImStart, tokImEnd}

// WriteQwen2 writes a Qwen2 model directory: config.json,
// model.safetensors, tokenizer.json and tokenizer_config.json.
func WriteQwen2(dir string, s Qwen2Spec) error {
	vocab, merges := trainBPE(loadCorpus().Passages, 5000, s.Merges)
	ids := make(map[string]int, len(vocab))
	for i, t := range vocab {
		ids[t] = i
	}
	var added []map[string]any
	for _, t := range []string{tokEndOfText, tokImStart, tokImEnd} {
		added = append(added, addedToken(len(vocab)+len(added), t))
	}
	total := len(vocab) + len(added)

	config := map[string]any{
		"architectures":           []string{"Qwen2ForCausalLM"},
		"model_type":              "qwen2",
		"vocab_size":              total,
		"hidden_size":             s.Hidden,
		"intermediate_size":       s.Intermediate,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"max_position_embeddings": s.Positions,
		"rope_theta":              1000000.0,
		"rms_norm_eps":            1e-6,
		"hidden_act":              "silu",
		"tie_word_embeddings":     false,
		"bos_token_id":            len(vocab),
		"eos_token_id":            len(vocab) + 2,
		"torch_dtype":             "float16",
	}
	tok := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{
			"type": "Sequence",
			"pretokenizers": []map[string]any{
				{"type": "Split", "pattern": map[string]string{"Regex": qwen2Split}, "behavior": "Isolated", "invert": false},
				{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
			},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{
			"type":                      "BPE",
			"dropout":                   nil,
			"unk_token":                 nil,
			"continuing_subword_prefix": "",
			"end_of_word_suffix":        "",
			"fuse_unk":                  false,
			"byte_fallback":             false,
			"vocab":                     ids,
			"merges":                    merges,
		},
	}
	// bos_token with add_bos_token false keeps Ollama from prepending token
	// 0 (its default when no BOS is named), as Qwen's tokenizer adds none.
	tokConfig := map[string]any{
		"add_bos_token":    false,
		"add_eos_token":    false,
		"bos_token":        tokEndOfText,
		"eos_token":        tokImEnd,
		"pad_token":        tokEndOfText,
		"model_max_length": s.Positions,
	}
	for name, v := range map[string]any{
		"config.json":           config,
		"tokenizer.json":        tok,
		"tokenizer_config.json": tokConfig,
	} {
		if err := writeJSONFile(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return writeSafetensors(filepath.Join(dir, "model.safetensors"), s.Seed, qwen2Tensors(s, len(vocab), total))
}

// qwen2Tensors lists Qwen2ForCausalLM's tensors under Hugging Face's names.
// Queries, keys and values have biases (Qwen2's one difference from Llama),
// and llama.cpp, which runs qwen2 for Ollama, requires them.
//
// Random weights would end an answer at a random point, now and then at
// once (an empty answer), so the model is built never to emit a control
// token: hidden dimension 0 is a constant 1 in every token's embedding and
// no layer writes to it, so after the final norm it is always large and
// positive, and the output rows of the control tokens weigh it by -2. Every
// answer then runs to num_predict and ends with done_reason "length".
func qwen2Tensors(s Qwen2Spec, words, vocab int) []tensorSpec {
	h, in := s.Hidden, s.Intermediate
	kv := h / s.Heads * s.KVHeads
	constDim := func(i int) (float32, bool) { return 1, i%h == 0 }
	noWrite := func(i int) (float32, bool) { return 0, i < in } // row 0 of [h, in]
	noWriteAttn := func(i int) (float32, bool) { return 0, i < h }
	noControl := func(i int) (float32, bool) { return -2, i >= words*h && i%h == 0 }
	ts := []tensorSpec{
		{Name: "model.embed_tokens.weight", Shape: []int{vocab, h}, Fill: weight, Set: constDim},
		{Name: "model.norm.weight", Shape: []int{h}, Fill: ones},
		{Name: "lm_head.weight", Shape: []int{vocab, h}, Fill: weight, Set: noControl},
	}
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts,
			tensorSpec{Name: p + "input_layernorm.weight", Shape: []int{h}, Fill: ones},
			tensorSpec{Name: p + "self_attn.q_proj.weight", Shape: []int{h, h}, Fill: weight},
			tensorSpec{Name: p + "self_attn.q_proj.bias", Shape: []int{h}, Fill: zeros},
			tensorSpec{Name: p + "self_attn.k_proj.weight", Shape: []int{kv, h}, Fill: weight},
			tensorSpec{Name: p + "self_attn.k_proj.bias", Shape: []int{kv}, Fill: zeros},
			tensorSpec{Name: p + "self_attn.v_proj.weight", Shape: []int{kv, h}, Fill: weight},
			tensorSpec{Name: p + "self_attn.v_proj.bias", Shape: []int{kv}, Fill: zeros},
			tensorSpec{Name: p + "self_attn.o_proj.weight", Shape: []int{h, h}, Fill: weight, Set: noWriteAttn},
			tensorSpec{Name: p + "post_attention_layernorm.weight", Shape: []int{h}, Fill: ones},
			tensorSpec{Name: p + "mlp.gate_proj.weight", Shape: []int{in, h}, Fill: weight},
			tensorSpec{Name: p + "mlp.up_proj.weight", Shape: []int{in, h}, Fill: weight},
			tensorSpec{Name: p + "mlp.down_proj.weight", Shape: []int{h, in}, Fill: weight, Set: noWrite},
		)
	}
	return ts
}
