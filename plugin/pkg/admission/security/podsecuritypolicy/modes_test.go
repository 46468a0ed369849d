// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"io"
	"strings"
	"sync"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy/apis/v1alpha1"
)

// warnings records the warnings a request gets, as the apiserver's
// recorder would send them to the client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// In warn and audit modes the plugin refuses nothing and changes nothing;
// it tells the client (warn) or the audit log (audit) what enforce would
// have refused, per policy with its fields, and which fields a policy's
// defaults would have set.
func TestModes(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	plain := func(*api.Pod) {}
	privileged := func(pod *api.Pod) {
		pod.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr.To(true)}
	}
	// What restricted would default, so that it admits the pod unchanged.
	compliant := func(pod *api.Pod) {
		pod.Spec.SecurityContext = &api.PodSecurityContext{
			FSGroup: ptr.To[int64](1), SupplementalGroups: []int64{1},
			SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
		}
		pod.Spec.Containers[0].SecurityContext = &api.SecurityContext{
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &api.Capabilities{Drop: []api.Capability{"ALL"}},
		}
	}
	const refusal = `PodSecurityPolicy: unable to admit pod: policy "restricted": [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed`
	const fields = `spec.containers[0].securityContext.allowPrivilegeEscalation, ` +
		`spec.containers[0].securityContext.capabilities.drop, spec.containers[0].securityContext.runAsNonRoot, ` +
		`spec.securityContext.fsGroup, spec.securityContext.seccompProfile.type, spec.securityContext.supplementalGroups`
	const defaults = `PodSecurityPolicy: policy "restricted" would set ` + fields
	cases := []struct {
		name      string
		mode      v1alpha1.Mode
		edit      func(*api.Pod)
		wantErr   string // enforce's refusal
		wantWarn  string // the one warning, "" for none
		wantAudit map[string]string
	}{
		{name: "enforce refuses", mode: v1alpha1.Enforce, edit: privileged, wantErr: "PodSecurityPolicy: unable to admit pod: [spec.containers[0].securityContext.privileged"},
		{name: "warn admits and tells why enforce would not", mode: v1alpha1.Warn, edit: privileged, wantWarn: refusal},
		{name: "warn names the defaults it does not apply", mode: v1alpha1.Warn, edit: plain, wantWarn: defaults},
		{name: "warn is silent about a pod enforce admits unchanged", mode: v1alpha1.Warn, edit: compliant},
		{name: "audit admits and records why enforce would not", mode: v1alpha1.Audit, edit: privileged,
			wantAudit: map[string]string{violationsKey: strings.TrimPrefix(refusal, "PodSecurityPolicy: ")}},
		{name: "audit records the defaults it does not apply", mode: v1alpha1.Audit, edit: plain,
			wantAudit: map[string]string{mutationsKey: strings.TrimPrefix(defaults, "PodSecurityPolicy: ")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := loadExamples(t)
			p.mode = tc.mode
			pod := &api.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
				Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "nginx"}}},
			}
			tc.edit(pod)
			sent := pod.DeepCopy()
			r := newRequest(t, admission.Create, pod, nil, "team-a", "", alice)
			var w warnings
			r.ctx = warning.WithWarningRecorder(r.ctx, &w)
			err := r.admit(p)
			if err == nil {
				err = r.validate(p)
			}
			if tc.wantErr != "" {
				wantForbidden(t, "admit", err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("%s refused: %v", tc.mode, err)
			}
			if !apiequality.Semantic.DeepEqual(pod, sent) {
				t.Errorf("%s changed the pod:\nsent %+v\ngot  %+v", tc.mode, sent, pod)
			}
			switch {
			case tc.wantWarn == "" && len(w.list) != 0:
				t.Errorf("warnings %q, want none", w.list)
			case tc.wantWarn != "" && (len(w.list) != 1 || !strings.HasPrefix(w.list[0], tc.wantWarn)):
				t.Errorf("warnings %q, want one starting %q", w.list, tc.wantWarn)
			}
			got := r.audit()
			for key, want := range tc.wantAudit {
				if !strings.HasPrefix(got[key], want) {
					t.Errorf("audit annotation %s = %q, want it to start %q", key, got[key], want)
				}
			}
			for _, key := range []string{violationsKey, mutationsKey, admitPolicyKey} {
				if _, wanted := tc.wantAudit[key]; !wanted && got[key] != "" {
					t.Errorf("audit annotation %s = %q, want none", key, got[key])
				}
			}
		})
	}
}

// An update judged in warn mode is reported, not refused; a pod created
// under warn carries no kubernetes.io/psp, so only a policy that admits it
// unchanged would do.
func TestWarnModeUpdate(t *testing.T) {
	p := loadExamples(t)
	p.mode = v1alpha1.Warn
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	old := &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "web", Image: "nginx"}}},
	}
	pod := old.DeepCopy()
	pod.Labels = map[string]string{"tier": "web"}
	r := newRequest(t, admission.Update, pod, old, "team-a", "", alice)
	var w warnings
	r.ctx = warning.WithWarningRecorder(r.ctx, &w)
	if err := r.validate(p); err != nil {
		t.Fatalf("warn refused an update: %v", err)
	}
	want := `PodSecurityPolicy: unable to validate pod: policy "restricted": would have to set spec.containers[0].securityContext.allowPrivilegeEscalation, `
	if len(w.list) != 1 || !strings.HasPrefix(w.list[0], want) {
		t.Errorf("warnings %q, want the refusal enforce would give", w.list)
	}
}

// Instances of one registration share their caches: a reload's instance
// serves from the policies the first one loaded. A bad mode names the
// plugin and the field.
func TestRegisteredInstancesShareCaches(t *testing.T) {
	factory := newFactory(podsecuritypolicy.NewEngine())
	build := func(config string) (*Plugin, error) {
		var r io.Reader
		if config != "" {
			r = strings.NewReader(config)
		}
		p, err := factory(r)
		if err != nil {
			return nil, err
		}
		return p.(*Plugin), nil
	}
	const header = "apiVersion: podsecuritypolicy.admission.turnstile.dev/v1alpha1\nkind: PodSecurityPolicyConfiguration\n"
	first, err := build("")
	if err != nil {
		t.Fatal(err)
	}
	second, err := build(header + "mode: warn\n")
	if err != nil {
		t.Fatal(err)
	}
	if first.mode != v1alpha1.Enforce || second.mode != v1alpha1.Warn {
		t.Errorf("modes %q, %q, want enforce, warn", first.mode, second.mode)
	}
	if first.engine != second.engine {
		t.Error("two instances of one registration have caches of their own")
	}
	for config, want := range map[string]string{
		header + "mode: warm\n":  `PodSecurityPolicy: mode: Unsupported value: "warm": supported values: "enforce", "warn", "audit"`,
		header + "modes: warn\n": `PodSecurityPolicy: invalid configuration (want apiVersion podsecuritypolicy.admission.turnstile.dev/v1alpha1, kind PodSecurityPolicyConfiguration): strict decoding error: unknown field "modes"`,
	} {
		if _, err := build(config); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", config, err, want)
		}
	}
}
