// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package embeddedetcd runs etcd inside the kube-apiserver process, for a
// laptop or CI control plane that should need nothing installed. Production
// keeps upstream's --etcd-servers. The embedded member listens on loopback
// only and has no TLS, so nothing off the machine can reach the data.
package embeddedetcd

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"

	"github.com/turnstile-k8s/turnstile/internal/ports"
)

// Options are the --embedded-etcd-* flags.
type Options struct {
	DataDir   string
	ClientURL string
}

// AddFlags adds the flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "embedded-etcd-data-dir", o.DataDir,
		"If set, run etcd inside kube-apiserver with its data in this directory, listening on loopback only, "+
			"and store the cluster there instead of in --etcd-servers (which must then be empty). "+
			"Meant for local and test control planes; state survives restarts.")
	fs.StringVar(&o.ClientURL, "embedded-etcd-client-url", o.ClientURL,
		"The http:// loopback URL the embedded etcd serves clients on, for example http://127.0.0.1:2379. "+
			"Empty chooses a free port. Needs --embedded-etcd-data-dir.")
}

// Enabled reports whether etcd is to be embedded.
func (o *Options) Enabled() bool { return o.DataDir != "" }

// Validate checks the flags, given the upstream --etcd-servers value.
func (o *Options) Validate(etcdServers []string) error {
	if !o.Enabled() {
		if o.ClientURL != "" {
			return errors.New("--embedded-etcd-client-url needs --embedded-etcd-data-dir")
		}
		return nil
	}
	if len(etcdServers) > 0 {
		return fmt.Errorf("--embedded-etcd-data-dir cannot be combined with --etcd-servers=%v: "+
			"the first stores the cluster in etcd inside this process, the second in an external etcd; choose one", etcdServers)
	}
	if o.ClientURL != "" {
		if _, err := loopbackURL(o.ClientURL); err != nil {
			return fmt.Errorf("--embedded-etcd-client-url: %w", err)
		}
	}
	return nil
}

// Complete fills in a free client port when none was given and returns the
// URL the apiserver should use as its only etcd server.
func (o *Options) Complete() (string, error) {
	if o.ClientURL == "" {
		u, err := freeLoopbackURL()
		if err != nil {
			return "", fmt.Errorf("choosing a client port for the embedded etcd: %w", err)
		}
		o.ClientURL = u.String()
	}
	return o.ClientURL, nil
}

// loopbackURL parses an http URL whose host is a loopback address and whose
// port is set.
func loopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%q: the scheme must be http (the member has no TLS and listens on loopback only)", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("%q: want only a scheme, host and port", raw)
	}
	host, port := u.Hostname(), u.Port()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%q: the host must be a loopback address such as 127.0.0.1, not %q", raw, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("%q: the port must be a number from 1 to 65535", raw)
	}
	return u, nil
}

// freeLoopbackURL is an http URL on a free loopback port, chosen by
// ports.Free: below the kernel's ephemeral range, where no outgoing
// connection takes it before the member listens, and never twice in one
// process.
func freeLoopbackURL() (*url.URL, error) {
	port, err := ports.Free()
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, nil
}

// peerURLBeside chooses a free loopback peer URL other than clientURL,
// which a user may have given as a port ports.Free can also draw.
func peerURLBeside(clientURL *url.URL) (*url.URL, error) {
	for range 10 {
		u, err := freeLoopbackURL()
		if err != nil || u.Port() != clientURL.Port() {
			return u, err
		}
	}
	return nil, fmt.Errorf("every free port offered was the client's, %s", clientURL.Port())
}

// startTimeout bounds how long a member may take to become ready. A data
// directory with a large write-ahead log replays within it.
const startTimeout = 2 * time.Minute

// Start runs a single-member etcd for a completed Options and returns it
// once it serves clients. Its peer port is chosen afresh each time, which a
// single member tolerates across restarts.
func Start(o *Options) (*embed.Etcd, error) {
	clientURL, err := loopbackURL(o.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("--embedded-etcd-client-url: %w", err)
	}
	peerURL, err := peerURLBeside(clientURL)
	if err != nil {
		return nil, fmt.Errorf("choosing a peer port for the embedded etcd: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "turnstile"
	cfg.Dir = o.DataDir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"

	klog.InfoS("Starting embedded etcd", "dataDir", cfg.Dir, "clientURL", clientURL.String())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", o.DataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
		klog.InfoS("Embedded etcd is ready", "clientURL", clientURL.String())
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s failed while starting: %w", o.DataDir, err)
	case <-time.After(startTimeout):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s was not ready within %s", o.DataDir, startTimeout)
	}
}
