// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

// What makes one state directory serve every way of running it: with or
// without nodes, on any ports, with any plugins, and on newer Kubernetes
// releases. The rule is kubeadm's: keep the CA, the service-account keys
// and etcd's data; issue again only what no longer fits.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/version"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"

	"github.com/turnstile-k8s/turnstile/internal/localnode"
)

// versionFile records the Kubernetes release that last ran on the state.
const versionFile = "kubernetes-version"

// stateExists says whether dir holds a cluster already: its CA or its etcd
// data. The lock file and logs/ alone are not one.
func stateExists(o Options) bool {
	for _, p := range []string{filepath.Join(o.Dir, "pki", kubeadmconstants.CACertName), etcdDataDir(o)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// checkVersion compares the release of the kube-apiserver about to run with
// the one the state was made by, and records the new one. The same minor,
// or the next one (an upgrade, which Kubernetes supports one minor at a
// time), is kept; an older minor, or a newer one that skips a minor, is
// refused before anything starts: etcd's data written by v1.Y may use what
// v1.Y-1 cannot read, and upgrades do not skip minors.
func checkVersion(o Options, hasState bool) error {
	binary := apiserverBinary(o)
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", binary, err)
	}
	running, err := parseVersion(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes "))
	if err != nil {
		return fmt.Errorf("%s --version said %q: %w", binary, out, err)
	}
	path := filepath.Join(o.Dir, versionFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if hasState {
			fmt.Printf("local-up: the state in %s does not say which Kubernetes made it (an earlier local-up did not record it); recording v%s\n", o.Dir, running)
		}
	case err != nil:
		return err
	default:
		made, err := parseVersion(strings.TrimSpace(string(data)))
		if err != nil {
			return fmt.Errorf("%s: %w (%s resets the state)", path, err, o.CleanCommand)
		}
		if err := compareStateVersion(made, running, o); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte("v"+running.String()+"\n"), 0o600)
}

func parseVersion(s string) (*version.Version, error) {
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil, fmt.Errorf("not a Kubernetes version: %w", err)
	}
	return v, nil
}

// compareStateVersion says what moving the state from made to running is,
// and refuses the moves Kubernetes does not support.
func compareStateVersion(made, running *version.Version, o Options) error {
	madeMinor, runMinor := minorOf(made), minorOf(running)
	madeV, runV := "v"+made.String(), "v"+running.String()
	reset := fmt.Sprintf("Nothing was started. %s resets the state, deleting every object in it", o.CleanCommand)
	switch {
	case running.Major() != made.Major() || running.Minor() < made.Minor():
		return fmt.Errorf("the state in %s was made by Kubernetes %s, and this kube-apiserver is %s: that is a downgrade (%s to %s), which Kubernetes does not support. %s",
			o.Dir, madeV, runV, madeMinor, runMinor, reset)
	case running.Minor() > made.Minor()+1:
		return fmt.Errorf("the state in %s was made by Kubernetes %s, and this kube-apiserver is %s: an upgrade from %s to %s skips a minor, and Kubernetes upgrades one minor at a time. %s",
			o.Dir, madeV, runV, madeMinor, runMinor, reset)
	case running.Minor() == made.Minor()+1:
		fmt.Printf("local-up: the state in %s was made by Kubernetes %s; this is %s: an upgrade of one minor, which Kubernetes supports. "+
			"Every object is kept; going back to %s afterwards is a downgrade, which local-up refuses.\n", o.Dir, madeV, runV, madeMinor)
	case !running.EqualTo(made):
		fmt.Printf("local-up: the state in %s was made by Kubernetes %s; this is %s, the same minor: kept as it is\n", o.Dir, madeV, runV)
	}
	return nil
}

func minorOf(v *version.Version) string { return fmt.Sprintf("v%d.%d", v.Major(), v.Minor()) }

// apiserverBinary is the kube-apiserver this run starts, and whose release
// the state records.
func apiserverBinary(o Options) string {
	if o.Upstream {
		return filepath.Join(o.Bin, "kube-apiserver-upstream")
	}
	return filepath.Join(o.Bin, "kube-apiserver")
}

// networkFile records the state's addresses.
const networkFile = "network.json"

// chooseNetwork is the state's addresses: those it was made with, or new
// ones recorded for later runs. Runs without nodes use them too, so that
// the Services' range, which etcd keeps (the default ServiceCIDR and every
// ClusterIP allocated from it), is the same with and without nodes, and so
// is the apiserver's certificate. Only a run with nodes needs the range to
// be free of this machine's routes.
//
// A state made before local-up recorded them for runs without nodes has
// kubeadm's default Services range, which nodes cannot use here (it is not
// inside the block the guard and the host's routes cover): it returns nil
// for such a state without nodes, and refuses it with nodes.
func chooseNetwork(o Options, hasState bool) (*localnode.Layout, error) {
	path := filepath.Join(o.Dir, networkFile)
	var previous *localnode.Layout
	if data, err := os.ReadFile(path); err == nil {
		previous = &localnode.Layout{}
		if err := json.Unmarshal(data, previous); err != nil {
			return nil, fmt.Errorf("%s: %w (%s resets the state)", path, err, o.CleanCommand)
		}
		if o.Nodes == 0 {
			return previous, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	} else if hasState {
		if o.Nodes > 0 {
			return nil, fmt.Errorf("the state in %s was made without nodes by an earlier local-up, with kubeadm's default Services range, which the nodes cannot use; %s resets it", o.Dir, o.CleanCommand)
		}
		return nil, nil
	}
	l, err := localnode.ChooseLayout(previous)
	if err != nil {
		return nil, fmt.Errorf("%w (%s resets the state in %s)", err, o.CleanCommand, o.Dir)
	}
	data, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return &l, os.WriteFile(path, data, 0o600)
}

// reissueMisfits removes every certificate signed by the state's CAs whose
// names or addresses no longer cover what cfg asks of it, and its key, so
// that kubeadm's certs phase issues it again from the same CA (kubeadm's
// own advice when the apiserver's names change). The CAs, the
// service-account keys and every certificate that still fits are kept.
func reissueMisfits(cfg *kubeadmapi.InitConfiguration) error {
	for _, cert := range certsphase.GetCertsWithoutEtcd() {
		if cert.CAName == "" || !pkiutil.CertOrKeyExist(cfg.CertificatesDir, cert.BaseName) {
			continue
		}
		existing, err := pkiutil.TryLoadCertFromDisk(cfg.CertificatesDir, cert.BaseName)
		if err != nil {
			// kubeadm's certs phase names the file and what is wrong.
			continue
		}
		want, err := cert.GetConfig(cfg)
		if err != nil {
			return fmt.Errorf("kubeadm's configuration of %s: %w", cert.Name, err)
		}
		var missing []string
		names := slices.Clone(want.AltNames.DNSNames)
		for _, ip := range want.AltNames.IPs {
			names = append(names, ip.String())
		}
		for _, name := range names {
			if existing.VerifyHostname(name) != nil && !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			continue
		}
		base := filepath.Join(cfg.CertificatesDir, cert.BaseName)
		fmt.Printf("local-up: %s.crt is not valid for %s, which this run serves on: issuing it again from the state's CA (the CA, the other certificates and the data are kept)\n",
			base, strings.Join(missing, ", "))
		for _, ext := range []string{".crt", ".key"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// giveBack hands what a run as root wrote in the state directory to the
// directory's owner, so that the user who made the state with `make run`
// can run it again without sudo after a `sudo make run NODES=1`. The nodes'
// own state (nodes/: their kubelets' and containerd's files) stays root's,
// as the nodes need root to run anyway.
func giveBack(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(dir, "nodes") {
			return filepath.SkipDir
		}
		return os.Lchown(path, uid, gid)
	})
}
