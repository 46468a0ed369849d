// Command local-up runs a local control plane: our kube-apiserver on
// embedded etcd, kube-controller-manager and kube-scheduler. The PKI,
// kubeconfigs and command lines are kubeadm's own, produced by kubeadm's
// phases at the pinned version, so the layout is the one operators know from
// /etc/kubernetes. Only etcd differs: it runs inside the apiserver.
//
// `make run` builds the binaries and calls this. State lives in -dir and is
// reused by later runs; Ctrl-C stops everything, the apiserver last.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	kubeconfigphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubeconfig"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/turnstile-k8s/turnstile/internal/process"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "local-up: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	dir, bin, admissionConfig, plugins string
	port                               int
}

func run() error {
	var o options
	flag.StringVar(&o.dir, "dir", "_output/local", "state directory: PKI, kubeconfigs, etcd data, logs")
	flag.StringVar(&o.bin, "bin", "_output/bin", "directory with kube-apiserver, kube-controller-manager and kube-scheduler")
	flag.StringVar(&o.admissionConfig, "admission-config", "examples/admission/admission-config.yaml", "AdmissionConfiguration file for kube-apiserver")
	flag.StringVar(&o.plugins, "admission-plugins", "", "comma-separated admission plugins to enable besides upstream's defaults and NodeRestriction")
	flag.IntVar(&o.port, "port", 6443, "kube-apiserver's secure port on 127.0.0.1")
	flag.Parse()
	for _, p := range []*string{&o.dir, &o.bin, &o.admissionConfig} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if _, err := os.Stat(o.admissionConfig); err != nil {
		return fmt.Errorf("-admission-config: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(o.dir, "logs"), 0o700); err != nil {
		return err
	}
	unlock, err := lock(o.dir)
	if err != nil {
		return err
	}
	defer unlock()

	began := time.Now()
	cfg, err := kubeadmConfig(o)
	if err != nil {
		return err
	}
	if err := writePKIAndKubeconfigs(cfg, o.dir); err != nil {
		return fmt.Errorf("%w\n(the state in %s was made with other settings; `make clean-local` resets it)", err, o.dir)
	}
	commands, err := commandLines(cfg, o)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var plane controlPlane
	defer plane.stop()
	for _, name := range []string{kubeadmconstants.KubeAPIServer, kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler} {
		p, err := process.Start(name, filepath.Join(o.dir, "logs", name+".log"), commands[name])
		if err != nil {
			return err
		}
		plane = append(plane, p)
		if name == kubeadmconstants.KubeAPIServer {
			if err := waitForAPIServer(ctx, p, cfg, o.dir); err != nil {
				return err
			}
		}
	}
	for i, port := range []int32{kubeadmconstants.KubeControllerManagerPort, kubeadmconstants.KubeSchedulerPort} {
		if err := waitHealthy(ctx, plane[i+1], fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
			return err
		}
	}
	printReady(o, time.Since(began))

	select {
	case <-ctx.Done():
		fmt.Println("\nStopping: kube-scheduler, kube-controller-manager, then kube-apiserver and its etcd.")
		return plane.stop()
	case p := <-plane.firstExit():
		return fmt.Errorf("%s exited unexpectedly (%v); see %s", p.Name, p.Err(), p.Log)
	}
}

// kubeadmConfig is kubeadm's default InitConfiguration for a single
// control-plane node on 127.0.0.1, with no local etcd static pod.
func kubeadmConfig(o options) (*kubeadmapi.InitConfiguration, error) {
	cfg, err := configutil.DefaultedStaticInitConfiguration()
	if err != nil {
		return nil, fmt.Errorf("kubeadm defaults: %w", err)
	}
	cfg.NodeRegistration.Name = "turnstile-local"
	cfg.LocalAPIEndpoint.AdvertiseAddress = "127.0.0.1"
	cfg.LocalAPIEndpoint.BindPort = int32(o.port)
	cfg.CertificatesDir = filepath.Join(o.dir, "pki")
	cfg.APIServer.CertSANs = []string{"localhost", "127.0.0.1"}
	// An external etcd makes kubeadm skip the etcd certificates; the
	// endpoint itself is replaced by the embedded etcd in commandLines.
	cfg.Etcd.Local = nil
	cfg.Etcd.External = &kubeadmapi.ExternalEtcd{Endpoints: []string{"http://127.0.0.1:2379"}}
	plugins := "NodeRestriction"
	if o.plugins != "" {
		plugins += "," + o.plugins
	}
	cfg.APIServer.ExtraArgs = []kubeadmapi.Arg{
		{Name: "enable-admission-plugins", Value: plugins},
		{Name: "admission-control-config-file", Value: o.admissionConfig},
		{Name: "bind-address", Value: "127.0.0.1"},
	}
	return cfg, nil
}

// writePKIAndKubeconfigs creates what is missing and checks that what exists
// matches, as `kubeadm init` does.
func writePKIAndKubeconfigs(cfg *kubeadmapi.InitConfiguration, dir string) error {
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		return fmt.Errorf("kubeadm certs phase: %w", err)
	}
	for _, file := range []string{
		kubeadmconstants.AdminKubeConfigFileName,
		kubeadmconstants.SuperAdminKubeConfigFileName,
		kubeadmconstants.ControllerManagerKubeConfigFileName,
		kubeadmconstants.SchedulerKubeConfigFileName,
	} {
		if err := kubeconfigphase.CreateKubeConfigFile(file, dir, cfg); err != nil {
			return fmt.Errorf("kubeadm kubeconfig phase: %w", err)
		}
	}
	return nil
}

// commandLines takes the commands kubeadm writes into its static pod
// manifests, points them at dir instead of /etc/kubernetes and at our
// binaries, and swaps the etcd flags for the embedded etcd.
func commandLines(cfg *kubeadmapi.InitConfiguration, o options) (map[string][]string, error) {
	specs := controlplane.GetStaticPodSpecs(&cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, nil)
	commands := map[string][]string{}
	for name, pod := range specs {
		var c []string
		for _, arg := range pod.Spec.Containers[0].Command {
			if name == kubeadmconstants.KubeAPIServer && strings.HasPrefix(arg, "--etcd-") {
				continue
			}
			c = append(c, strings.ReplaceAll(arg, kubeadmconstants.KubernetesDir+"/", o.dir+"/"))
		}
		if len(c) == 0 {
			return nil, fmt.Errorf("kubeadm gave no command for %s", name)
		}
		c[0] = filepath.Join(o.bin, c[0])
		if name == kubeadmconstants.KubeAPIServer {
			c = append(c, "--embedded-etcd-data-dir="+filepath.Join(o.dir, "etcd"))
		}
		commands[name] = c
	}
	return commands, nil
}

func waitForAPIServer(ctx context.Context, p *process.Process, cfg *kubeadmapi.InitConfiguration, dir string) error {
	superAdmin, err := clientFor(filepath.Join(dir, kubeadmconstants.SuperAdminKubeConfigFileName))
	if err != nil {
		return err
	}
	ready := func(ctx context.Context) error {
		_, err := superAdmin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := p.WaitUntil(ctx, 2*time.Minute, ready); err != nil {
		return err
	}
	// admin.conf's group is bound to cluster-admin by a ClusterRoleBinding
	// that `kubeadm init` creates with super-admin.conf; so do we.
	if _, err := kubeconfigphase.EnsureAdminClusterRoleBinding(dir, &cfg.LocalAPIEndpoint, nil); err != nil {
		return fmt.Errorf("binding admin.conf's group to cluster-admin: %w", err)
	}
	return nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

func printReady(o options, took time.Duration) {
	kubeconfig := filepath.Join(o.dir, kubeadmconstants.AdminKubeConfigFileName)
	kubectl := filepath.Join(o.bin, "kubectl")
	fmt.Printf(`
Turnstile control plane is ready (%s): kube-apiserver on https://127.0.0.1:%d with embedded etcd,
kube-controller-manager and kube-scheduler. There are no nodes, so pods stay Pending.

  kubeconfig: %s
  state:      %s (logs in logs/; make clean-local resets it)

Try:
  export KUBECONFIG=%s
  %s get namespaces
  %s create deployment web --image=nginx && %s get replicasets,pods
  %s auth can-i create pods --as=system:serviceaccount:default:default

Ctrl-C stops it.
`, took.Round(100*time.Millisecond), o.port, kubeconfig, o.dir, kubeconfig, kubectl, kubectl, kubectl, kubectl)
}

// lock takes an exclusive lock on dir so that a second run says one is
// already running instead of fighting over ports and data.
func lock(dir string) (func(), error) {
	path := filepath.Join(dir, "local-up.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("a local control plane is already running from %s (pid %s); stop it with Ctrl-C first",
				dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}

// waitHealthy waits for a component's /healthz. Its serving certificate is
// self-signed, so, like kubeadm's own probe, the check does not verify it.
func waitHealthy(ctx context.Context, p *process.Process, url string) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return p.WaitUntil(ctx, 2*time.Minute, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// controlPlane is the started components, in start order.
type controlPlane []*process.Process

// firstExit delivers the first component that exits.
func (c controlPlane) firstExit() <-chan *process.Process {
	exited := make(chan *process.Process, len(c))
	for _, p := range c {
		go func() {
			<-p.Done()
			exited <- p
		}()
	}
	return exited
}

// stop terminates the components in reverse start order, so the apiserver
// (and with it etcd) goes last and nothing loses its server mid-write.
// kube-controller-manager does not handle SIGTERM; dying of it is clean.
func (c controlPlane) stop() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i].Stop(syscall.SIGTERM, time.Minute); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
			errs = append(errs, fmt.Errorf("%s: %w", c[i].Name, err))
		}
	}
	return errors.Join(errs...)
}
