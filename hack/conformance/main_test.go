package main

import (
	"fmt"
	"slices"
	"testing"
)

func TestPassesOf(t *testing.T) {
	for _, tc := range []struct {
		passes string
		want   []string
		err    bool
	}{
		{"parallel,serial", []string{"parallel:8", "serial:1"}, false},
		{"serial", []string{"serial:1"}, false},
		{"parallel", []string{"parallel:8"}, false},
		{"serial, parallel", []string{"serial:1", "parallel:8"}, false},
		{"", nil, true},
		{"disruptive", nil, true},
	} {
		got, err := passesOf(options{passes: tc.passes, procs: 8})
		if (err != nil) != tc.err {
			t.Errorf("-passes %q: error %v", tc.passes, err)
			continue
		}
		var names []string
		for _, p := range got {
			names = append(names, fmt.Sprintf("%s:%d", p.name, p.procs))
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("-passes %q: %v, want %v", tc.passes, names, tc.want)
		}
	}
}
