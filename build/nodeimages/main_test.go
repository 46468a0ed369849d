package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The wrapper drops -T N (in its three spellings) and runs wget under
// timeout N; without -T it runs wget with the arguments unchanged.
func TestWgetWrapper(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "busybox")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "wget")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(wget, "/bin/busybox", fake)), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-q", "-O", "-", "http://a/"}, "wget -q -O - http://a/"},
		{[]string{"-T", "1", "-q", "-O", "-", "http://a/"}, "timeout 1 " + fake + " wget -q -O - http://a/"},
		{[]string{"-q", "-T5", "http://a/ b"}, "timeout 5 " + fake + " wget -q http://a/ b"},
		{[]string{"--timeout=3", "--spider", "http://a/"}, "timeout 3 " + fake + " wget --spider http://a/"},
	} {
		out, err := exec.Command(script, tc.args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("wget %q ran %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A second run writes nothing; changing one input rebuilds that image only.
func TestRunSkipsUnchangedImages(t *testing.T) {
	busybox := "/bin/busybox"
	if _, err := exec.Command(busybox, "--list").Output(); err != nil {
		t.Skipf("no busybox: %v (Debian's busybox-static)", err)
	}
	if _, err := busyboxEntries(busybox); err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	bin, kube, out := filepath.Join(tmp, "bin"), filepath.Join(tmp, "kubernetes"), filepath.Join(tmp, "images")
	porter := filepath.Join(kube, "test", "images", "agnhost", "porter")
	for _, d := range []string{bin, porter} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(bin, "pause"), filepath.Join(bin, "agnhost"), filepath.Join(bin, "coredns"),
		filepath.Join(porter, "localhost.crt"), filepath.Join(porter, "localhost.key")} {
		if err := os.WriteFile(f, []byte(filepath.Base(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runOnce := func() string {
		t.Helper()
		var buf bytes.Buffer
		if err := run(&buf, out, bin, kube, busybox, ""); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	count := func(s, word string) int { return strings.Count(s, " "+word+" ") }
	if first := runOnce(); count(first, "built") != 4 {
		t.Fatalf("first run:\n%s", first)
	}
	if second := runOnce(); count(second, "up to date") != 4 {
		t.Fatalf("second run:\n%s", second)
	}
	if err := os.WriteFile(filepath.Join(bin, "coredns"), []byte("coredns 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	third := runOnce()
	if count(third, "up to date") != 3 || !strings.Contains(third, "coredns  built") {
		t.Fatalf("after changing coredns:\n%s", third)
	}
	// A lost tarball is rebuilt even though its stamp is there.
	if err := os.Remove(filepath.Join(out, "pause.tar")); err != nil {
		t.Fatal(err)
	}
	if fourth := runOnce(); !strings.Contains(fourth, "pause    built") {
		t.Fatalf("after removing pause.tar:\n%s", fourth)
	}
}
