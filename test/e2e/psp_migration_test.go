// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/pspmigration"
)

// TestPSPMigration is docs/psp-migration.md on a real node. The example
// policies, granted to different service accounts and namespaces, admit
// running workloads of each kind (and refuse two); kubectl psp report's
// levels agree with Pod Security Admission's server dry run, verify finds
// no avoidable disagreement, and convert's output applies. Then
// PodSecurityPolicy only warns, the replacement enforces, and every
// workload is restarted: what PodSecurityPolicy admitted is admitted again,
// with the same security settings, and runs; what it refused is refused
// still; the warnings it gives are the ones expected. `make test-node` runs
// it as root with the images built.
func TestPSPMigration(t *testing.T) {
	t.Parallel() // its own nodes, beside the others': see "Running in parallel" in README.md
	admissionConfig, writeMode := pspModeConfig(t, t.TempDir())
	writeMode("enforce")
	lu := startLocalNodes(t, 1, "-admission-plugins", "PodSecurityPolicy",
		"-pod-security-policies", "../../examples/podsecuritypolicy", "-admission-config", admissionConfig)
	ctx := t.Context()
	adminConfig, err := clientcmd.BuildConfigFromFlags("", lu.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminConfig)
	lu.apply(t, fmt.Sprintf(pspMigrationWorkloads, busybox))

	// What runs under PodSecurityPolicy, and what it refuses.
	running := []struct{ namespace, kind, name, label string }{
		{"apps", "deployment", "web", "web"},
		{"tools", "deployment", "cache", "cache"},
		{"tools", "replicationcontroller", "legacy", "legacy"},
		{"infra", "daemonset", "agent", "agent"},
	}
	waitRunning := func(t *testing.T, ns, label string, since time.Time) []corev1.Pod {
		t.Helper()
		var pods []corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + label})
			if err != nil {
				return false, err
			}
			pods = nil
			for _, p := range list.Items {
				if p.CreationTimestamp.Time.Before(since.Truncate(time.Second)) || p.DeletionTimestamp != nil {
					continue
				}
				if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
					return false, nil
				}
				pods = append(pods, p)
			}
			return len(pods) > 0, nil
		})
		if err != nil {
			t.Fatalf("pods of %s/%s running: %v", ns, label, err)
		}
		return pods
	}
	before := map[string]corev1.Pod{}
	for _, w := range running {
		before[w.namespace+"/"+w.name] = waitRunning(t, w.namespace, w.label, time.Time{})[0]
	}
	waitRunning(t, "tools", "migrate", time.Time{}) // the Job ran
	refusedBy := func(ns, owner string, texts ...string) {
		t.Helper()
		policyEventuallyFor(t, 2*time.Minute, fmt.Sprintf("%s/%s refused (%q)", ns, owner, texts), func() (bool, error) {
			events, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
			if err != nil {
				return false, err
			}
			var seen []string
			for _, e := range events.Items {
				if strings.HasPrefix(e.InvolvedObject.Name, owner) {
					for _, text := range texts {
						if strings.Contains(e.Message, text) {
							return true, nil
						}
					}
					seen = append(seen, e.Message)
				}
			}
			return false, fmt.Errorf("events: %q", seen)
		})
	}
	refusedBy("apps", "escalate", "PodSecurityPolicy: unable to admit pod")
	refusedBy("tools", "netadmin", "PodSecurityPolicy: unable to admit pod")

	psp := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(lu.bin, "kubectl-psp"), append([]string{"--kubeconfig", lu.kubeconfig}, args...)...)
		out, err := cmd.Output()
		return string(out), err
	}
	t.Run("report: each namespace's level, by Pod Security Admission's dry run", func(t *testing.T) {
		out, err := psp("report", "-o", "json")
		if err != nil {
			t.Fatalf("kubectl psp report: %v\n%s", err, out)
		}
		var report pspmigration.Report
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"apps": "restricted", "tools": "baseline", "infra": "privileged"}
		for _, ns := range report.Namespaces {
			level, ok := want[ns.Name]
			if !ok {
				continue
			}
			if string(ns.Enforce) != level {
				t.Errorf("namespace %s: the report says %s, want %s", ns.Name, ns.Enforce, level)
			}
			// The oracle: the server's dry run warns about no running pod
			// at the report's level, and about one at the next.
			dry := func(level string) string {
				return lu.mustKubectl(t, "label", "ns", ns.Name, "--overwrite", "--dry-run=server", "pod-security.kubernetes.io/enforce="+level)
			}
			if got := dry(string(ns.Enforce)); strings.Contains(got, "Warning") {
				t.Errorf("namespace %s at %s, the report's level: %s", ns.Name, ns.Enforce, got)
			}
			if ns.Stricter != "" {
				if got := dry(string(ns.Stricter)); !strings.Contains(got, "Warning") {
					t.Errorf("namespace %s at %s, one stricter than the report's: no warning: %s", ns.Name, ns.Stricter, got)
				}
			}
		}
	})

	t.Run("verify: no avoidable disagreement", func(t *testing.T) {
		out, err := psp("verify")
		if err != nil {
			t.Fatalf("kubectl psp verify: %v\n%s", err, out)
		}
		t.Logf("kubectl psp verify: %s", out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	})

	// ops: a host agent's service account may use privileged, granted
	// before the conversion (the grant a replacement that copied RBAC
	// would keep).
	lu.apply(t, opsNamespace+opsGrant("agent"))
	converted, err := psp("convert")
	if err != nil {
		t.Fatalf("kubectl psp convert: %v", err)
	}
	lu.apply(t, converted)
	for ns, level := range map[string]string{"apps": "restricted", "tools": "baseline", "infra": "privileged"} {
		if got := lu.mustKubectl(t, "get", "ns", ns, "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"); got != level {
			t.Errorf("namespace %s: enforce=%q after kubectl psp convert, want %s", ns, got, level)
		}
	}

	// PodSecurityPolicy reports; the replacement decides. dev is a service
	// account that may create pods in apps, under restricted.
	writeMode("warn")
	token := strings.TrimSpace(lu.mustKubectl(t, "-n", "apps", "create", "token", "dev", "--duration=1h"))
	devUser := userFor(t, lu, token)
	devConfig := rest.CopyConfig(devUser.config)
	warnings := &policyWarnings{}
	devConfig.WarningHandler = warnings
	dev := kubernetes.NewForConfigOrDie(devConfig)
	create := func(pod *corev1.Pod) (*corev1.Pod, error, []string) {
		warnings.mu.Lock()
		warnings.warnings = nil
		warnings.mu.Unlock()
		created, err := dev.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{})
		warnings.mu.Lock()
		defer warnings.mu.Unlock()
		var got []string
		for _, w := range warnings.warnings {
			if strings.HasPrefix(w.text, "PodSecurityPolicy: ") {
				got = append(got, w.text)
			}
		}
		return created, err, got
	}
	t.Run("warn: PodSecurityPolicy warns, the replacement refuses and sets defaults", func(t *testing.T) {
		var told []string
		policyEventually(t, "a privileged pod refused by the replacement with PodSecurityPolicy's warning", func() (bool, error) {
			var err error
			_, err, told = create(sleeper("privileged-"+utilrand.String(5), func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}))
			return err != nil && !strings.Contains(err.Error(), "PodSecurityPolicy") && len(told) > 0, err
		})
		if want := `PodSecurityPolicy: unable to admit pod: policy "restricted": [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed`; len(told) != 1 || !strings.HasPrefix(told[0], want) {
			t.Errorf("warnings %q, want one starting %q", told, want)
		}
		// The MutatingAdmissionPolicies take effect once the apiserver's
		// informers have them, a moment after kubectl apply.
		var plain *corev1.Pod
		policyEventually(t, "a plain pod admitted with restricted's defaults", func() (bool, error) {
			var err error
			plain, err, told = create(sleeper("plain", func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true)}
			}))
			return err == nil, err
		})
		want := `PodSecurityPolicy: policy "restricted" would set spec.containers[0].securityContext.allowPrivilegeEscalation, spec.containers[0].securityContext.capabilities.drop, spec.securityContext.fsGroup, spec.securityContext.seccompProfile.type, spec.securityContext.supplementalGroups`
		if len(told) != 1 || told[0] != want {
			t.Errorf("warnings %q, want %q", told, want)
		}
		// The replacement records its choice as PodSecurityPolicy did.
		if got := plain.Annotations["kubernetes.io/psp"]; got != "restricted" {
			t.Errorf("the replacement recorded %q, want restricted: %v", got, plain.Annotations)
		}
		lu.mustKubectl(t, "-n", "apps", "wait", "--for=condition=Ready", "pod/plain", "--timeout=2m")
	})

	t.Run("every workload restarted", func(t *testing.T) {
		switched := time.Now()
		lu.mustKubectl(t, "-n", "apps", "rollout", "restart", "deployment/web", "deployment/escalate", "statefulset/db")
		lu.mustKubectl(t, "-n", "tools", "rollout", "restart", "deployment/cache")
		lu.mustKubectl(t, "-n", "infra", "rollout", "restart", "daemonset/agent")
		lu.mustKubectl(t, "-n", "tools", "delete", "pods", "-l", "app=legacy", "--wait=false")
		lu.mustKubectl(t, "-n", "tools", "delete", "replicaset", "netadmin")
		lu.apply(t, fmt.Sprintf(pspMigrationWorkloads, busybox)) // netadmin again
		lu.mustKubectl(t, "-n", "apps", "create", "job", "nightly-now", "--from=cronjob/nightly")
		for _, w := range running {
			after := waitRunning(t, w.namespace, w.label, switched)[0]
			old := before[w.namespace+"/"+w.name]
			if a, b := securitySettings(old), securitySettings(after); a != b {
				t.Errorf("%s %s/%s: PodSecurityPolicy gave its pod\n  %s\nthe replacement gives\n  %s", w.kind, w.namespace, w.name, a, b)
			}
			if a, b := old.Annotations["kubernetes.io/psp"], after.Annotations["kubernetes.io/psp"]; a != b {
				t.Errorf("%s/%s: the replacement recorded %q, PodSecurityPolicy %q", w.namespace, w.name, b, a)
			}
		}
		waitRunning(t, "apps", "nightly", switched) // the CronJob's pod ran
		// Refused by the replacement: by Pod Security Admission at the
		// namespace's level, or by the ValidatingAdmissionPolicy (which
		// holds whichever comes first in the chain).
		refusedBy("apps", "escalate", `violates PodSecurity "restricted:latest"`, replacementRefusal)
		refusedBy("tools", "netadmin", `violates PodSecurity "baseline:latest"`, replacementRefusal)
	})

	t.Run("RBAC changed after the conversion: decided as PodSecurityPolicy decides", func(t *testing.T) {
		// A privileged pod of a service account in ops, created (as a
		// dry run: admission runs, nothing is stored) as the DaemonSet
		// controller creates it: only the service account's grant admits
		// it. Both sides are asked at once: the replacement refuses or
		// admits, PodSecurityPolicy (in warn) says whether it would.
		config := rest.CopyConfig(adminConfig)
		config.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:daemon-set-controller",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
		ctrlWarnings := &policyWarnings{}
		config.WarningHandler = ctrlWarnings
		controller := kubernetes.NewForConfigOrDie(config)
		decide := func(sa string) (replacement, podSecurityPolicy string) {
			ctrlWarnings.mu.Lock()
			ctrlWarnings.warnings = nil
			ctrlWarnings.mu.Unlock()
			_, err := controller.CoreV1().Pods("ops").Create(ctx, sleeper("agent-"+utilrand.String(5), func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = sa
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			replacement, podSecurityPolicy = "admitted", "admitted"
			if err != nil {
				replacement = err.Error()
			}
			ctrlWarnings.mu.Lock()
			defer ctrlWarnings.mu.Unlock()
			for _, w := range ctrlWarnings.warnings {
				if strings.HasPrefix(w.text, "PodSecurityPolicy: unable to admit pod") {
					podSecurityPolicy = w.text
				}
			}
			return replacement, podSecurityPolicy
		}
		// want waits for the RBAC change to reach the apiserver's
		// authorizer, then holds both decisions for sa's pod.
		want := func(step, sa string, admitted bool) {
			t.Helper()
			refusal := fmt.Sprintf("no PodSecurityPolicy that system:serviceaccount:kube-system:daemon-set-controller or service account %s may use admits the pod", sa)
			policyEventuallyFor(t, time.Minute, fmt.Sprintf("%s: %s's privileged pod admitted %t by both", step, sa, admitted), func() (bool, error) {
				replacement, podSecurityPolicy := decide(sa)
				if admitted {
					return replacement == "admitted" && podSecurityPolicy == "admitted", fmt.Errorf("replacement %s; PodSecurityPolicy %s", replacement, podSecurityPolicy)
				}
				return strings.Contains(replacement, refusal) && podSecurityPolicy != "admitted", fmt.Errorf("replacement %s; PodSecurityPolicy %s", replacement, podSecurityPolicy)
			})
		}
		want("as converted", "agent", true)
		lu.mustKubectl(t, "-n", "ops", "delete", "rolebinding", "psp-agent")
		want("agent's grant revoked", "agent", false)
		lu.apply(t, opsGrant("agent2"))
		want("a grant made to agent2", "agent2", true)
		lu.mustKubectl(t, "delete", "namespace", "ops", "--timeout=2m")
		lu.apply(t, opsNamespace)
		want("ops made again, without grants", "agent", false)
		want("ops made again, without grants", "agent2", false)
		// verify decides with the RBAC of now, on both sides.
		if out, err := psp("verify"); err != nil {
			t.Errorf("kubectl psp verify after the RBAC changes: %v\n%s", err, out)
		}
	})
}

// opsNamespace is a namespace with two service accounts of host agents;
// opsGrant grants one of them the privileged policy.
const opsNamespace = `apiVersion: v1
kind: Namespace
metadata: {name: ops}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent, namespace: ops}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent2, namespace: ops}
`

func opsGrant(sa string) string {
	return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: psp-%[1]s, namespace: ops}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "psp:privileged"}
subjects:
- {kind: ServiceAccount, name: %[1]s, namespace: ops}
`, sa)
}

// replacementRefusal is how the ValidatingAdmissionPolicy that kubectl psp
// convert writes refuses a ReplicaSet's pods.
const replacementRefusal = "ValidatingAdmissionPolicy 'podsecuritypolicy-replacement' with binding 'podsecuritypolicy-replacement' denied request: no PodSecurityPolicy that system:serviceaccount:kube-system:replicaset-controller or service account default may use admits the pod"

// securitySettings is what PodSecurityPolicy's defaults and the
// replacement's both set: the pod's and its containers' security contexts.
func securitySettings(p corev1.Pod) string {
	var containers []*corev1.SecurityContext
	for _, c := range p.Spec.Containers {
		containers = append(containers, c.SecurityContext)
	}
	data, err := json.Marshal(struct {
		Pod        *corev1.PodSecurityContext
		Containers []*corev1.SecurityContext
	}{p.Spec.SecurityContext, containers})
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// policyEventuallyFor is policyEventually with a longer wait.
func policyEventuallyFor(t *testing.T, timeout time.Duration, what string, condition func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(context.Context) (bool, error) {
		done, err := condition()
		last = err
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// pspMigrationWorkloads are three namespaces under the example policies:
// apps under restricted (granted to everyone), tools under baseline (its
// service accounts), infra's agent under privileged; a workload of each
// kind, running, scaled to zero or suspended, and two PodSecurityPolicy
// refuses. %[1]s is the busybox image.
const pspMigrationWorkloads = `apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: v1
kind: Namespace
metadata: {name: tools}
---
apiVersion: v1
kind: Namespace
metadata: {name: infra}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: psp-baseline, namespace: tools}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: psp:baseline}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:serviceaccounts:tools"}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent, namespace: infra}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: psp-privileged, namespace: infra}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: psp:privileged}
subjects: [{kind: ServiceAccount, name: agent, namespace: infra}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: dev, namespace: apps}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pods, namespace: apps}
rules: [{apiGroups: [""], resources: [pods], verbs: [create, get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dev, namespace: apps}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pods}
subjects: [{kind: ServiceAccount, name: dev, namespace: apps}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"], securityContext: {runAsUser: 1000, runAsNonRoot: true}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: escalate, namespace: apps}
spec:
  selector: {matchLabels: {app: escalate}}
  template:
    metadata: {labels: {app: escalate}}
    spec:
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"], securityContext: {privileged: true}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: apps}
spec:
  replicas: 0
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"], securityContext: {runAsUser: 1000, runAsNonRoot: true}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: apps}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        metadata: {labels: {app: nightly}}
        spec:
          restartPolicy: Never
          containers: [{name: c, image: %[1]s, command: ["true"], securityContext: {runAsUser: 1000, runAsNonRoot: true}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache, namespace: tools}
spec:
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: tools}
spec:
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: tools}
spec:
  template:
    metadata: {labels: {app: migrate}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: %[1]s, command: ["true"]}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: netadmin, namespace: tools}
spec:
  selector: {matchLabels: {app: netadmin}}
  template:
    metadata: {labels: {app: netadmin}}
    spec:
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"], securityContext: {capabilities: {add: [NET_ADMIN]}}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: infra}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      serviceAccountName: agent
      hostNetwork: true
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: %[1]s, command: [sleep, "3600"], securityContext: {privileged: true}}]
`
