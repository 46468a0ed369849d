// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package stamp

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

const ldflags = "-s -w -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitVersion=v1.36.3+turnstile.2" +
	" -X k8s.io/component-base/version.gitCommit=0123abc -X k8s.io/component-base/version.gitTreeState=clean" +
	" -X k8s.io/component-base/version.buildDate=2026-11-01T10:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=v1.36.3+turnstile.2"

// The test binary is a Go binary like any other: its platform, toolchain
// and modules come from its build information, the rest from ldflags.
func TestRead(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Read(self, ldflags)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != "v1.36.3+turnstile.2" || s.Commit != "0123abc" || s.TreeState != "clean" ||
		!s.BuildDate.Equal(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("stamp %+v, want the values in ldflags", s)
	}
	if s.OS != runtime.GOOS || s.Arch != runtime.GOARCH || s.GoVersion != runtime.Version() {
		t.Errorf("platform %s, Go %s; want %s/%s, %s", s.Platform(), s.GoVersion, runtime.GOOS, runtime.GOARCH, runtime.Version())
	}
	if s.Main != "github.com/turnstile-k8s/turnstile" {
		t.Errorf("main module %q", s.Main)
	}
}

func TestReadFails(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notGo := t.TempDir() + "/script"
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, ldflags, want string
	}{
		{"not a Go binary", notGo, ldflags, "reading Go build information"},
		{"missing", t.TempDir() + "/none", ldflags, "no such file"},
		{"no version", self, "-s -w", "has no -X k8s.io/component-base/version.gitVersion"},
		{"bad date", self, "-X k8s.io/component-base/version.gitVersion=v1 -X k8s.io/component-base/version.buildDate=yesterday", `buildDate "yesterday"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.path, tc.ldflags)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestModule(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   debug.Module
		want Module
	}{
		{"plain", debug.Module{Path: "k8s.io/kubernetes", Version: "v1.36.3", Sum: "h1:a"}, Module{"k8s.io/kubernetes", "v1.36.3", "h1:a"}},
		{"staging replaced by its published version", debug.Module{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.36.3", Sum: "h1:b"}},
			Module{"k8s.io/api", "v0.36.3", "h1:b"}},
		{"replaced by a directory", debug.Module{Path: "example.com/m", Version: "v1.0.0", Sum: "h1:c", Replace: &debug.Module{Path: "../m"}},
			Module{"example.com/m", "(../m)", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := module(&tc.in); got != tc.want {
				t.Errorf("module = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLinkerVars(t *testing.T) {
	got := linkerVars("-s -w -X a.b=1 -X c.d=x=y -X broken -X")
	if len(got) != 2 || got["a.b"] != "1" || got["c.d"] != "x=y" {
		t.Errorf("linkerVars = %v", got)
	}
}
