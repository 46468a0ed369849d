// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package process

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// roleEnv makes the test binary play a part in TestDeathSignal instead of
// running tests: "supervisor-term" or "supervisor-kill" starts a child with
// Start or StartDisposable, prints its PID and waits to be killed; "child"
// ignores SIGTERM, as a server still draining would, and sleeps.
const roleEnv = "TURNSTILE_PROCESS_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "child":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "supervisor-term", "supervisor-kill":
		startChild := Start
		if os.Getenv(roleEnv) == "supervisor-kill" {
			startChild = StartDisposable
		}
		self, _ := os.Executable()
		os.Setenv(roleEnv, "child")
		p, err := startChild("child", filepath.Join(os.TempDir(), fmt.Sprintf("deathsignal-%d.log", os.Getpid())), []string{self})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// When the supervisor dies without stopping its children, Start's child
// gets SIGTERM (which this one ignores) and StartDisposable's is killed.
func TestDeathSignal(t *testing.T) {
	for _, tc := range []struct {
		role        string
		wantSurvive bool
	}{{"supervisor-term", true}, {"supervisor-kill", false}} {
		t.Run(tc.role, func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			supervisor := exec.Command(self)
			supervisor.Env = append(os.Environ(), roleEnv+"="+tc.role)
			out, err := supervisor.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := supervisor.Start(); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(filepath.Join(os.TempDir(), fmt.Sprintf("deathsignal-%d.log", supervisor.Process.Pid)))
			line, _ := bufio.NewReader(out).ReadString('\n')
			child, err := strconv.Atoi(line[:max(len(line)-1, 0)])
			if err != nil {
				_ = supervisor.Process.Kill()
				t.Fatalf("the supervisor printed %q, not its child's PID", line)
			}
			defer syscall.Kill(child, syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond) // the child has set its signal handling
			_ = supervisor.Process.Kill()
			_ = supervisor.Wait()
			time.Sleep(500 * time.Millisecond)
			alive := syscall.Kill(child, 0) == nil && !zombie(child)
			if alive != tc.wantSurvive {
				t.Errorf("child alive after its supervisor was killed: %v, want %v", alive, tc.wantSurvive)
			}
		})
	}
}

// zombie reports whether pid has exited and waits for a parent to reap it.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}
