// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pluginconfig

import (
	"bytes"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type testConfig struct {
	metav1.TypeMeta `json:",inline"`
	Limit           int `json:"limit"`
}

func (c *testConfig) DeepCopyObject() runtime.Object { out := *c; return &out }

func TestDecode(t *testing.T) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(schema.GroupVersion{Group: "test.turnstile.dev", Version: "v1"}, &testConfig{})
	const header = "apiVersion: test.turnstile.dev/v1\nkind: testConfig\n"
	tests := []struct {
		name    string
		config  io.Reader
		found   bool
		limit   int
		wantErr string
	}{
		{name: "no entry", config: nil},
		{name: "no entry, typed nil", config: (*bytes.Buffer)(nil)},
		{name: "valid", config: strings.NewReader(header + "limit: 3\n"), found: true, limit: 3},
		{name: "empty", config: strings.NewReader("  \n"), wantErr: "P: its configuration is empty; give apiVersion test.turnstile.dev/v1 and kind testConfig"},
		{name: "unknown field", config: strings.NewReader(header + "limits: 3\n"), wantErr: `P: invalid configuration (want apiVersion test.turnstile.dev/v1, kind testConfig): strict decoding error: unknown field "limits"`},
		{name: "missing kind", config: strings.NewReader("limit: 3\n"), wantErr: "Object 'Kind' is missing"},
		{name: "not yaml", config: strings.NewReader("{limit: [\n"), wantErr: "P: invalid configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig{Limit: -1}
			found, err := Decode("P", tt.config, scheme, &c)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Decode: %v", err)
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode error %v, want %q", err, tt.wantErr)
				}
				return
			}
			want := tt.limit
			if !tt.found {
				want = -1 // left as it was
			}
			if found != tt.found || c.Limit != want {
				t.Errorf("Decode = found %v, limit %d; want %v, %d", found, c.Limit, tt.found, want)
			}
		})
	}
}
