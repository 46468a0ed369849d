// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

// `kube-apiserver --validate-only`, as an operator runs it before shipping a
// configuration: every problem listed with its file, plugin and field, exit
// status 1, within seconds, with --etcd-servers pointing where nothing
// listens; and exit status 0 for a clean configuration.

// validateFinding is one element of -o json.
type validateFinding struct {
	Source, File, Plugin, Field, Message string
}

// validateOnlyBudget is how long a check may take: it reads files and
// never waits for etcd or the network.
const validateOnlyBudget = 10 * time.Second

// validateOnlyArgs are the flags a real apiserver gets, with etcd nowhere.
func validateOnlyArgs() []string {
	return []string{
		"--validate-only", "--etcd-servers=http://127.0.0.1:1",
		"--bind-address=127.0.0.1", "--secure-port=6443", "--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file=" + filepath.Join(pki.Dir, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(pki.Dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki.Dir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + filepath.Join(pki.Dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki.Dir, "sa.key"),
		"--authorization-mode=Node,RBAC",
	}
}

// runValidateOnly runs our kube-apiserver with args and returns its
// standard output and exit status. It fails the test on a panic, a timeout
// or a check slower than validateOnlyBudget.
func runValidateOnly(t *testing.T, args ...string) (stdout string, status int) {
	t.Helper()
	bin, err := framework.Binary("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, framework.WithoutPluginArgs(args)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	err = cmd.Run()
	took := time.Since(began)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kube-apiserver %v did not exit within a minute:\n%s%s", args, out.String(), errOut.String())
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("kube-apiserver %v: %v", args, err)
	}
	if all := out.String() + errOut.String(); strings.Contains(all, "panic") || strings.Contains(all, "goroutine ") {
		t.Errorf("kube-apiserver %v panicked:\n%s", args, all)
	}
	if took > validateOnlyBudget {
		t.Errorf("--validate-only took %s, more than %s", took.Round(time.Millisecond), validateOnlyBudget)
	}
	return out.String(), status
}

func decodeFindings(t *testing.T, stdout string) []validateFinding {
	t.Helper()
	var findings []validateFinding
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("-o json printed no JSON list: %v\n%s", err, stdout)
	}
	return findings
}

// Every broken configuration of the corpus (testdata/admission-config/malformed,
// which TestAdmissionConfigRejectsMalformedFiles also starts the server with)
// is reported with the file and the exit status, in text and in JSON, where
// the finding names the file and the plugin; and a named pipe where a
// plugin's file belongs is refused at once rather than read forever.
func TestValidateOnlyReportsEveryMalformedConfiguration(t *testing.T) {
	if len(malformedConfigs) < 20 {
		t.Errorf("the corpus has %d broken configurations, want at least 20", len(malformedConfigs))
	}
	for _, c := range malformedConfigs {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			config := copyAdmissionConfig(t, filepath.Join("malformed", c.dir), dir, nil)
			args := append(validateOnlyArgs(), "--admission-control-config-file="+config)
			if c.enable != "" {
				args = append(args, "--enable-admission-plugins="+c.enable)
			}
			out, status := runValidateOnly(t, args...)
			if status != 1 {
				t.Errorf("exit status %d, want 1:\n%s", status, out)
			}
			for _, want := range append([]string{"admission-control-config-file " + config + ": "}, c.want...) {
				if want = strings.ReplaceAll(want, "${DIR}", dir); !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}

			out, status = runValidateOnly(t, append(args, "-o", "json")...)
			findings := decodeFindings(t, out)
			if status != 1 || len(findings) == 0 {
				t.Fatalf("-o json: exit status %d, findings %+v", status, findings)
			}
			f := findings[0]
			if f.Source != "admission-control-config-file" || f.File != config {
				t.Errorf("first finding %+v, want source admission-control-config-file, file %s", f, config)
			}
			if plugin, ok := pluginNamed(c.want[0]); ok && f.Plugin != plugin {
				t.Errorf("first finding names plugin %q, want %q: %+v", f.Plugin, plugin, f)
			}
		})
	}
	t.Run("named-pipe", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		pipe := filepath.Join(dir, "eventratelimit.yaml")
		if err := syscall.Mkfifo(pipe, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		config := filepath.Join(dir, "admission.yaml")
		write(t, config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n  - name: EventRateLimit\n    path: eventratelimit.yaml\n")
		out, status := runValidateOnly(t, append(validateOnlyArgs(), "--admission-control-config-file="+config)...)
		if want := pipe + " is not a regular file"; status != 1 || !strings.Contains(out, want) {
			t.Errorf("exit status %d, output lacks %q:\n%s", status, want, out)
		}
	})
}

// pluginNamed is the plugin a "plugin X (...)" message names.
func pluginNamed(message string) (string, bool) {
	rest, ok := strings.CutPrefix(message, "plugin ")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, " (")
	return name, ok
}

// Clean configurations pass: every example in examples/admission, each
// per-plugin example through an entry of its own, and the test suite's
// every-plugin and legacy configurations.
func TestValidateOnlyAcceptsCleanConfigurations(t *testing.T) {
	examples, err := filepath.Abs("../../examples/admission")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"examples/admission/admission-config.yaml": {
			"--admission-control-config-file=" + filepath.Join(examples, "admission-config.yaml"),
			"--enable-admission-plugins=NodeRestriction,EventRateLimit,PodNodeSelector,PodTolerationRestriction",
		},
	}
	for plugin, file := range map[string]string{
		"EventRateLimit": "eventratelimit.yaml", "PodTolerationRestriction": "podtolerationrestriction.yaml",
		"DenyEscalatingExec": "exec.yaml", "DenyExecOnPrivileged": "exec.yaml",
		"SecurityContextDeny": "securitycontextdeny.yaml", "PersistentVolumeLabel": "persistentvolumelabel.yaml",
	} {
		config := filepath.Join(t.TempDir(), "admission.yaml")
		write(t, config, fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n  - name: %s\n    path: %s\n", plugin, filepath.Join(examples, file)))
		cases["examples/admission/"+file+" for "+plugin] = []string{"--admission-control-config-file=" + config, "--enable-admission-plugins=" + plugin}
	}
	for _, name := range []string{"v1", "v1alpha1", "legacy"} {
		config := copyAdmissionConfig(t, name, t.TempDir(), nil)
		cases["testdata/admission-config/"+name] = []string{"--admission-control-config-file=" + config,
			"--enable-admission-plugins=EventRateLimit,ImagePolicyWebhook,PodNodeSelector,PodTolerationRestriction,SecurityContextDeny,DenyEscalatingExec,DenyExecOnPrivileged"}
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, status := runValidateOnly(t, append(validateOnlyArgs(), args...)...)
			if status != 0 || !strings.Contains(out, "no problems found") {
				t.Errorf("exit status %d, want 0:\n%s", status, out)
			}
			out, status = runValidateOnly(t, append(validateOnlyArgs(), append(args, "-o", "json")...)...)
			if findings := decodeFindings(t, out); status != 0 || len(findings) != 0 {
				t.Errorf("-o json: exit status %d, findings %+v", status, findings)
			}
		})
	}
}

// Problems in the flags are all listed, not only the first, next to those
// in the configuration; the companion flags need --validate-only.
func TestValidateOnlyListsEveryFlagProblem(t *testing.T) {
	dir := t.TempDir()
	config := copyAdmissionConfig(t, "malformed/negative-qps", dir, nil)
	out, status := runValidateOnly(t, append(validateOnlyArgs(),
		"--admission-control-config-file="+config,
		"--enable-admission-plugins=EventRateLimit,NoSuchPlugin",
		"--secure-port=70000",
		"--service-account-issuer=",
	)...)
	if status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	for _, want := range []string{
		"limits[0].qps: Invalid value: -1: must be positive",
		`enable-admission-plugins plugin "NoSuchPlugin" is unknown`,
		"service-account-issuer should not be an empty string",
		"--secure-port 70000 must be between 1 and 65535",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for args, want := range map[string]string{
		"--from-manifest=/etc/kubernetes/manifests/kube-apiserver.yaml": "--from-manifest is only for --validate-only",
		"-o json":                 "--validate-output (-o) is only for --validate-only",
		"--validate-only -o yaml": `--validate-output "yaml": want text or json`,
	} {
		expectRefusal(t, strings.Fields(args), want)
	}
}

// --from-manifest reads the flags of a kubeadm static pod manifest and finds
// the files on the host through its hostPath volumes, whose host paths here
// differ from the container's: an operator checks an edited manifest before
// moving it into /etc/kubernetes/manifests.
func TestValidateOnlyFromManifest(t *testing.T) {
	host := t.TempDir()
	admissionDir := filepath.Join(host, "admission")
	config := copyAdmissionConfig(t, "malformed/unknown-field", admissionDir, nil)
	// The entry's path as the container sees it: absolute, under the mount.
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	write(t, config, strings.ReplaceAll(string(data), "path: eventratelimit.yaml", "path: /etc/kubernetes/admission/eventratelimit.yaml"))

	manifest := func(extra ...string) string {
		path := filepath.Join(t.TempDir(), "kube-apiserver.yaml")
		flags := []string{
			"--advertise-address=127.0.0.1", "--etcd-servers=https://127.0.0.1:2379", "--secure-port=6443",
			"--service-cluster-ip-range=10.96.0.0/12", "--authorization-mode=Node,RBAC",
			"--client-ca-file=/etc/kubernetes/pki/ca.crt",
			"--tls-cert-file=/etc/kubernetes/pki/apiserver.crt", "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=/etc/kubernetes/pki/sa.pub", "--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
			"--enable-admission-plugins=NodeRestriction,EventRateLimit",
			"--admission-control-config-file=/etc/kubernetes/admission/admission.yaml",
		}
		var command strings.Builder
		for _, f := range append(flags, extra...) {
			fmt.Fprintf(&command, "    - %s\n", f)
		}
		write(t, path, `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  labels:
    component: kube-apiserver
    tier: control-plane
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
`+command.String()+`    image: turnstile-k8s/kube-apiserver:v1.36.3_turnstile.1
    name: kube-apiserver
    resources:
      requests:
        cpu: 250m
    volumeMounts:
    - mountPath: /etc/kubernetes/pki
      name: k8s-certs
      readOnly: true
    - mountPath: /etc/kubernetes/admission
      name: admission
      readOnly: true
  hostNetwork: true
  priorityClassName: system-node-critical
  volumes:
  - hostPath:
      path: `+pki.Dir+`
      type: DirectoryOrCreate
    name: k8s-certs
  - hostPath:
      path: `+admissionDir+`
      type: DirectoryOrCreate
    name: admission
status: {}
`)
		return path
	}

	broken := manifest("--no-such-flag=1", "--secure-port=https")
	out, status := runValidateOnly(t, "--validate-only", "--from-manifest="+broken)
	if status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	for _, want := range []string{
		broken + ": --no-such-flag=1: unknown flag: --no-such-flag",
		broken + `: --secure-port=https: invalid argument "https"`,
		"admission-control-config-file " + config + ": plugin EventRateLimit (path " + filepath.Join(admissionDir, "eventratelimit.yaml") + ")",
		`unknown field "limits[0].qpss"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _ = runValidateOnly(t, "--validate-only", "--from-manifest="+broken, "-o", "json")
	var sources []string
	for _, f := range decodeFindings(t, out) {
		sources = append(sources, f.Source+" "+f.File+" "+f.Plugin)
	}
	for _, want := range []string{"manifest " + broken + " ", "admission-control-config-file " + config + " EventRateLimit"} {
		if !strings.Contains(strings.Join(sources, "\n"), want) {
			t.Errorf("-o json findings %q lack %q", sources, want)
		}
	}

	write(t, config, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n  - name: EventRateLimit\n    path: /etc/kubernetes/admission/eventratelimit.yaml\n")
	write(t, filepath.Join(admissionDir, "eventratelimit.yaml"), "apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n  - type: Server\n    qps: 50\n    burst: 100\n")
	if out, status := runValidateOnly(t, "--validate-only", "--from-manifest="+manifest()); status != 0 {
		t.Errorf("fixed manifest: exit status %d, want 0:\n%s", status, out)
	}

	for _, c := range []struct{ content, want string }{
		{"apiVersion: v1\nkind: ConfigMap\n", "want a v1 Pod"},
		{"apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: kube-apiserver\n    image: x\n", "spec.containers[0].command: Required value"},
		{"apiVersion: v1\nkind: Pod\nspec:\n  containerz: []\n", `unknown field "containerz"`},
	} {
		path := filepath.Join(t.TempDir(), "bad.yaml")
		write(t, path, c.content)
		if out, status := runValidateOnly(t, "--validate-only", "--from-manifest="+path); status != 1 || !strings.Contains(out, path+": ") || !strings.Contains(out, c.want) {
			t.Errorf("manifest %q: exit status %d, output lacks %q:\n%s", c.content, status, c.want, out)
		}
	}
}
