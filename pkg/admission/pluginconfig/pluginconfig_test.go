// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pluginconfig

import (
	"bytes"
	"errors"
	"fmt"
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

// A Kind's Load gives the zero value without an entry, the decoded and
// validated configuration with one, and an error naming the plugin
// otherwise; its Check answers as Load does, for the same bytes.
func TestKind(t *testing.T) {
	gv := schema.GroupVersion{Group: "test.turnstile.dev", Version: "v1"}
	positive := func(c *testConfig) error {
		if c.Limit <= 0 {
			return errors.New("limit: must be positive")
		}
		return nil
	}
	kind := NewKind[testConfig](gv, positive)
	const header = "apiVersion: test.turnstile.dev/v1\nkind: testConfig\n"
	tests := []struct {
		name    string
		config  string
		none    bool
		limit   int
		wantErr string
	}{
		{name: "no entry", none: true},
		{name: "valid", config: header + "limit: 3\n", limit: 3},
		{name: "invalid", config: header + "limit: -3\n", wantErr: "P: limit: must be positive"},
		{name: "unknown field", config: header + "limits: 3\n", wantErr: `P: invalid configuration (want apiVersion test.turnstile.dev/v1, kind testConfig): strict decoding error: unknown field "limits"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader
			if !tt.none {
				r = strings.NewReader(tt.config)
			}
			c, err := kind.Load("P", r)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Load error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || c.Limit != tt.limit {
				t.Fatalf("Load = %+v, %v; want limit %d", c, err, tt.limit)
			}
			if tt.none {
				return
			}
			if checked := kind.Check("P", []byte(tt.config)); fmt.Sprint(checked) != fmt.Sprint(err) {
				t.Errorf("Check = %v, Load = %v", checked, err)
			}
		})
	}
}
