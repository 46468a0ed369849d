// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package measure runs an etcd and an apiserver for a benchmark and reads
// what the apiserver costs: CPU and memory from /proc, its own counters
// from /metrics, its profiles from /debug/pprof.
package measure

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Server is an etcd and apiserver pair started for one scenario.
type Server struct {
	Etcd      *framework.Etcd
	APIServer *framework.APIServer
	Config    *rest.Config // the load's: system:masters, protobuf, no throttling
	Client    kubernetes.Interface
}

// Start starts an etcd and the apiserver binary (empty: ours) in dir,
// with godebug, when not empty, as the apiserver's GODEBUG.
func Start(dir string, pki *framework.PKI, binary string, args []string, godebug string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var command []string
	if godebug != "" {
		if binary == "" {
			binary = "kube-apiserver"
		}
		bin, err := framework.Binary(binary)
		if err != nil {
			return nil, err
		}
		command = []string{"env", "GODEBUG=" + godebug, bin}
	}
	etcd, err := framework.StartEtcd(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{Etcd: etcd}
	s.APIServer, err = framework.StartAPIServer(framework.APIServerConfig{Binary: binary, Command: command, Dir: filepath.Join(dir, "apiserver"), Etcd: etcd, PKI: pki, Args: args})
	if err != nil {
		s.Stop()
		return nil, err
	}
	config, err := s.APIServer.Config("bench-admin", "system:masters")
	if err != nil {
		s.Stop()
		return nil, err
	}
	// No client-side throttling, protobuf as controllers use, so the
	// server is what is measured.
	config.QPS, config.Burst = -1, 0
	config.ContentType = "application/vnd.kubernetes.protobuf"
	s.Config = config
	s.Client, err = kubernetes.NewForConfig(config)
	if err != nil {
		s.Stop()
	}
	return s, err
}

func (s *Server) Stop() {
	if s.APIServer != nil {
		_ = s.APIServer.Stop(syscall.SIGTERM)
	}
	_ = s.Etcd.Stop()
}

// workspace makes a temporary directory for a run's servers, with the
// PKI they share; the caller removes it.
func Workspace(prefix string) (string, *framework.PKI, error) {
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	pki, err := framework.NewPKI(filepath.Join(root, "pki"))
	if err != nil {
		os.RemoveAll(root)
		return "", nil, err
	}
	return root, pki, nil
}

func Machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs, %s", runtime.NumCPU(), model)
}

// KubernetesVersion is the k8s.io/kubernetes release this command, and so
// both apiservers it compares, were built from.
func KubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return dep.Version
			}
		}
	}
	return "(unknown version)"
}

func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// QuietKlog discards klog's output: client-go logs the requests a run's
// deadline cuts short, and etcd's client its dials before etcd listens;
// both are expected and neither is counted.
func QuietKlog() {
	quiet := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(quiet)
	_ = quiet.Set("logtostderr", "false")
	_ = quiet.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
