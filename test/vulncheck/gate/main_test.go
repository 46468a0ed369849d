// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"strings"
	"testing"
)

// A govulncheck -format json stream, cut down: an advisory with a fix that
// the binary reaches in two modules, one it reaches with no fix, and one
// whose module the binary has without the vulnerable function.
const stream = `{"config":{"protocol_version":"v1.0.0","scanner_name":"govulncheck"}}
{"osv":{"id":"GO-2026-0001","summary":"HTTP/2 memory exhaustion"}}
{"osv":{"id":"GO-2026-0002","summary":"No fix yet"}}
{"osv":{"id":"GO-2026-0003","summary":"Not reached"}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Serve","receiver":"*Server"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"ListenAndServe"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v0.60.0","trace":[{"module":"golang.org/x/net","version":"v0.57.0","package":"golang.org/x/net/http2","function":"ConfigureServer"}]}}
{"finding":{"osv":"GO-2026-0002","trace":[{"module":"go.opentelemetry.io/otel","version":"v1.44.0","package":"go.opentelemetry.io/otel/sdk/trace","function":"NewTracerProvider"}]}}
{"finding":{"osv":"GO-2026-0003","fixed_version":"v1.2.3","trace":[{"module":"example.com/m","version":"v1.0.0","package":"example.com/m/p"}]}}
{"finding":{"osv":"GO-2026-0003","fixed_version":"v1.2.3","trace":[{"module":"example.com/m","version":"v1.0.0"}]}}
`

func TestClassify(t *testing.T) {
	fixable, unfixable, err := classify([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, "kube-apiserver", fixable, unfixable)
	want := `gate: kube-apiserver: FAIL: 2 reachable vulnerabilities in modules older than their fix:
  GO-2026-0001  golang.org/x/net@v0.57.0, fixed in v0.60.0: HTTP/2 memory exhaustion
      reached: golang.org/x/net/http2.ConfigureServer
  GO-2026-0001  stdlib@v1.26.8, fixed in v1.26.9: HTTP/2 memory exhaustion
      reached: net/http.ListenAndServe, net/http.Server.Serve
gate: kube-apiserver: 1 reachable advisories with no fixed version (listed, not failed: no module version fixes them):
  GO-2026-0002  go.opentelemetry.io/otel@v1.44.0: No fix yet
      reached: go.opentelemetry.io/otel/sdk/trace.NewTracerProvider
`
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	report(&out, "kube-apiserver", nil, nil)
	if !strings.Contains(out.String(), "no reachable vulnerability that a newer module fixes") {
		t.Errorf("a clean scan: %q", out.String())
	}
	if _, _, err := classify([]byte("{not json")); err == nil {
		t.Error("a stream that is not govulncheck's JSON: no error")
	}
}

func TestReached(t *testing.T) {
	if got := reached([]string{"f", "e", "d", "c", "b", "a"}); got != "a, b, c, d and 2 more" {
		t.Errorf("reached = %q", got)
	}
}
