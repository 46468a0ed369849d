// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package ha

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperDirEnv makes TestHAHelperStartAndHang start a cluster in the
// directory it names and hang until killed.
const helperDirEnv = "TURNSTILE_HA_HELPER_DIR"

// TestHAKilledRunLeavesNothing kills a test process with SIGKILL while its
// cluster runs, as a timeout or a crash would, so that no clean-up of its
// own runs. Its processes must end at once (the kernel kills them when
// their parent dies: process.StartDisposable), and the next run must
// remove its namespaces, bridge and tmpfs.
func TestHAKilledRunLeavesNothing(t *testing.T) {
	if os.Getenv(EnableEnv) == "" {
		t.Skipf("needs root and the built binaries; `make test-ha` runs it (%s=1)", EnableEnv)
	}
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run", "^TestHAHelperStartAndHang$", "-test.v")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool)
	var log strings.Builder
	go func() {
		scanner := bufio.NewScanner(out)
		signalled := false
		for scanner.Scan() {
			log.WriteString(scanner.Text() + "\n")
			if !signalled && strings.Contains(scanner.Text(), "CLUSTER READY") {
				signalled = true
				ready <- true
			}
		}
		if !signalled {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("the helper run ended before its cluster was ready:\n%s", log.String())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the helper run's cluster not ready after 3 minutes")
	}
	if len(processesUnder(dir)) != 6 {
		t.Errorf("want 3 etcd members and 3 apiservers running, have PIDs %v", processesUnder(dir))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for len(processesUnder(dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	if left := processesUnder(dir); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("10 s after the test process was killed, its processes %v still ran", left)
	}
	prefix := fmt.Sprintf("%s%d-", netnsPrefix, cmd.Process.Pid)
	if !namespacesWith(prefix) {
		t.Fatalf("the killed run left no namespace named %s*: nothing to check the next run's clean-up with", prefix)
	}
	removeStale()
	if namespacesWith(prefix) {
		t.Errorf("namespaces %s* survive the next run's clean-up", prefix)
	}
	if _, err := os.Stat(fmt.Sprintf("/sys/class/net/tsha%d", cmd.Process.Pid)); err == nil {
		t.Errorf("bridge tsha%d survives the next run's clean-up", cmd.Process.Pid)
	}
	// At once, not once the kernel gets round to the namespaces: the next
	// test may compare the host's interfaces.
	if veths, _ := filepath.Glob(fmt.Sprintf("/sys/class/net/tsha%dn*", cmd.Process.Pid)); len(veths) > 0 {
		t.Errorf("veths %v survive the next run's clean-up", veths)
	}
	if mounts, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(mounts), dir) {
		t.Errorf("a tmpfs under %s survives the next run's clean-up", dir)
	}
}

func namespacesWith(prefix string) bool {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			return true
		}
	}
	return false
}

// TestHAHelperStartAndHang is TestHAKilledRunLeavesNothing's victim.
func TestHAHelperStartAndHang(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("run by TestHAKilledRunLeavesNothing")
	}
	_, err := Start(context.Background(), Config{
		Dir: dir, APIServers: []string{Turnstile, Turnstile, Upstream},
		TmpfsNode: "node2", TmpfsSize: "200m", Log: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("CLUSTER READY")
	select {} // until killed
}
