// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package podsecuritypolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/security/podsecuritypolicy"
)

// grant lets a user (by name) use a policy in a namespace ("" for every
// namespace, as a ClusterRoleBinding does) through an API group ("" for
// both policy and extensions).
type grant struct{ user, namespace, group, policy string }

// fakeAuthorizer allows the verb use on podsecuritypolicies as its grants
// say, or on every policy when allowAll is set. It has no opinion on any
// other request, so a plugin that asks the wrong question is denied.
type fakeAuthorizer struct {
	allowAll bool
	grants   []grant
}

var allowAll = &fakeAuthorizer{allowAll: true}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	group := a.GetAPIGroup()
	if a.GetVerb() != "use" || a.GetResource() != "podsecuritypolicies" || a.GetSubresource() != "" ||
		!a.IsResourceRequest() || a.GetAPIVersion() != "*" || (group != "policy" && group != "extensions") {
		return authorizer.DecisionNoOpinion, "not the use of a podsecuritypolicy", nil
	}
	if f.allowAll {
		return authorizer.DecisionAllow, "", nil
	}
	for _, g := range f.grants {
		if g.user == a.GetUser().GetName() && g.policy == a.GetName() &&
			(g.namespace == "" || g.namespace == a.GetNamespace()) && (g.group == "" || g.group == group) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// testUser is the requesting user unless a case says otherwise.
var testUser user.Info = &user.DefaultInfo{Name: "test"}

// newTestPlugin returns a plugin whose cache holds psps, as if the informer
// had delivered them, with no ready func (so it never waits).
func newTestPlugin(authz authorizer.Authorizer, psps ...*policy.PodSecurityPolicy) *Plugin {
	p := NewPlugin()
	if authz == nil {
		authz = allowAll
	}
	p.SetAuthorizer(authz)
	for _, psp := range psps {
		p.engine.Set(psp.DeepCopy())
	}
	return p
}

// request is one admission request. Both phases see the same attributes,
// as in the apiserver, so Validate judges what Admit left. The plugin runs
// behind admission.WithAudit in a context with an audit event, so the
// audit annotations are read back from the event as the apiserver logs
// them.
type request struct {
	ctx   context.Context
	attrs admission.Attributes
}

func newRequest(t *testing.T, op admission.Operation, obj, old runtime.Object, namespace, subresource string, u user.Info) *request {
	t.Helper()
	ctx := audit.WithAuditContext(context.Background())
	if err := audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelMetadata}, nil); err != nil {
		t.Fatal(err)
	}
	var opts runtime.Object = &metav1.CreateOptions{}
	if op == admission.Update {
		opts = &metav1.UpdateOptions{}
	}
	name := ""
	if pod, ok := obj.(*api.Pod); ok {
		name = pod.Name
	}
	attrs := admission.NewAttributesRecord(obj, old, api.Kind("Pod").WithVersion("version"), namespace, name,
		api.Resource("pods").WithVersion("version"), subresource, op, opts, false, u)
	return &request{ctx: ctx, attrs: attrs}
}

func (r *request) admit(p *Plugin) error {
	return admission.WithAudit(p).(admission.MutationInterface).Admit(r.ctx, r.attrs, nil)
}

func (r *request) validate(p *Plugin) error {
	return admission.WithAudit(p).(admission.ValidationInterface).Validate(r.ctx, r.attrs, nil)
}

// audit returns the request's audit annotations.
func (r *request) audit() map[string]string {
	return audit.AuditContextFrom(r.ctx).GetEventAnnotations()
}

// wantAudit checks the request's audit annotations: the policy Admit and
// Validate chose, "" for none.
func (r *request) wantAudit(t *testing.T, admitPolicy, validatePolicy string) {
	t.Helper()
	want := map[string]string{}
	if admitPolicy != "" {
		want[admitPolicyKey] = admitPolicy
	}
	if validatePolicy != "" {
		want[validatePolicyKey] = validatePolicy
	}
	got := r.audit()
	if got == nil {
		got = map[string]string{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit annotations (-want +got):\n%s", diff)
	}
}

// wantForbidden checks that err is a 403 whose message has every substring.
func wantForbidden(t *testing.T, phase string, err error, substrings ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s allowed the request, want it forbidden (%q)", phase, substrings)
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want a Forbidden error", phase, err)
	}
	for _, s := range substrings {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not contain %q", phase, err, s)
		}
	}
}

// createCase is a pod creation, judged by Admit then by Validate on Admit's
// output, as v1.24's apiserver ran them.
type createCase struct {
	spec  int
	name  string
	psps  []*policy.PodSecurityPolicy
	pod   *api.Pod
	authz authorizer.Authorizer // nil: allow everything
	// user is the requester; testUser when nil unless noUser is set.
	user   user.Info
	noUser bool
	// wantPSP is the policy Admit and Validate choose, "" when both must
	// refuse the pod.
	wantPSP string
	// wantErrs are substrings of the errors of a refused pod, without the
	// "unable to admit pod"/"unable to validate pod" prefix.
	wantErrs []string
	// want makes a copy of pod into the pod Admit must return, but for the
	// kubernetes.io/psp annotation. nil: Admit changes nothing else.
	want func(*api.Pod)
}

func (c *createCase) title() string { return caseName(c.spec, c.name) }

// caseName names a subtest after its conformance case; spec 0 is a test
// beyond the 48 cases.
func caseName(spec int, name string) string {
	if spec == 0 {
		return name
	}
	return fmt.Sprintf("case %d %s", spec, name)
}

func (c *createCase) requester() user.Info {
	switch {
	case c.noUser:
		return nil
	case c.user != nil:
		return c.user
	}
	return testUser
}

// run admits c.pod: Admit, then Validate on the same attributes.
func (c *createCase) run(t *testing.T) {
	t.Helper()
	p := newTestPlugin(c.authz, c.psps...)
	pod := c.pod.DeepCopy()
	r := newRequest(t, admission.Create, pod, nil, pod.Namespace, "", c.requester())
	admitErr := r.admit(p)
	if c.wantPSP == "" {
		wantForbidden(t, "Admit", admitErr, append([]string{"PodSecurityPolicy: unable to admit pod: ["}, c.wantErrs...)...)
		if diff := cmp.Diff(c.pod, pod); diff != "" {
			t.Errorf("Admit changed the pod it refused (-before +after):\n%s", diff)
		}
		// Whatever Admit refuses, Validate refuses too, with the same errors:
		// a policy that accepts the pod unchanged would have been chosen.
		validateErr := r.validate(p)
		wantForbidden(t, "Validate", validateErr, append([]string{"PodSecurityPolicy: unable to validate pod: ["}, c.wantErrs...)...)
		if admitErr != nil && validateErr != nil {
			admitList := strings.SplitN(admitErr.Error(), "unable to admit pod: ", 2)
			validateList := strings.SplitN(validateErr.Error(), "unable to validate pod: ", 2)
			if len(admitList) == 2 && len(validateList) == 2 && admitList[1] != validateList[1] {
				t.Errorf("Admit and Validate report different errors:\nAdmit:    %s\nValidate: %s", admitList[1], validateList[1])
			}
		}
		r.wantAudit(t, "", "")
		return
	}
	if admitErr != nil {
		t.Fatalf("Admit: %v", admitErr)
	}
	want := c.pod.DeepCopy()
	if c.want != nil {
		c.want(want)
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[podsecuritypolicy.ValidatedPSPAnnotation] = c.wantPSP
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("Admit's pod (-want +got):\n%s", diff)
	}
	if err := r.validate(p); err != nil {
		t.Errorf("Validate of Admit's output: %v", err)
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("Validate changed the pod (-want +got):\n%s", diff)
	}
	r.wantAudit(t, c.wantPSP, c.wantPSP)
}

// updateCase is a pod update (or an update of a subresource): Admit must
// leave it alone, Validate judges it.
type updateCase struct {
	spec        int
	name        string
	psps        []*policy.PodSecurityPolicy
	old, pod    *api.Pod
	subresource string
	authz       authorizer.Authorizer
	// ignored: the plugin does not judge the request at all.
	ignored bool
	// wantPSP is the policy Validate chooses, "" when it must refuse.
	wantPSP  string
	wantErrs []string
}

func (c *updateCase) run(t *testing.T) {
	t.Helper()
	p := newTestPlugin(c.authz, c.psps...)
	pod := c.pod.DeepCopy()
	r := newRequest(t, admission.Update, pod, c.old.DeepCopy(), pod.Namespace, c.subresource, testUser)
	if err := r.admit(p); err != nil {
		t.Errorf("Admit of an update: %v", err)
	}
	if diff := cmp.Diff(c.pod, pod); diff != "" {
		t.Errorf("Admit changed an update (-before +after):\n%s", diff)
	}
	err := r.validate(p)
	switch {
	case c.ignored:
		if err != nil {
			t.Errorf("Validate of an ignored request: %v", err)
		}
		r.wantAudit(t, "", "")
	case c.wantPSP != "":
		if err != nil {
			t.Errorf("Validate: %v", err)
		}
		r.wantAudit(t, "", c.wantPSP)
	default:
		wantForbidden(t, "Validate", err, append([]string{"PodSecurityPolicy: unable to validate pod: ["}, c.wantErrs...)...)
		r.wantAudit(t, "", "")
	}
	if diff := cmp.Diff(c.pod, pod); diff != "" {
		t.Errorf("Validate changed the pod (-before +after):\n%s", diff)
	}
}
