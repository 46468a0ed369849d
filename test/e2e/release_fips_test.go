// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// certifiedFIPSModule is the Go Cryptographic Module that make release
// FIPS=1 builds with (GOFIPS140=certified): what the Go 1.27 toolchain's
// lib/fips140/certified.txt names.
const certifiedFIPSModule = "v1.0.0-c2097c7c"

// `make release FIPS=1` output (make test-release builds it for this
// machine's platform): every name and the version say fips, the notes name
// the module, the binary carries it, and it serves in FIPS 140-3 mode: it
// says so when it starts, and refuses a TLS client that offers only suites
// FIPS does not approve, which the release built without the module
// accepts.
func TestReleaseFIPS(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	dir := os.Getenv("TURNSTILE_RELEASE_FIPS_DIR")
	if dir == "" {
		t.Skip("no FIPS release to check: make test-release builds one (make release FIPS=1) and sets TURNSTILE_RELEASE_FIPS_DIR")
	}
	platform := runtime.GOOS + "-" + runtime.GOARCH
	fips := filepath.Join(dir, "kube-apiserver-fips-"+platform)
	out, err := exec.Command(fips, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", fips, err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	plain := strings.TrimPrefix(strings.TrimSpace(runBinary(t, "kube-apiserver", "--version")), "Kubernetes ")
	if version != plain+".fips" {
		t.Errorf("the FIPS binary is %s, want %s.fips", version, plain)
	}
	tag := strings.ReplaceAll(version, "+", "_")
	sums := checkSHA256SUMS(t, dir)
	for _, name := range []string{
		"kube-apiserver-fips-" + platform, "kube-apiserver-fips-" + platform + ".spdx.json",
		"kube-apiserver-" + tag + ".oci.tar", "kube-apiserver-" + tag + "-" + platform + ".tar", "RELEASE-NOTES.md",
	} {
		if _, ok := sums[name]; !ok {
			t.Errorf("SHA256SUMS has no %s (it has %v)", name, sums)
		}
	}
	notes, err := os.ReadFile(filepath.Join(dir, "RELEASE-NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "built with the Go Cryptographic Module " + certifiedFIPSModule; !strings.Contains(string(notes), want) {
		t.Errorf("RELEASE-NOTES.md does not say %q", want)
	}
	if info, err := exec.Command("go", "version", "-m", fips).Output(); err != nil {
		t.Errorf("go version -m: %v", err)
	} else if !strings.Contains(string(info), "GOFIPS140="+certifiedFIPSModule) || !strings.Contains(string(info), "DefaultGODEBUG=") || !strings.Contains(string(info), "fips140=on") {
		t.Errorf("the binary's build information does not name GOFIPS140=%s with fips140=on by default:\n%s", certifiedFIPSModule, info)
	}

	// The release tool refuses the FIPS binary in a release that is not,
	// under the plain name.
	mixed := t.TempDir()
	data, err := os.ReadFile(fips)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "kube-apiserver-"+platform), data, 0o755); err != nil {
		t.Fatal(err)
	}
	release, err := framework.Binary("release")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(release, "-dir", mixed, "-platforms", runtime.GOOS+"/"+runtime.GOARCH,
		"-ldflags", "-X k8s.io/component-base/version.gitVersion="+version, "-allow-dirty")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "was built with Go's FIPS 140-3 module") {
		t.Errorf("release took the FIPS binary for a plain release: %v\n%s", err, out)
	}

	// Built again from the same commit, byte for byte.
	again := t.TempDir()
	rebuild := exec.Command("make", "-C", "../..", "--no-print-directory", "release", "FIPS=1", "ALLOW_DIRTY=1", "RELEASE_DIR="+again, "RELEASE_LINES=",
		"PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := rebuild.CombinedOutput(); err != nil {
		t.Fatalf("make release FIPS=1: %v\n%s", err, out)
	}
	againSums := checkSHA256SUMS(t, again)
	for name, sum := range sums {
		if againSums[name] != sum {
			t.Errorf("%s differs between two FIPS builds: %s, then %s", name, sum, againSums[name])
		}
	}

	root := t.TempDir()
	for _, side := range []struct {
		name    string
		command []string
		fips    bool
	}{
		{"fips", []string{fips}, true},
		{"plain", nil, false},
	} {
		t.Run(side.name, func(t *testing.T) {
			d := filepath.Join(root, side.name)
			s, err := framework.StartAPIServer(framework.APIServerConfig{
				Command: side.command, Dir: d, PKI: pki,
				Args: []string{"--embedded-etcd-data-dir=" + filepath.Join(d, "etcd")},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Stop(syscall.SIGTERM); err != nil {
					t.Errorf("stop: %v", err)
				}
			}()
			log, err := os.ReadFile(filepath.Join(d, "kube-apiserver.log"))
			if err != nil {
				t.Fatal(err)
			}
			on, off := strings.Contains(string(log), "FIPS 140-3 mode is on"), strings.Contains(string(log), "FIPS 140-3 mode is off")
			if on != side.fips || off == side.fips {
				t.Errorf("the log says FIPS mode on: %v, off: %v; want on: %v\n%s", on, off, side.fips, s.Tail(20))
			}
			if side.fips && !strings.Contains(string(log), `module="v1.0.0"`) {
				t.Errorf("the log does not name the module's version v1.0.0\n%s", s.Tail(20))
			}
			// TLS 1.2, where a client chooses the suites it offers (Go
			// fixes TLS 1.3's). ChaCha20-Poly1305 is not FIPS-approved;
			// AES-GCM is.
			chacha := handshake(t, s.URL, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305)
			if side.fips && chacha == nil {
				t.Error("the FIPS apiserver accepted a client offering only ChaCha20-Poly1305")
			}
			if !side.fips && chacha != nil {
				t.Errorf("the plain apiserver refused a client offering only ChaCha20-Poly1305: %v", chacha)
			}
			if err := handshake(t, s.URL, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); err != nil {
				t.Errorf("a client offering AES-GCM was refused: %v", err)
			}
		})
	}
}

// handshake makes a TLS 1.2 connection to the server at serverURL offering
// only suites, and returns the handshake's error.
func handshake(t *testing.T, serverURL string, suites ...uint16) error {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pki.CAPEM)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{
		RootCAs: roots, ServerName: u.Hostname(),
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: suites,
	})
	if err != nil {
		return err
	}
	return conn.Close()
}
