// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestCheckSums(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sums  string // SHA256SUMS; "" for none
		files map[string]string
		want  string // "" for success
	}{
		{
			name:  "every file matches",
			sums:  "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  a\n",
			files: map[string]string{"a": "hello"},
		},
		{name: "no SHA256SUMS", want: "run make release first"},
		{
			name:  "a file changed",
			sums:  "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  a\n",
			files: map[string]string{"a": "hellO"},
			want:  "the release changed after make release wrote it",
		},
		{
			name: "a listed file is missing",
			sums: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  a\n",
			want: "no such file",
		},
		{name: "a line that is not a sum", sums: "2cf24dba a\n", want: `SHA256SUMS:1: "2cf24dba a" is not`},
		{
			name: "a name outside the directory",
			sums: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  ../a\n",
			want: "is not",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.sums != "" {
				write(t, filepath.Join(dir, "SHA256SUMS"), tc.sums)
			}
			for name, data := range tc.files {
				write(t, filepath.Join(dir, name), data)
			}
			names, err := checkSums(dir)
			switch {
			case tc.want == "" && (err != nil || len(names) != len(tc.files)):
				t.Errorf("checkSums: %v, %v; want the %d files", names, err, len(tc.files))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkSums: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLayoutArchive(t *testing.T) {
	if got, err := layoutArchive("d", []string{"SHA256SUMS", "kube-apiserver-v1.37.2_turnstile.1.oci.tar", "kube-apiserver-v1.37.2_turnstile.1-linux-amd64.tar"}); err != nil || got != "kube-apiserver-v1.37.2_turnstile.1.oci.tar" {
		t.Errorf("layoutArchive = %q, %v", got, err)
	}
	if _, err := layoutArchive("d", []string{"kube-apiserver-a.oci.tar", "kube-apiserver-b.oci.tar"}); err == nil || !strings.Contains(err.Error(), "lists 2") {
		t.Errorf("two layouts: %v, want an error", err)
	}
	if _, err := layoutArchive("d", nil); err == nil || !strings.Contains(err.Error(), "lists 0") {
		t.Errorf("no layout: %v, want an error", err)
	}
}

func TestUntarRefusesEscapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
		want string
	}{
		{"a file", tar.Header{Name: "blobs/sha256/ab", Typeflag: tar.TypeReg, Mode: 0o644}, ""},
		{"a parent", tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}, "leaves the layout's directory"},
		{"a symlink", tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, "not a file or a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			if err := tw.WriteHeader(&tc.hdr); err != nil {
				t.Fatal(err)
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			archive := filepath.Join(dir, "layout.tar")
			write(t, archive, b.String())
			out := filepath.Join(dir, "out")
			err := untar(archive, out)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("untar: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRunRefusesNoRegistry(t *testing.T) {
	var out bytes.Buffer
	if err := Run(Config{Dir: t.TempDir()}, &out, &out); err == nil || !strings.Contains(err.Error(), "make publish REGISTRY=") {
		t.Errorf("run without a registry: %v, want an error naming REGISTRY", err)
	}
	if err := Run(Config{Dir: t.TempDir(), Registry: "Not A Registry"}, &out, &out); err == nil || !strings.Contains(err.Error(), `-registry "Not A Registry"`) {
		t.Errorf("run with a bad registry: %v, want an error naming it", err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBinaryOf(t *testing.T) {
	files := []string{"kube-apiserver-linux-amd64", "kube-apiserver-linux-amd64.spdx.json", "kube-apiserver-fips-linux-arm64"}
	for platform, want := range map[string]string{"linux/amd64": "kube-apiserver-linux-amd64", "linux/arm64": "kube-apiserver-fips-linux-arm64", "linux/s390x": ""} {
		got, err := binaryOf(files, platform)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("binaryOf(%s) = %q, %v; want %q", platform, got, err, want)
		}
	}
}

func TestReportProgress(t *testing.T) {
	updates := make(chan v1.Update, 4)
	updates <- v1.Update{Total: 4 << 20, Complete: 1 << 20}
	updates <- v1.Update{Total: 4 << 20, Complete: 2 << 20}
	updates <- v1.Update{Error: errors.New("refused")}
	updates <- v1.Update{Total: 4 << 20, Complete: 4 << 20}
	close(updates)
	var out bytes.Buffer
	reportProgress(&out, updates, time.Hour)
	if want := "publish: 1.0 of 4.0 MiB sent\npublish: 4.0 of 4.0 MiB sent\n"; out.String() != want {
		t.Errorf("reportProgress printed %q, want the first update and the last", out.String())
	}
}
