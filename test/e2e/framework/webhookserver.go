// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// WebhookServer is an HTTPS server run by a test, for the apiserver to call:
// an admission webhook or an ImagePolicyWebhook backend.
type WebhookServer struct {
	// URL is https://127.0.0.1:<port>, with no path.
	URL string
	// HostPort is 127.0.0.1:<port>, the name a WebhookAdmissionConfiguration
	// kubeconfig gives the credentials for this server.
	HostPort string

	srv      *http.Server
	done     chan error
	close    sync.Once
	closeErr error
}

// StartWebhookServer serves handler over TLS on a free loopback port, with a
// certificate for 127.0.0.1 signed by the PKI's CA (so p.CAPEM is the
// caBundle or certificate-authority that verifies it). It asks callers for a
// client certificate and verifies one that is given against the same CA;
// handlers find it in r.TLS.PeerCertificates.
func StartWebhookServer(p *PKI, handler http.Handler) (*WebhookServer, error) {
	certPEM, keyPEM, err := p.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "e2e-webhook-server"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(p.CAPEM) {
		return nil, errors.New("webhook server: the PKI's CA does not parse")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    clientCAs,
			MinVersion:   tls.VersionTLS12,
		},
	}
	s := &WebhookServer{HostPort: l.Addr().String(), srv: srv, done: make(chan error, 1)}
	s.URL = "https://" + s.HostPort
	go func() { s.done <- srv.ServeTLS(l, "", "") }()
	return s, nil
}

// Close stops listening and closes every connection, so the server is down
// for whoever calls it next: a refused connection, as for a stopped backend.
// Closing twice is harmless.
func (s *WebhookServer) Close() error {
	s.close.Do(func() {
		s.closeErr = s.srv.Close()
		if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
			s.closeErr = serveErr
		}
	})
	return s.closeErr
}
