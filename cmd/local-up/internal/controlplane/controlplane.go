// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controlplane runs local-up's control plane: kubeadm's PKI,
// kubeconfigs and command lines, our kube-apiserver on embedded etcd (or
// upstream's on etcd), kube-controller-manager and kube-scheduler, and with
// nodes, internal/localnode's real worker nodes and CoreDNS. The state
// directory outlives a run (state.go).
package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	kubeconfigphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubeconfig"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/turnstile-k8s/turnstile/build/oci"
	"github.com/turnstile-k8s/turnstile/internal/localnode"
	"github.com/turnstile-k8s/turnstile/internal/ports"
	"github.com/turnstile-k8s/turnstile/internal/process"
)

// Options are local-up's flags (cmd/local-up), with paths made absolute.
type Options struct {
	Dir, Bin, NodeBin, AdmissionConfig, Plugins, Images, Policies string
	E2EImages, ExtraImages, Containerd                            string
	// CleanCommand is what resets Dir, as the user would type it.
	CleanCommand                               string
	Port, ControllerManagerPort, SchedulerPort int
	Nodes                                      int
	// Upstream runs kube-apiserver-upstream on etcd at EtcdPort.
	Upstream               bool
	EtcdPort, EtcdPeerPort int
	// APIServerArgs are extra kube-apiserver flags, after ours.
	APIServerArgs []kubeadmapi.Arg
}

// Run brings the control plane up in o.Dir, prints how to reach it, and
// keeps it running, restarting a controller that exits, until Ctrl-C or
// SIGTERM stops everything.
func Run(o Options) (runErr error) {
	if o.AdmissionConfig != "" {
		if _, err := os.Stat(o.AdmissionConfig); err != nil {
			return fmt.Errorf("-admission-config: %w", err)
		}
	}
	if o.Upstream {
		for _, port := range []*int{&o.EtcdPort, &o.EtcdPeerPort} {
			free, err := ports.Free()
			if err != nil {
				return err
			}
			*port = free
		}
	}
	// Ctrl-C at any point is a normal end: whatever started is stopped,
	// and the run exits 0.
	defer takeTerminal()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o700); err != nil {
		return err
	}
	unlock, err := lock(o.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	hasState := stateExists(o)
	if err := checkVersion(o, hasState); err != nil {
		return err
	}
	// Deferred first, so it runs last: after everything has stopped. The
	// last line says what a normal end keeps.
	started := false
	defer func() {
		if err := giveBack(o.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "local-up: handing %s back to its owner: %v\n", o.Dir, err)
		}
		if started && runErr == nil {
			fmt.Printf("Stopped. The state in %s is kept for the next run: every object, the CA and the etcd data (%s resets it).\n", o.Dir, o.CleanCommand)
		}
	}()
	// startErr is err, unless Ctrl-C came first and cut the start short on
	// purpose: then the deferred stops end the run, normally.
	startErr := func(err error) error {
		if ctx.Err() != nil {
			fmt.Println("\nInterrupted before the cluster was ready: stopping what started.")
			return nil
		}
		return err
	}

	began := time.Now()
	var nodes *localnode.Cluster
	var images []string
	if o.Nodes > 0 {
		for _, img := range oci.NodeImages() {
			images = append(images, filepath.Join(o.Images, img.Tarball))
		}
		if o.E2EImages != "" {
			// The e2e framework's Aggregator spec runs the etcd image,
			// which make control-plane-images builds for kubeadm.
			images = append(images, filepath.Join(o.Images, "etcd.tar"), o.E2EImages)
		}
		for _, archive := range strings.Split(o.ExtraImages, ",") {
			if archive = strings.TrimSpace(archive); archive != "" {
				abs, err := filepath.Abs(archive)
				if err != nil {
					return err
				}
				images = append(images, abs)
			}
		}
		if err := localnode.CheckHost(localnode.Config{Bin: o.NodeBin, Images: images, Containerd: o.Containerd}); err != nil {
			return err
		}
	}
	unlockNetwork := func() {}
	if o.Nodes > 0 {
		if unlockNetwork, err = localnode.LockNetwork(); err != nil {
			return err
		}
	}
	// Released once the nodes' bridge is up, and on every return before.
	defer func() { unlockNetwork() }()
	layout, err := chooseNetwork(o, hasState)
	if err != nil {
		return err
	}
	cfg, err := kubeadmConfig(o, layout)
	if err != nil {
		return err
	}
	if err := checkPorts(o, cfg); err != nil {
		return err
	}
	if o.Nodes > 0 {
		nodes, err = localnode.Prepare(localnode.Config{
			Dir: o.Dir, Bin: o.NodeBin, Images: images, Containerd: o.Containerd, Nodes: o.Nodes, Layout: *layout, Kubeadm: cfg,
			Progress: func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
		})
		if err != nil {
			return err
		}
		unlockNetwork()
		unlockNetwork = func() {}
		defer func() {
			if err := nodes.Remove(); err != nil {
				fmt.Fprintf(os.Stderr, "local-up: %v\n", err)
			}
		}()
		if ctx.Err() != nil {
			return startErr(ctx.Err())
		}
	}
	if err := reissueMisfits(cfg); err != nil {
		return err
	}
	if err := writePKIAndKubeconfigs(cfg, o.Dir); err != nil {
		return fmt.Errorf("%w\n(the state in %s does not fit this run's settings; %s resets it)", err, o.Dir, o.CleanCommand)
	}
	commands, err := commandLines(cfg, o)
	if err != nil {
		return err
	}

	var plane controlPlane
	// A closure: plane.stop() deferred directly would stop the plane as it
	// is now, empty, and leave the components to die of their parent-death
	// signal all at once, etcd with the apiserver.
	defer func() {
		if err := plane.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "local-up: %v\n", err)
		}
	}()
	started = true
	var admin kubernetes.Interface
	components := []string{kubeadmconstants.KubeAPIServer, kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler}
	if o.Upstream {
		components = append([]string{kubeadmconstants.Etcd}, components...)
	}
	for _, name := range components {
		p, err := process.Start(name, filepath.Join(o.Dir, "logs", name+".log"), commands[name])
		if err != nil {
			return err
		}
		plane = append(plane, p)
		if name == kubeadmconstants.Etcd {
			if err := waitHealthy(ctx, p, etcdURL(o)+"/health"); err != nil {
				return startErr(err)
			}
		}
		if name == kubeadmconstants.KubeAPIServer {
			if admin, err = waitForAPIServer(ctx, p, cfg, o.Dir); err != nil {
				return startErr(err)
			}
			// Only this run uses this etcd (the lock on o.Dir says so), so
			// the leases still there are a previous run's: without them,
			// the new controllers lead at once instead of waiting ~15 s
			// for the old leases to expire.
			if err := releaseLeases(ctx, admin); err != nil {
				return startErr(err)
			}
			if err := applyPolicies(ctx, o); err != nil {
				return startErr(err)
			}
		}
	}
	controllers := plane[len(plane)-2:]
	for i, port := range []int{o.ControllerManagerPort, o.SchedulerPort} {
		if err := waitHealthy(ctx, controllers[i], fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
			return startErr(err)
		}
		if err := waitLease(ctx, controllers[i], admin); err != nil {
			return startErr(err)
		}
	}
	if err := waitDefaultServiceAccount(ctx, controllers[0], admin); err != nil {
		return startErr(err)
	}
	if nodes != nil {
		defer func() {
			if err := nodes.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "local-up: %v\n", err)
				return
			}
			fmt.Printf("Stopped the %d node(s): kube-proxy, the kubelet, their pods and containerd.\n", o.Nodes)
		}()
		if err := nodes.Start(ctx, admin); err != nil {
			return startErr(err)
		}
		if err := nodes.DeployDNS(ctx, admin); err != nil {
			return startErr(err)
		}
		if err := nodes.WaitDNS(ctx, admin); err != nil {
			return startErr(err)
		}
	}
	printReady(o, cfg, time.Since(began))

	var nodeExit <-chan string
	if nodes != nil {
		nodeExit = nodes.Exited()
	}
	exited := make(chan *process.Process, len(plane))
	for _, p := range plane {
		watch(p, exited)
	}
	for {
		select {
		case <-ctx.Done():
			what := "kube-scheduler, kube-controller-manager, then kube-apiserver and its etcd"
			if o.Upstream {
				what = "kube-scheduler, kube-controller-manager, kube-apiserver, then etcd"
			}
			if nodes != nil {
				what = "the nodes, " + what
			}
			fmt.Printf("\nStopping %s.\n", what)
			return nil
		case p := <-exited:
			restarted, err := plane.restart(p, commands[p.Name])
			if err != nil {
				return err
			}
			watch(restarted, exited)
		case what := <-nodeExit:
			return fmt.Errorf("%s exited unexpectedly", what)
		}
	}
}

// Clean removes the state directory, after what a killed run's nodes
// left on the host (processes, mounts under the directory, namespaces),
// and refuses while a run is using it.
func Clean(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	unlock()
	if os.Geteuid() == 0 {
		localnode.RemoveStale()
	}
	if mounts := localnode.MountsUnder(dir); len(mounts) > 0 {
		return fmt.Errorf("%s still has mounts (%s); unmount them first", dir, strings.Join(mounts, ", "))
	}
	return os.RemoveAll(dir)
}

// checkPorts names the holder of any port the control plane needs that is
// taken, before anything starts. The embedded etcd picks free ports.
func checkPorts(o Options, cfg *kubeadmapi.InitConfiguration) error {
	checks := []struct {
		host       string
		port       int
		what, flag string
	}{
		{cfg.LocalAPIEndpoint.AdvertiseAddress, o.Port, "kube-apiserver's --secure-port", "PORT"},
		{"127.0.0.1", o.ControllerManagerPort, "kube-controller-manager's --secure-port", "CONTROLLER_MANAGER_PORT"},
		{"127.0.0.1", o.SchedulerPort, "kube-scheduler's --secure-port", "SCHEDULER_PORT"},
	}
	for _, c := range checks {
		if o.Nodes > 0 && c.host != "127.0.0.1" {
			// The bridge and its address do not exist yet; what could
			// hold the port there is a wildcard listener, which the
			// loopback check finds.
			c.host = "127.0.0.1"
		}
		if err := ports.Check(c.host, c.port, c.what); err != nil {
			return fmt.Errorf("%w; stop it, or choose another port with make run %s=<port>", err, c.flag)
		}
	}
	return nil
}

// kubeadmConfig is kubeadm's default InitConfiguration for a single
// control-plane node on 127.0.0.1, with no local etcd static pod, and the
// pod and Service ranges of the state's layout (nil only for a state made
// before local-up kept one, which has kubeadm's default ranges). With
// nodes, the apiserver serves on the host's address on the nodes' bridge,
// which its certificate names with or without nodes, so that one
// certificate serves both.
func kubeadmConfig(o Options, layout *localnode.Layout) (*kubeadmapi.InitConfiguration, error) {
	cfg, err := configutil.DefaultedStaticInitConfiguration()
	if err != nil {
		return nil, fmt.Errorf("kubeadm defaults: %w", err)
	}
	address := "127.0.0.1"
	cfg.APIServer.CertSANs = []string{"localhost", "127.0.0.1"}
	if layout != nil {
		cfg.APIServer.CertSANs = append(cfg.APIServer.CertSANs, layout.Host().String())
		cfg.Networking.PodSubnet = layout.Pods.String()
		cfg.Networking.ServiceSubnet = layout.Services.String()
		if o.Nodes > 0 {
			address = layout.Host().String()
		}
	}
	cfg.NodeRegistration.Name = "turnstile-local"
	cfg.LocalAPIEndpoint.AdvertiseAddress = address
	cfg.LocalAPIEndpoint.BindPort = int32(o.Port)
	cfg.CertificatesDir = filepath.Join(o.Dir, "pki")
	// An external etcd makes kubeadm skip the etcd certificates; the
	// endpoint is etcd's with -upstream, and is otherwise replaced by the
	// embedded etcd in commandLines.
	cfg.Etcd.Local = nil
	cfg.Etcd.External = &kubeadmapi.ExternalEtcd{Endpoints: []string{etcdURL(o)}}
	plugins := "NodeRestriction"
	if o.Plugins != "" {
		plugins += "," + o.Plugins
	}
	cfg.APIServer.ExtraArgs = []kubeadmapi.Arg{
		{Name: "enable-admission-plugins", Value: plugins},
		{Name: "bind-address", Value: address},
	}
	if o.Nodes == 0 {
		// Without nodes the apiserver is on loopback, which it refuses to
		// publish in the kubernetes Service's endpoints since v1.37: no pod
		// would reach it anyway, so the endpoints are not kept (as upstream's
		// test servers do).
		cfg.APIServer.ExtraArgs = append(cfg.APIServer.ExtraArgs, kubeadmapi.Arg{Name: "endpoint-reconciler-type", Value: "none"})
	}
	if o.AdmissionConfig != "" {
		cfg.APIServer.ExtraArgs = append(cfg.APIServer.ExtraArgs, kubeadmapi.Arg{Name: "admission-control-config-file", Value: o.AdmissionConfig})
	}
	cfg.APIServer.ExtraArgs = append(cfg.APIServer.ExtraArgs, o.APIServerArgs...)
	cfg.ControllerManager.ExtraArgs = []kubeadmapi.Arg{{Name: "secure-port", Value: strconv.Itoa(o.ControllerManagerPort)}}
	cfg.Scheduler.ExtraArgs = []kubeadmapi.Arg{{Name: "secure-port", Value: strconv.Itoa(o.SchedulerPort)}}
	return cfg, nil
}

// writePKIAndKubeconfigs creates what is missing and checks that what exists
// matches, as `kubeadm init` does. A kubeconfig naming another endpoint
// (an earlier run on another port or address) is written again from the
// same PKI: kubeadm only warns about it and keeps it, and the controllers
// and the user would then talk to the old port.
func writePKIAndKubeconfigs(cfg *kubeadmapi.InitConfiguration, dir string) error {
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		return fmt.Errorf("kubeadm certs phase: %w", err)
	}
	endpoint, err := kubeadmutil.GetControlPlaneEndpoint(cfg.ControlPlaneEndpoint, &cfg.LocalAPIEndpoint)
	if err != nil {
		return err
	}
	for _, file := range []string{
		kubeadmconstants.AdminKubeConfigFileName,
		kubeadmconstants.SuperAdminKubeConfigFileName,
		kubeadmconstants.ControllerManagerKubeConfigFileName,
		kubeadmconstants.SchedulerKubeConfigFileName,
	} {
		path := filepath.Join(dir, file)
		if old, err := clientcmd.LoadFromFile(path); err == nil {
			for _, cluster := range old.Clusters {
				if cluster.Server != endpoint {
					fmt.Printf("local-up: %s names %s, not %s: writing it again\n", path, cluster.Server, endpoint)
					if err := os.Remove(path); err != nil {
						return err
					}
					break
				}
			}
		}
		if err := kubeconfigphase.CreateKubeConfigFile(file, dir, cfg); err != nil {
			return fmt.Errorf("kubeadm kubeconfig phase: %w", err)
		}
	}
	return nil
}

// commandLines takes the commands kubeadm writes into its static pod
// manifests, points them at dir instead of /etc/kubernetes and at our
// binaries, and swaps the etcd flags for the embedded etcd; with -upstream,
// it runs vanilla upstream's kube-apiserver and etcd instead.
func commandLines(cfg *kubeadmapi.InitConfiguration, o Options) (map[string][]string, error) {
	specs := controlplane.GetStaticPodSpecs(&cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, nil)
	commands := map[string][]string{}
	for name, pod := range specs {
		var c []string
		for _, arg := range pod.Spec.Containers[0].Command {
			if name == kubeadmconstants.KubeAPIServer && !o.Upstream && strings.HasPrefix(arg, "--etcd-") {
				continue
			}
			c = append(c, strings.ReplaceAll(arg, kubeadmconstants.KubernetesDir+"/", o.Dir+"/"))
		}
		if len(c) == 0 {
			return nil, fmt.Errorf("kubeadm gave no command for %s", name)
		}
		c[0] = filepath.Join(o.Bin, c[0])
		if name == kubeadmconstants.KubeAPIServer {
			c[0] = apiserverBinary(o)
			if !o.Upstream {
				c = append(c, "--embedded-etcd-data-dir="+etcdDataDir(o))
			}
		}
		commands[name] = c
	}
	if o.Upstream {
		// The flags kubeadm's etcd static pod has for a single member,
		// without TLS: it listens on loopback only.
		peer := fmt.Sprintf("http://127.0.0.1:%d", o.EtcdPeerPort)
		commands[kubeadmconstants.Etcd] = []string{filepath.Join(o.Bin, "etcd"),
			"--name=" + cfg.NodeRegistration.Name, "--data-dir=" + etcdDataDir(o),
			"--listen-client-urls=" + etcdURL(o), "--advertise-client-urls=" + etcdURL(o),
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + cfg.NodeRegistration.Name + "=" + peer,
		}
	}
	return commands, nil
}

// etcdDataDir holds etcd's data, embedded or not: the same layout, so a
// state directory serves both.
func etcdDataDir(o Options) string { return filepath.Join(o.Dir, "etcd") }

// etcdURL is etcd's client URL with -upstream.
func etcdURL(o Options) string { return fmt.Sprintf("http://127.0.0.1:%d", o.EtcdPort) }

// waitForAPIServer waits for /readyz and returns a client with admin.conf.
func waitForAPIServer(ctx context.Context, p *process.Process, cfg *kubeadmapi.InitConfiguration, dir string) (kubernetes.Interface, error) {
	superAdmin, err := clientFor(filepath.Join(dir, kubeadmconstants.SuperAdminKubeConfigFileName))
	if err != nil {
		return nil, err
	}
	ready := func(ctx context.Context) error {
		_, err := superAdmin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := p.WaitUntil(ctx, 2*time.Minute, ready); err != nil {
		return nil, err
	}
	// admin.conf's group is bound to cluster-admin by a ClusterRoleBinding
	// that `kubeadm init` creates with super-admin.conf; so do we.
	admin, err := kubeconfigphase.EnsureAdminClusterRoleBinding(dir, &cfg.LocalAPIEndpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("binding admin.conf's group to cluster-admin: %w", err)
	}
	// The RBAC authorizer sees the new binding through its informer, a few
	// milliseconds later; until then admin.conf is forbidden everything
	// (kubeadm's later phases retry; our next calls would not).
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"},
	}}
	err = p.WaitUntil(ctx, 30*time.Second, func(ctx context.Context) error {
		r, err := admin.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !r.Status.Allowed {
			return fmt.Errorf("admin.conf is not yet cluster-admin: %s", r.Status.Reason)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return admin, nil
}

// applyPolicies applies the PodSecurityPolicies and grants in o.Policies
// when the plugin is on: without a policy that admits them, no pod is
// admitted, CoreDNS's and the controllers' included. The examples grant
// privileged to kube-system's service accounts and the nodes, restricted
// to everyone.
func applyPolicies(ctx context.Context, o Options) error {
	if !slices.Contains(strings.Split(o.Plugins, ","), "PodSecurityPolicy") {
		return nil
	}
	args := []string{"--kubeconfig", filepath.Join(o.Dir, kubeadmconstants.AdminKubeConfigFileName), "apply"}
	for _, path := range strings.Split(o.Policies, ",") {
		args = append(args, "-f", path)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(o.Bin, "kubectl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("applying the PodSecurityPolicies in %s: %v\n%s", o.Policies, err, out)
	}
	fmt.Printf("PodSecurityPolicy is on: applied the policies and grants in %s\n", o.Policies)
	return nil
}

// leaderLeases are the leader-election leases of the controllers local-up
// runs, named after the component as each names its own.
var leaderLeases = []string{kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler}

// releaseLeases deletes a previous run's leader leases.
func releaseLeases(ctx context.Context, client kubernetes.Interface) error {
	for _, name := range leaderLeases {
		err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing the previous run's %s lease: %w", name, err)
		}
	}
	return nil
}

// waitLease waits until p, a controller named after its lease, holds its
// leader lease: only then does it act.
func waitLease(ctx context.Context, p *process.Process, client kubernetes.Interface) error {
	return p.WaitUntil(ctx, time.Minute, func(ctx context.Context) error {
		lease, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.RenewTime == nil {
			return fmt.Errorf("%s does not hold its lease yet", p.Name)
		}
		return nil
	})
}

// waitDefaultServiceAccount waits for kube-controller-manager to create the
// default namespace's ServiceAccount: until it has, ServiceAccount admission
// refuses every pod there, so "ready" would be a promise kubectl run breaks.
func waitDefaultServiceAccount(ctx context.Context, controllerManager *process.Process, client kubernetes.Interface) error {
	return controllerManager.WaitUntil(ctx, time.Minute, func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(config)
}

func printReady(o Options, cfg *kubeadmapi.InitConfiguration, took time.Duration) {
	kubeconfig := filepath.Join(o.Dir, kubeadmconstants.AdminKubeConfigFileName)
	kubectl := filepath.Join(o.Bin, "kubectl")
	server := "Turnstile control plane is ready"
	etcd := "embedded etcd"
	if o.Upstream {
		server, etcd = "Vanilla upstream control plane is ready", "etcd on "+etcdURL(o)
	}
	if o.Nodes > 0 {
		fmt.Printf(`
%s (%s): kube-apiserver on https://%s:%d with %s,
kube-controller-manager and kube-scheduler holding their leases, %d Ready node(s) and CoreDNS.

  kubeconfig: %s
  state:      %s (logs in logs/; kept across runs; %s resets it)

Try:
  export KUBECONFIG=%s
  %s get nodes -o wide
  %s create deployment web --image=%s -- /agnhost netexec --http-port=8080
  %s expose deployment web --port=80 --target-port=8080
  %s run client --rm -it --restart=Never --image=%s -- wget -qO- http://web/hostname

Ctrl-C stops it and removes the nodes' processes, pods, namespaces, routes and rules.
`, server, took.Round(100*time.Millisecond), cfg.LocalAPIEndpoint.AdvertiseAddress, o.Port, etcd, o.Nodes, kubeconfig, o.Dir, o.CleanCommand, kubeconfig,
			kubectl, kubectl, oci.AgnhostImage, kubectl, kubectl, oci.BusyBoxImage)
		return
	}
	fmt.Printf(`
%s (%s): kube-apiserver on https://127.0.0.1:%d with %s,
kube-controller-manager and kube-scheduler. There are no nodes, so pods stay Pending
(make run NODES=1 adds a real node).

  kubeconfig: %s
  state:      %s (logs in logs/; kept across runs; %s resets it)

Try:
  export KUBECONFIG=%s
  %s get namespaces
  %s create deployment web --image=nginx && %s get replicasets,pods
  %s auth can-i create pods --as=system:serviceaccount:default:default

Ctrl-C stops it.
`, server, took.Round(100*time.Millisecond), o.Port, etcd, kubeconfig, o.Dir, o.CleanCommand, kubeconfig, kubectl, kubectl, kubectl, kubectl)
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

// watch delivers p to exited when it exits.
func watch(p *process.Process, exited chan<- *process.Process) {
	go func() {
		<-p.Done()
		exited <- p
	}()
}

// minUptime is how long a controller must have run for its exit to be
// taken as a lost leader lease rather than a crash: the controllers' lease
// lasts 15 s (--leader-elect-lease-duration), and one that held it exits
// only after failing to renew it for 10 s (--leader-elect-renew-deadline),
// so an exit sooner than a lease after the start is a crash.
const minUptime = 15 * time.Second

// restart starts p, which exited, again with command when it is
// kube-controller-manager or kube-scheduler and ran for minUptime: each
// exits by design when it cannot renew its leader lease in time, which a
// loaded machine can cause, and the kubelet restarts kubeadm's static pods.
// Any other exit ends the run.
func (c controlPlane) restart(p *process.Process, command []string) (*process.Process, error) {
	i := slices.Index(c, p)
	restartable := p.Name == kubeadmconstants.KubeControllerManager || p.Name == kubeadmconstants.KubeScheduler
	if i < 0 || !restartable || time.Since(p.Started) < minUptime {
		return nil, fmt.Errorf("%s exited unexpectedly (%v); see %s", p.Name, p.Err(), p.Log)
	}
	fmt.Printf("%s exited (%v) after %s; restarting it, as the kubelet restarts a static pod (it exits when it loses its leader lease)\n",
		p.Name, p.Err(), time.Since(p.Started).Round(time.Second))
	restarted, err := process.Start(p.Name, p.Log, command)
	if err != nil {
		return nil, err
	}
	c[i] = restarted
	return restarted, nil
}

// stop terminates the components in reverse start order, so the apiserver
// (and with it etcd) goes last and nothing loses its server mid-write.
// kube-controller-manager does not handle SIGTERM; dying of it is clean.
func (c controlPlane) stop() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i].Stop(syscall.SIGTERM, time.Minute); err != nil && !process.EndedBy(err, syscall.SIGTERM) {
			errs = append(errs, fmt.Errorf("%s: %w", c[i].Name, err))
			continue
		}
		fmt.Printf("Stopped %s (pid %d).\n", c[i].Name, c[i].Pid())
	}
	return errors.Join(errs...)
}
