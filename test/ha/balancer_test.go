// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakeAPIServer answers /readyz with ready's status and counts the other
// requests, echoing their bodies.
type fakeAPIServer struct {
	*httptest.Server
	ready    atomic.Int32
	requests atomic.Int32
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	f := &fakeAPIServer{}
	f.ready.Store(http.StatusOK)
	f.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(int(f.ready.Load()))
			return
		}
		f.requests.Add(1)
		_, _ = io.Copy(w, r.Body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPIServer) host() string { return strings.TrimPrefix(f.URL, "https://") }

// refusingHost is an address where nothing listens any more.
func refusingHost(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	return host
}

func post(t *testing.T, b *Balancer, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://placeholder/api/v1/namespaces/x/configmaps", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return string(got), err
}

func TestBalancer(t *testing.T) {
	t.Run("spreads requests over the ready backends", func(t *testing.T) {
		a, b := newFakeAPIServer(t), newFakeAPIServer(t)
		lb := NewBalancer(a.Client().Transport, []string{a.host(), b.host()})
		defer lb.Close()
		for range 10 {
			if _, err := post(t, lb, "x"); err != nil {
				t.Fatal(err)
			}
		}
		if a.requests.Load() != 5 || b.requests.Load() != 5 {
			t.Errorf("requests: %d and %d, want 5 and 5", a.requests.Load(), b.requests.Load())
		}
	})
	t.Run("a refused connection goes to the next backend with its body", func(t *testing.T) {
		a := newFakeAPIServer(t)
		lb := NewBalancer(a.Client().Transport, []string{refusingHost(t), a.host()})
		defer lb.Close()
		for range 4 {
			got, err := post(t, lb, "the body")
			if err != nil || got != "the body" {
				t.Fatalf("got %q, %v; want the body echoed", got, err)
			}
		}
	})
	t.Run("a backend failing /readyz gets no requests", func(t *testing.T) {
		a, b := newFakeAPIServer(t), newFakeAPIServer(t)
		b.ready.Store(http.StatusInternalServerError)
		lb := NewBalancer(a.Client().Transport, []string{a.host(), b.host()})
		defer lb.Close()
		time.Sleep(2 * ProbeInterval) // b's first probe
		for range 6 {
			if _, err := post(t, lb, "x"); err != nil {
				t.Fatal(err)
			}
		}
		if b.requests.Load() != 0 {
			t.Errorf("the unready backend got %d requests", b.requests.Load())
		}
	})
	t.Run("every backend refusing is a refusal", func(t *testing.T) {
		a := newFakeAPIServer(t)
		lb := NewBalancer(a.Client().Transport, []string{refusingHost(t), refusingHost(t)})
		defer lb.Close()
		_, err := post(t, lb, "x")
		if !errors.Is(err, syscall.ECONNREFUSED) || Classify(err) != Refused {
			t.Errorf("got %v (%v), want a connection refused, classified as refused", err, Classify(err))
		}
	})
}
