// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"slices"
	"testing"
)

func TestWithoutPlugin(t *testing.T) {
	cases := []struct {
		args, want []string
	}{
		{[]string{"--a=1"}, []string{"--a=1", "--disable-admission-plugins=X"}},
		{[]string{"--enable-admission-plugins=A,X,B", "--disable-admission-plugins=C", "--b"},
			[]string{"--enable-admission-plugins=A,B", "--b", "--disable-admission-plugins=C,X"}},
		{[]string{"--enable-admission-plugins=X"}, []string{"--enable-admission-plugins=", "--disable-admission-plugins=X"}},
		{[]string{"--admission-control=A,X"}, []string{"--admission-control=A"}},
	}
	for _, tc := range cases {
		if got := withoutPlugin(tc.args, "X"); !slices.Equal(got, tc.want) {
			t.Errorf("withoutPlugin(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
