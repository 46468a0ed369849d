// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Balancer spreads requests over apiservers as the load balancer of
// kubeadm's HA guide does: round robin over the backends whose /readyz
// passed the last probe, probing every ProbeInterval. A request whose
// connection was refused never reached a server, so it goes on to the next
// backend; any other error is the caller's to see. It is an
// http.RoundTripper, so client-go uses it as the transport of one config
// whose host is any of the backends.
type Balancer struct {
	transport http.RoundTripper
	backends  []*backend
	next      atomic.Uint64
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// ProbeInterval is how often the balancer probes each backend's /readyz.
// The apiservers' --shutdown-delay-duration must be longer, so that a
// server shutting down is out of rotation before it stops listening.
const ProbeInterval = 500 * time.Millisecond

type backend struct {
	host  string // host:port
	ready atomic.Bool
}

// NewBalancer starts probing hosts (host:port) through transport, which
// holds the TLS configuration every backend accepts.
func NewBalancer(transport http.RoundTripper, hosts []string) *Balancer {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Balancer{transport: transport, stop: cancel}
	for _, h := range hosts {
		be := &backend{host: h}
		be.ready.Store(true) // until the first probe says otherwise
		b.backends = append(b.backends, be)
		b.done.Add(1)
		go b.probe(ctx, be)
	}
	return b
}

// Close stops the probes.
func (b *Balancer) Close() {
	b.stop()
	b.done.Wait()
}

func (b *Balancer) probe(ctx context.Context, be *backend) {
	defer b.done.Done()
	tick := time.NewTicker(ProbeInterval)
	defer tick.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, ProbeInterval)
		req, _ := http.NewRequestWithContext(attempt, http.MethodGet, "https://"+be.host+"/readyz", nil)
		resp, err := b.transport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		be.ready.Store(err == nil && resp.StatusCode == http.StatusOK)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// order is the backends to try for one request: the ready ones from the
// next in turn, then the others (a probe can lag behind a recovery).
func (b *Balancer) order() []*backend {
	start := int(b.next.Add(1))
	var ready, rest []*backend
	for i := range b.backends {
		be := b.backends[(start+i)%len(b.backends)]
		if be.ready.Load() {
			ready = append(ready, be)
		} else {
			rest = append(rest, be)
		}
	}
	return append(ready, rest...)
}

// RoundTrip sends req to a backend, moving on when the connection is
// refused.
func (b *Balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var lastErr error
	for _, be := range b.order() {
		r := req.Clone(req.Context())
		r.URL = cloneURL(req.URL)
		r.URL.Host, r.Host = be.host, be.host
		if req.Body != nil && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		resp, err := b.transport.RoundTrip(r)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return resp, err
		}
		be.ready.Store(false)
		lastErr = err
		if req.Body != nil && req.GetBody == nil {
			break // cannot send the body again
		}
	}
	return nil, fmt.Errorf("every apiserver refused the connection: %w", lastErr)
}

func cloneURL(u *url.URL) *url.URL {
	c := *u
	return &c
}
