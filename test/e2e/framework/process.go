// Package framework starts the real binaries that e2e tests drive: etcd and
// kube-apiserver as processes on free loopback ports, with a generated PKI,
// and gives clients for any user. One server is shared by many tests; tests
// that need other flags start their own against the same etcd.
package framework

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Binary returns the path of a built binary: from TURNSTILE_BIN_DIR, which
// `make test-e2e` sets after building, or else the repository's _output/bin.
func Binary(name string) (string, error) {
	dir := os.Getenv("TURNSTILE_BIN_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "bin")
	}
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("binary %s not built (run `make build tools` or `make test-e2e`): %w", name, err)
	}
	return path, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a started binary whose output goes to a log file.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // set when exited is closed
}

func startProcess(name, binary, logFile string, args ...string) (*process, error) {
	out, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitUntil polls ready until it returns nil, the process exits, or timeout.
func (p *process) waitUntil(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, p.err, p.Tail(40))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.name, timeout, err, p.Tail(40))
		}
	}
}

// stop sends sig and waits for the exit, killing the process if it takes
// longer than grace. It returns the exit error, nil for a clean exit.
func (p *process) stop(sig os.Signal, grace time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %s of %v and was killed", p.name, grace, sig)
	}
}

// Tail returns the last n lines of the process's log.
func (p *process) Tail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- last lines of " + p.log + " ---\n" + string(bytes.Join(lines, []byte("\n")))
}

func loopbackURL(scheme string, port int) string {
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// Pid is the process ID, for reading its /proc figures.
func (p *process) Pid() int { return p.cmd.Process.Pid }
