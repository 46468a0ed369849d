// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throw-away certificate authority with the files kube-apiserver
// needs: a serving certificate, the service-account key pair, and the CA that
// verifies client certificates. Keys are ECDSA P-256 because they are quick
// to generate and every component accepts them.
type PKI struct {
	Dir string

	caCert *x509.Certificate
	caKey  crypto.Signer
	CAPEM  []byte
}

// File names inside Dir.
const (
	caCertFile      = "ca.crt"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saPublicFile    = "sa.pub"
	saPrivateFile   = "sa.key"
)

// NewPKI writes a CA, a serving certificate for the loopback names of the
// apiserver, and a service-account key pair into dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "turnstile-e2e-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("self-signing the CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, caCert: caCert, caKey: caKey, CAPEM: pemBlock("CERTIFICATE", der)}
	if err := os.WriteFile(p.path(caCertFile), p.CAPEM, 0o600); err != nil {
		return nil, err
	}

	certPEM, keyPEM, err := p.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path(servingCertFile), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path(servingKeyFile), keyPEM, 0o600); err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPriv, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path(saPrivateFile), pemBlock("EC PRIVATE KEY", saPriv), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path(saPublicFile), pemBlock("PUBLIC KEY", saPub), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// ClientCert returns a client certificate and key for user in groups, the
// identity kube-apiserver's x509 authenticator derives from CN and O.
func (p *PKI) ClientCert(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return p.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// Issue signs template with the CA, filling in the serial, validity and key.
func (p *PKI) Issue(template *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(24 * time.Hour)
	template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, template, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing a certificate for %q: %w", template.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func (p *PKI) path(name string) string { return filepath.Join(p.Dir, name) }

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
