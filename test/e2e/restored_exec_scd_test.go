// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// restoredServers are three apiservers on the shared server's etcd prefix,
// so a pod created once through the shared server (which runs none of the
// restored plugins) is seen by all of them, as in an HA control plane
// whose members enable different plugins.
type restoredServers struct {
	plain      kubernetes.Interface // upstream's default plugins
	escalating kubernetes.Interface // SecurityContextDeny, DenyEscalatingExec; no configuration
	privileged kubernetes.Interface // DenyExecOnPrivileged; no configuration
	hardened   kubernetes.Interface // both, with every opt-in of testdata/hardened-exec-scd.yaml
}

func startRestoredServers(t *testing.T) restoredServers {
	start := func(name string, args ...string) kubernetes.Interface {
		_, c := startServer(t, name, append([]string{"--etcd-prefix=/shared"}, args...)...)
		return c
	}
	config, err := filepath.Abs("testdata/hardened-exec-scd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return restoredServers{
		plain:      adminClient(t),
		escalating: start("escalating", "--enable-admission-plugins=SecurityContextDeny,DenyEscalatingExec"),
		privileged: start("privileged", "--enable-admission-plugins=DenyExecOnPrivileged"),
		hardened: start("hardened", "--enable-admission-plugins=SecurityContextDeny,DenyExecOnPrivileged",
			"--admission-control-config-file="+config),
	}
}

// TestSecurityContextDenyAndExec runs the spec cases of sections 1.5 and
// 2.5 against the real binary.
func TestSecurityContextDenyAndExec(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	servers := startRestoredServers(t)
	t.Run("SecurityContextDeny", func(t *testing.T) { testSecurityContextDeny(t, servers, createNamespace(t, servers.plain)) })
	t.Run("exec", func(t *testing.T) { testExec(t, servers, createNamespace(t, servers.plain)) })
}

func testSecurityContextDeny(t *testing.T, s restoredServers, ns string) {
	ctx := context.Background()
	runAs := &corev1.SecurityContext{RunAsUser: ptr.To[int64](1)}
	cases := []struct {
		name    string
		podSC   *corev1.PodSecurityContext
		sc      *corev1.SecurityContext
		wantErr string
	}{
		{name: "plain"},
		{name: "empty-scs", podSC: &corev1.PodSecurityContext{}, sc: &corev1.SecurityContext{}},
		{name: "privileged", sc: &corev1.SecurityContext{Privileged: ptr.To(true), Capabilities: &corev1.Capabilities{}}},
		{name: "run-as-user", sc: runAs, wantErr: "SecurityContext.RunAsUser is forbidden"},
		{name: "selinux", sc: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{}}, wantErr: "SecurityContext.SELinuxOptions is forbidden"},
		{name: "pod-run-as-user", podSC: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1)}, wantErr: "pod.Spec.SecurityContext.RunAsUser is forbidden"},
		{name: "pod-selinux", podSC: &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0"}}, wantErr: "pod.Spec.SecurityContext.SELinuxOptions is forbidden"},
		{name: "pod-groups", podSC: &corev1.PodSecurityContext{SupplementalGroups: []int64{1234}}, wantErr: "pod.Spec.SecurityContext.SupplementalGroups is forbidden"},
		{name: "pod-fsgroup", podSC: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1001)}, wantErr: "pod.Spec.SecurityContext.FSGroup is forbidden"},
		{name: "run-as-group", podSC: &corev1.PodSecurityContext{RunAsGroup: ptr.To[int64](5)}, sc: &corev1.SecurityContext{RunAsGroup: ptr.To[int64](5)}},
		{name: "first-wins", podSC: &corev1.PodSecurityContext{SupplementalGroups: []int64{1}, RunAsUser: ptr.To[int64](1)},
			wantErr: "pod.Spec.SecurityContext.SupplementalGroups is forbidden"},
	}
	for _, init := range []bool{false, true} {
		for _, tc := range cases {
			name := tc.name
			if init {
				name = "init-" + name
			}
			t.Run(name, func(t *testing.T) {
				pod := pausePod(name, "")
				pod.Spec.SecurityContext = tc.podSC
				pod.Spec.Containers[0].SecurityContext = tc.sc
				if init {
					pod.Spec.InitContainers = []corev1.Container{pod.Spec.Containers[0]}
					pod.Spec.InitContainers[0].Name = "init"
					pod.Spec.Containers[0].SecurityContext = nil
				}
				_, err := s.escalating.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("create: %v, want admitted", err)
				case tc.wantErr != "" && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), `pods "`+name+`" is forbidden: `+tc.wantErr)):
					t.Errorf("create: %v, want 403 %q", err, tc.wantErr)
				}
				// The same pod through a server without the plugin is admitted.
				if tc.wantErr != "" {
					pod.Name += "-plain"
					if _, err := s.plain.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						t.Errorf("without SecurityContextDeny: %v", err)
					}
				}
			})
		}
	}

	// A pod created before the plugin was on: its status may change (case
	// 13), any other update is refused (upstream's behaviour, kept).
	old := pausePod("pre-existing", "")
	old.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1)}
	if _, err := s.plain.CoreV1().Pods(ns).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.escalating.CoreV1().Pods(ns).Patch(ctx, old.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pod.Spec.SecurityContext.RunAsUser is forbidden") {
		t.Errorf("label update of a non-compliant pod: %v, want 403", err)
	}
	_, err = s.escalating.CoreV1().Pods(ns).Patch(ctx, old.Name, types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"e2e.turnstile.dev/Checked","status":"True"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Errorf("status update of a non-compliant pod: %v, want admitted", err)
	}

	// Ephemeral containers: upstream never checked them (case 12); the
	// opt-in closes that gap, on the pods/ephemeralcontainers subresource.
	target := pausePod("debug-target", "")
	if _, err := s.plain.CoreV1().Pods(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	debug := func(c kubernetes.Interface, name string, sc *corev1.SecurityContext) error {
		patch := `{"spec":{"ephemeralContainers":[{"name":"` + name + `","image":"busybox","securityContext":` + toJSON(t, sc) + `}]}}`
		_, err := c.CoreV1().Pods(ns).Patch(ctx, target.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
		return err
	}
	if err := debug(s.hardened, "as-root", &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), `ephemeral container "as-root": SecurityContext.RunAsUser is forbidden`) {
		t.Errorf("hardened: ephemeral container running as root: %v, want 403", err)
	}
	if err := debug(s.hardened, "compliant", &corev1.SecurityContext{}); err != nil {
		t.Errorf("hardened: compliant ephemeral container: %v", err)
	}
	if err := debug(s.escalating, "as-root", &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}); err != nil {
		t.Errorf("historic: ephemeral container running as root: %v, want admitted as upstream did", err)
	}
	// The opt-in leaves the historic checks in force on the hardened server.
	fsGroup := pausePod("hardened-fsgroup", "")
	fsGroup.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1)}
	if _, err := s.hardened.CoreV1().Pods(ns).Create(ctx, fsGroup, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("hardened: pod with fsGroup: %v, want 403", err)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const (
	privilegedMsg = "cannot exec into or attach to a privileged container"
	hostPIDMsg    = "cannot exec into or attach to a container using host pid"
	hostIPCMsg    = "cannot exec into or attach to a container using host ipc"
	hostNetMsg    = "cannot exec into or attach to a container using host network"
)

func testExec(t *testing.T, s restoredServers, ns string) {
	ctx := context.Background()
	privileged := &corev1.SecurityContext{Privileged: ptr.To(true)}
	pods := map[string]func(*corev1.Pod){
		"plain":      func(*corev1.Pod) {},
		"privileged": func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = privileged },
		"init-privileged": func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: privileged}}
		},
		"host-pid":     func(p *corev1.Pod) { p.Spec.HostPID = true },
		"host-ipc":     func(p *corev1.Pod) { p.Spec.HostIPC = true },
		"host-network": func(p *corev1.Pod) { p.Spec.HostNetwork = true },
		"host-network-privileged": func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].SecurityContext = privileged
		},
		"privileged-false": func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(false)}
		},
		"ephemeral": func(*corev1.Pod) {}, // gets a privileged ephemeral container below
		"host-process": func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
		},
	}
	for name, change := range pods {
		pod := pausePod(name, "")
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "b", Image: "busybox"})
		change(pod)
		if _, err := s.plain.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
	}
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox","securityContext":{"privileged":true}}]}}`
	if _, err := s.plain.CoreV1().Pods(ns).Patch(ctx, "ephemeral", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		t.Fatalf("adding a privileged ephemeral container: %v", err)
	}

	// Each row targets a container; the three outcomes are DenyEscalatingExec
	// and DenyExecOnPrivileged as upstream had them, and DenyExecOnPrivileged
	// with perContainer and treatHostProcessAsPrivileged. "" admits.
	rows := []struct {
		pod, container                   string
		escalating, privileged, hardened string
	}{
		{"plain", "pause", "", "", ""},
		{"privileged", "pause", privilegedMsg, privilegedMsg, privilegedMsg},
		{"privileged", "b", privilegedMsg, privilegedMsg, ""}, // per pod upstream; perContainer reaches b
		{"init-privileged", "pause", privilegedMsg, privilegedMsg, ""},
		{"host-pid", "pause", hostPIDMsg, "", ""},
		{"host-ipc", "pause", hostIPCMsg, "", ""},
		{"host-network", "pause", hostNetMsg, "", ""},
		{"host-network-privileged", "pause", hostNetMsg, privilegedMsg, privilegedMsg},
		{"privileged-false", "pause", "", "", ""},
		{"ephemeral", "pause", privilegedMsg, privilegedMsg, ""},
		{"ephemeral", "debugger", privilegedMsg, privilegedMsg, privilegedMsg},
		{"host-process", "pause", hostNetMsg, "", privilegedMsg}, // treatHostProcessAsPrivileged
	}
	for _, row := range rows {
		for _, sub := range []string{"exec", "attach"} {
			for server, want := range map[string]string{"escalating": row.escalating, "privileged": row.privileged, "hardened": row.hardened} {
				c := map[string]kubernetes.Interface{"escalating": s.escalating, "privileged": s.privileged, "hardened": s.hardened}[server]
				t.Run(strings.Join([]string{row.pod, row.container, sub, server}, "/"), func(t *testing.T) {
					expectConnect(t, c, ns, row.pod, sub, row.container, want)
				})
			}
			// Without the plugins the request is always admitted.
			expectConnect(t, s.plain, ns, row.pod, sub, row.container, "")
		}
	}

	// Spec case 14: a pod that does not exist.
	expectConnect(t, s.escalating, ns, "ghost", "exec", "pause", `pods "ghost" not found`)
	// Spec case 15: port-forward is not checked.
	expectConnect(t, s.escalating, ns, "privileged", "portforward", "", "")
}

// expectConnect sends a CONNECT to a pod subresource. Admission runs before
// the apiserver looks for the pod's node, so an admitted request fails
// afterwards for lack of one; a denied request gets 403 with the reason.
func expectConnect(t *testing.T, c kubernetes.Interface, ns, pod, sub, container, wantDenied string) {
	t.Helper()
	req := c.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource(sub)
	switch sub {
	case "exec":
		req = req.Param("container", container).Param("command", "true").Param("stdout", "true")
	case "attach":
		req = req.Param("container", container).Param("stdout", "true")
	case "portforward":
		req = req.Param("ports", "80")
	}
	err := req.Do(context.Background()).Error()
	denied := apierrors.IsForbidden(err)
	admitted := apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "does not have a host assigned")
	switch {
	case wantDenied == "" && !admitted:
		t.Errorf("%s %s/%s: got %v, want admitted (then refused: no host assigned)", sub, pod, container, err)
	case wantDenied != "" && !(denied && strings.Contains(err.Error(), `pods "`+pod+`" is forbidden: `) && strings.Contains(err.Error(), wantDenied)):
		t.Errorf("%s %s/%s: got %v, want 403 %q", sub, pod, container, err, wantDenied)
	}
}

// A typo in a restored plugin's configuration stops the apiserver with an
// error naming the plugin and the field.
func TestRestoredPluginConfigTypo(t *testing.T) {
	config, err := filepath.Abs("testdata/exec-typo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, configCheckArgs(t, "--enable-admission-plugins=DenyEscalatingExec", "--admission-control-config-file="+config), `DenyEscalatingExec: invalid configuration (want apiVersion exec.admission.turnstile.dev/v1alpha1, kind ExecConfiguration): strict decoding error: unknown field "perContainers"`)
}
