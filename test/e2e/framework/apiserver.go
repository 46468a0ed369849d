// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

// APIServerConfig says how to start a kube-apiserver.
type APIServerConfig struct {
	// Binary is a name in the binary directory; empty means our kube-apiserver.
	Binary string
	// Command, when set, runs instead of Binary: a program and its leading
	// arguments, for example an emulator and a binary for another
	// architecture (the release's arm64 binary under qemu).
	Command []string
	// ReadyTimeout is how long to wait for /readyz; zero means 2 minutes.
	ReadyTimeout time.Duration
	// Dir holds the server's log. Its base name is also the server's etcd
	// prefix, so servers sharing one etcd do not see each other's objects.
	Dir string
	// Etcd is the external etcd; nil leaves --etcd-servers to Args, as the
	// embedded etcd needs.
	Etcd *Etcd
	PKI  *PKI
	// Args are added after the defaults, so a single-valued flag given here
	// overrides the default.
	Args []string
}

// APIServer is a running kube-apiserver process.
type APIServer struct {
	URL string
	pki *PKI
	*process.Process
}

// StartAPIServer starts a kube-apiserver with secure serving on a free
// loopback port, x509 client authentication against the PKI's CA, RBAC and
// Node authorization, and waits until /readyz answers ok.
func StartAPIServer(c APIServerConfig) (*APIServer, error) {
	name := c.Binary
	if name == "" {
		name = "kube-apiserver"
	}
	command := c.Command
	if len(command) == 0 {
		bin, err := Binary(name)
		if err != nil {
			return nil, err
		}
		command = []string{bin}
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	pki := func(file string) string { return c.PKI.path(file) }
	args := []string{
		"--etcd-prefix=/" + filepath.Base(c.Dir),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Since v1.37 the apiserver refuses to publish a loopback address in
		// the kubernetes Service's endpoints; upstream's own test servers
		// turn the reconciler off, as here (no pod reaches this server).
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + pki(servingCertFile),
		"--tls-private-key-file=" + pki(servingKeyFile),
		"--client-ca-file=" + pki(caCertFile),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki(saPublicFile),
		"--service-account-signing-key-file=" + pki(saPrivateFile),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true", // as kubeadm sets it
	}
	if c.Etcd != nil {
		args = append(args, "--etcd-servers="+c.Etcd.URL)
	}
	args = WithoutPluginArgs(append(args, c.Args...))
	p, err := process.Start(name, filepath.Join(c.Dir, name+".log"), append(slices.Clip(command), args...))
	if err != nil {
		return nil, err
	}
	s := &APIServer{URL: loopbackURL("https", port), pki: c.PKI, Process: p}
	admin, err := s.Client("e2e-admin", "system:masters")
	if err != nil {
		_ = p.Stop(syscall.SIGKILL, time.Second)
		return nil, err
	}
	ready := func(ctx context.Context) error {
		body, err := admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %v: %s", err, body)
		}
		return nil
	}
	timeout := c.ReadyTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	if err := p.WaitUntil(context.Background(), timeout, ready); err != nil {
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
		return nil, err
	}
	return s, nil
}

// Config returns a client config that authenticates as user in groups with a
// client certificate signed by the server's CA.
func (s *APIServer) Config(user string, groups ...string) (*rest.Config, error) {
	cert, key, err := s.pki.ClientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            s.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.CAPEM, CertData: cert, KeyData: key},
		QPS:             200,
		Burst:           400,
	}, nil
}

// Client returns a clientset for user in groups.
func (s *APIServer) Client(user string, groups ...string) (kubernetes.Interface, error) {
	config, err := s.Config(user, groups...)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

// WriteKubeconfig writes a kubeconfig for user in groups to path, for kubectl.
func (s *APIServer) WriteKubeconfig(path, user string, groups ...string) error {
	c, err := s.Config(user, groups...)
	if err != nil {
		return err
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kubeconfig.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	kubeconfig.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	kubeconfig.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*kubeconfig, path)
}

// Stop sends sig (SIGTERM or SIGINT) and waits for a graceful exit; it
// fails unless the server exits with status 0.
func (s *APIServer) Stop(sig os.Signal) error {
	return s.Process.Stop(sig, time.Minute)
}

// WithoutPluginEnv names an admission plugin that every apiserver the
// framework starts runs without, whatever its flags say. hack/e2e-mutation.sh
// sets it to show that each plugin's tests fail when the plugin is off.
const WithoutPluginEnv = "TURNSTILE_E2E_WITHOUT_PLUGIN"

// WithoutPluginArgs returns kube-apiserver arguments with the plugin that
// WithoutPluginEnv names switched off, or args unchanged when it names none.
// StartAPIServer applies it; tests that run the binary themselves (to see it
// refuse to start) apply it too.
func WithoutPluginArgs(args []string) []string {
	if name := os.Getenv(WithoutPluginEnv); name != "" {
		return withoutPlugin(args, name)
	}
	return args
}

// withoutPlugin removes name from the plugin lists in args and, unless the
// deprecated --admission-control (which cannot be combined with
// --disable-admission-plugins) is in use, disables it.
func withoutPlugin(args []string, name string) []string {
	var out, disabled []string
	legacy := false
	for _, arg := range args {
		flag, value, _ := strings.Cut(arg, "=")
		switch flag {
		case "--enable-admission-plugins", "--admission-control":
			legacy = legacy || flag == "--admission-control"
			plugins := slices.DeleteFunc(strings.Split(value, ","), func(p string) bool { return p == name })
			out = append(out, flag+"="+strings.Join(plugins, ","))
		case "--disable-admission-plugins":
			disabled = append(disabled, value)
		default:
			out = append(out, arg)
		}
	}
	if !legacy {
		out = append(out, "--disable-admission-plugins="+strings.Join(append(disabled, name), ","))
	}
	return out
}
