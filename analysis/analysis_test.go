package analysis

import (
	"reflect"
	"testing"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"The running dogs", []string{"run", "dog"}},
		{"Don’t STOP believing!", []string{"dont", "stop", "believ"}},
		{"x86 and 2nd-gen CPUs", []string{"x86", "2nd", "gen", "cpus"}},
		{"café naïve", []string{"café", "naïve"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWordsDropsOverlongRuns(t *testing.T) {
	long := "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
	var got []string
	Words("short "+long+" tail", func(w string) { got = append(got, w) })
	if want := []string{"short", "tail"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}
