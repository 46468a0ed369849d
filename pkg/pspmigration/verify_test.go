package pspmigration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
	psaapi "k8s.io/pod-security-admission/api"

	pspadmission "github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy"
)

// withTestdata is the examples and testdata/policies.yaml: every field
// the conversion handles, granted cluster-wide and in one namespace.
func withTestdata(t testing.TB) ([]runtime.Object, []runtime.Object) {
	return decode(t, "../../examples/podsecuritypolicy/policies.yaml", "../../examples/podsecuritypolicy/rbac.yaml", "testdata/policies.yaml")
}

// verifySetup loads the examples and testdata/policies.yaml, converts
// them for three namespaces (kube-system, team, apps), and loads the
// replacement into a Judge that the test closes.
func verifySetup(t testing.TB) (*pspadmission.Decider, *RBAC, *Judge) {
	t.Helper()
	decider, rbac := load(t, withTestdata)
	report := &Report{Namespaces: []Namespace{
		{Name: "kube-system", Enforce: psaapi.LevelPrivileged},
		{Name: "team", Enforce: psaapi.LevelPrivileged},
		{Name: "apps", Enforce: psaapi.LevelRestricted},
	}}
	r, err := Convert(context.Background(), decider.Policies(), rbac, report, true)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(r, upstreamSchemas(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(judge.Close)
	return decider, rbac, judge
}

// The generated replacement, run by upstream's admission policy plugins
// and Pod Security Admission, decides every corpus pod of every policy as
// PodSecurityPolicy does, for each principal each policy is granted to;
// only Pod Security Admission's per-namespace level may differ, and is
// named.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	decider, rbac, judge := verifySetup(t)
	v, err := Verify(ctx, decider, judge, rbac, nil, []string{"kube-system", "team", "apps"})
	if err != nil {
		t.Fatal(err)
	}
	unavoidable := 0
	for _, d := range v.Disagreements {
		if d.Unavoidable != "" {
			unavoidable++
			continue
		}
		t.Errorf("%s in %s as %s:\n  PodSecurityPolicy: %s\n  replacement: %s %v", d.Case, d.Namespace, d.Requester, d.PodSecurityPolicy, d.Replacement, d.Fields)
	}
	t.Logf("%d cases, %d unavoidable disagreements", v.Cases, unavoidable)
}

// upstreamSchemas serves the OpenAPI v3 documents k8s.io/kubernetes
// publishes for its release (api/openapi-spec/v3), the ones its apiserver
// serves, from the module this tree builds against.
func upstreamSchemas(t testing.TB) openapi.Client {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("finding the k8s.io/kubernetes module: %v", err)
	}
	return openapitest.NewFileClient(filepath.Join(strings.TrimSpace(string(out)), "api", "openapi-spec", "v3"))
}

// Where the cluster serves no MutatingAdmissionPolicies, convert writes no
// mutating policy and says, per workload, what its manifest must set; and
// with no policy to convert it writes nothing.
func TestConvertWithoutMutatingPolicies(t *testing.T) {
	ctx := context.Background()
	decider, rbac := load(t, examples)
	report := &Report{
		Namespaces: []Namespace{{Name: "apps", Enforce: psaapi.LevelRestricted}},
		Workloads:  []Entry{{Kind: "Deployment", Namespace: "apps", Name: "web", Changes: []string{"spec.containers[0].securityContext.runAsNonRoot"}}},
	}
	r, err := Convert(ctx, decider.Policies(), rbac, report, false)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteYAML(&out, r); err != nil {
		t.Fatal(err)
	}
	yaml := out.String()
	for _, want := range []string{
		"#   Deployment/apps/web: spec.containers[0].securityContext.runAsNonRoot\n",
		"kind: ValidatingAdmissionPolicy\n",
		"kind: ValidatingAdmissionPolicyBinding\n",
		"pod-security.kubernetes.io/enforce: restricted\n",
	} {
		if !strings.Contains(yaml, want) {
			t.Errorf("convert's output lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(yaml, "MutatingAdmissionPolicy") {
		t.Errorf("a mutating policy for a cluster that serves none:\n%s", yaml)
	}
	if _, err := Convert(ctx, nil, rbac, report, true); err == nil || !strings.Contains(err.Error(), "no PodSecurityPolicy can be applied") {
		t.Errorf("converting no policy: %v", err)
	}
}

// BenchmarkVerify is one kubectl psp verify of the example policies and
// testdata/policies.yaml (1,928 decisions, each made twice), the
// replacement already loaded.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	decider, rbac, judge := verifySetup(b)
	for b.Loop() {
		if _, err := Verify(ctx, decider, judge, rbac, nil, []string{"kube-system", "team", "apps"}); err != nil {
			b.Fatal(err)
		}
	}
}
