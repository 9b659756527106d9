#!/usr/bin/env bash
# Builds the real Ollama server (github.com/ollama/ollama@v0.17.4) for
# docsift's real-server tests, or reuses an earlier build, and prints the
# path of the binary on stdout (everything else goes to stderr).
#
# Why a script: the cgo build needs Debian headers (nlohmann-json, stb) and a
# miniaudio header that the Go module does not ship; audio decoding is unused
# for text models, so a stand-in header whose functions fail is enough.
#
# The binary is built with -march=native (without SIMD a 110M-parameter BERT
# takes ~20 s per input), so it only runs on CPUs with the same features: the
# cache directory is keyed by a hash of the CPU flags. The AMX flags are
# switched off because the cgo build lacks ggml's AMX sources and the link
# would fail on ggml_backend_amx_buffer_type.
#
# Environment:
#   DOCSIFT_CACHE  cache root (default $HOME/.cache/docsift)
#   GO             go command (default go)
set -euo pipefail

OLLAMA_VERSION=0.17.4
GO=${GO:-go}
CACHE_ROOT=${DOCSIFT_CACHE:-$HOME/.cache/docsift}

log() { echo "ollama-build: $*" >&2; }

# cpu_key must match cpuKey in internal/ollamareal/binary.go: the first 12
# hex digits of the SHA-256 of the first "flags" line of /proc/cpuinfo, value
# only, trimmed.
cpu_key() {
	local flags=""
	if [ -r /proc/cpuinfo ]; then
		flags=$(grep -m1 '^flags' /proc/cpuinfo | sed -e 's/^[^:]*:[[:space:]]*//' -e 's/[[:space:]]*$//' || true)
	fi
	if [ -z "$flags" ]; then
		echo generic
		return
	fi
	printf '%s' "$flags" | sha256sum | cut -c1-12
}

DIR="$CACHE_ROOT/ollama-v$OLLAMA_VERSION-$(cpu_key)"
BIN="$DIR/ollama"

if [ -x "$BIN" ]; then
	log "reusing $BIN"
	echo "$BIN"
	exit 0
fi

# Debian packages: headers the cgo build includes, and a C/C++ compiler.
need=()
for pkg in nlohmann-json3-dev libstb-dev gcc g++; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		need+=("$pkg")
	fi
done
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
	# Update the package lists only when apt does not know a package yet.
	if ! apt-cache show "${need[@]}" >/dev/null 2>&1; then
		$SUDO apt-get update >&2
	fi
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

mkdir -p "$DIR/include/miniaudio"
# A stand-in for miniaudio: only what llama.cpp's mtmd-helper.cpp uses to
# decode audio. Every call fails, so audio input is refused; text models
# never reach it.
cat >"$DIR/include/miniaudio/miniaudio.h" <<'HDR'
/* Stand-in for miniaudio written for docsift's test build of Ollama:
 * audio decoding is unused for text models, so every call fails. */
#ifndef DOCSIFT_MINIAUDIO_STANDIN_H
#define DOCSIFT_MINIAUDIO_STANDIN_H
#include <stddef.h>
#include <stdint.h>

#ifndef MA_API
#define MA_API static
#endif

typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;

#define MA_SUCCESS 0
#define MA_ERROR (-1)
#define MA_NOT_IMPLEMENTED (-29)

typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;
typedef enum { ma_encoding_format_unknown = 0, ma_encoding_format_wav = 1 } ma_encoding_format;

typedef struct {
	ma_format format;
	ma_uint32 channels;
	ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
	int unused;
} ma_decoder;

typedef struct {
	ma_encoding_format encodingFormat;
	ma_format format;
	ma_uint32 channels;
	ma_uint32 sampleRate;
} ma_encoder_config;

typedef struct {
	int unused;
} ma_encoder;

MA_API ma_decoder_config ma_decoder_config_init(ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
	ma_decoder_config c;
	c.format = format;
	c.channels = channels;
	c.sampleRate = sampleRate;
	return c;
}

MA_API ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *config, ma_decoder *decoder) {
	(void)data; (void)size; (void)config; (void)decoder;
	return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *decoder, ma_uint64 *length) {
	(void)decoder;
	if (length) *length = 0;
	return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_read_pcm_frames(ma_decoder *decoder, void *frames, ma_uint64 count, ma_uint64 *read) {
	(void)decoder; (void)frames; (void)count;
	if (read) *read = 0;
	return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_decoder_uninit(ma_decoder *decoder) {
	(void)decoder;
	return MA_SUCCESS;
}

MA_API ma_encoder_config ma_encoder_config_init(ma_encoding_format encodingFormat, ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
	ma_encoder_config c;
	c.encodingFormat = encodingFormat;
	c.format = format;
	c.channels = channels;
	c.sampleRate = sampleRate;
	return c;
}

MA_API ma_result ma_encoder_init_file(const char *path, const ma_encoder_config *config, ma_encoder *encoder) {
	(void)path; (void)config; (void)encoder;
	return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_encoder_write_pcm_frames(ma_encoder *encoder, const void *frames, ma_uint64 count, ma_uint64 *written) {
	(void)encoder; (void)frames; (void)count;
	if (written) *written = 0;
	return MA_NOT_IMPLEMENTED;
}

MA_API ma_result ma_encoder_uninit(ma_encoder *encoder) {
	(void)encoder;
	return MA_SUCCESS;
}
#endif
HDR

FLAGS="-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -I/usr/include/stb -I$DIR/include"
TMPBIN=$(mktemp -d "$DIR/build.XXXXXX")
trap 'rm -rf "$TMPBIN"' EXIT

log "building github.com/ollama/ollama@v$OLLAMA_VERSION into $DIR (several minutes)"
start=$(date +%s)
# Run outside any module so `go install pkg@version` uses Ollama's own go.mod.
(
	cd "$DIR"
	GOBIN="$TMPBIN" GOFLAGS=-mod=mod CGO_ENABLED=1 \
		CGO_CFLAGS="$FLAGS" CGO_CXXFLAGS="$FLAGS" \
		"$GO" install -trimpath \
		-ldflags "-s -w -X github.com/ollama/ollama/version.Version=$OLLAMA_VERSION" \
		"github.com/ollama/ollama@v$OLLAMA_VERSION" >&2
)
mv "$TMPBIN/ollama" "$BIN"
log "built $BIN in $(($(date +%s) - start)) s"
echo "$BIN"
