// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/test/e2e/framework"
)

var pspGVR = schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}

const (
	pspRuntimeConfig = "--runtime-config=policy/v1beta1/podsecuritypolicies=true"
	pspTestdata      = "testdata/podsecuritypolicy"
	// pspDeprecation is the apiserver's warning to a client of a
	// deprecated API; v1.24 added ", unavailable in v1.25+", which this
	// build, serving it, does not say.
	pspDeprecation = "policy/v1beta1 PodSecurityPolicy is deprecated in v1.21+"
	// pspServed is Turnstile's own (policyserver.ServedWarning), written
	// out so that a change to it shows here.
	pspServed = "policy/v1beta1 PodSecurityPolicy was removed from upstream Kubernetes in v1.25; this Turnstile build serves it (kubectl psp report and convert help to leave it)"
)

func pspObject(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"e2e": "psp"}},
		"spec":     spec,
	}}
}

func minimalPSPSpec() map[string]any {
	return map[string]any{
		"seLinux":            map[string]any{"rule": "RunAsAny"},
		"runAsUser":          map[string]any{"rule": "RunAsAny"},
		"supplementalGroups": map[string]any{"rule": "RunAsAny"},
		"fsGroup":            map[string]any{"rule": "RunAsAny"},
		"volumes":            []any{"configMap"},
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pspTestdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPodSecurityPolicyAPI serves policy/v1beta1 podsecuritypolicies by
// --runtime-config on its own etcd prefix and drives it with client-go,
// raw HTTP, etcd and kubectl.
func TestPodSecurityPolicyAPI(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	const name = "psp-api"
	s, kube := startServer(t, name, pspRuntimeConfig)
	cfg, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	warnings := &policyWarnings{}
	cfg.WarningHandler = warnings
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(pspGVR)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "admin.conf")
	if err := s.WriteKubeconfig(kubeconfig, "e2e-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		return runBinary(t, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}

	t.Run("v1.24 etcd data read, updated and deleted", func(t *testing.T) {
		var kvs []struct{ Key, ValueBase64 string }
		if err := json.Unmarshal(readTestdata(t, "psp-v1.24-etcd.json"), &kvs); err != nil {
			t.Fatal(err)
		}
		var served struct {
			Items []map[string]any `json:"items"`
		}
		if err := yaml.Unmarshal(readTestdata(t, "psp-v1.24-served.yaml"), &served); err != nil {
			t.Fatal(err)
		}
		ec, err := etcd.Client()
		if err != nil {
			t.Fatal(err)
		}
		defer ec.Close()
		for _, kv := range kvs {
			v, err := base64.StdEncoding.DecodeString(kv.ValueBase64)
			if err != nil {
				t.Fatal(err)
			}
			key := "/" + name + strings.TrimPrefix(kv.Key, "/registry")
			if _, err := ec.Put(ctx, key, string(v)); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range served.Items {
			pspName := want["metadata"].(map[string]any)["name"].(string)
			var got *unstructured.Unstructured
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err = dyn.Get(ctx, pspName, metav1.GetOptions{})
				return err == nil, nil
			}); err != nil {
				t.Fatalf("get %s written as v1.24 bytes: %v", pspName, err)
			}
			if !jsonEqual(got.Object["spec"], want["spec"]) {
				t.Errorf("%s: spec differs from v1.24's:\n got %s\nwant %s", pspName, mustJSON(got.Object["spec"]), mustJSON(want["spec"]))
			}
			if !jsonEqual(got.GetAnnotations(), want["metadata"].(map[string]any)["annotations"]) {
				t.Errorf("%s: annotations %v", pspName, got.GetAnnotations())
			}
			got.SetLabels(map[string]string{"updated": "true"})
			if _, err := dyn.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Errorf("update %s: %v", pspName, err)
			}
			if err := dyn.Delete(ctx, pspName, metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete %s: %v", pspName, err)
			}
		}
		if resp, err := ec.Get(ctx, "/"+name+"/podsecuritypolicy/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
			t.Errorf("keys left after deleting the v1.24 objects: %v %v", err, resp)
		}
	})

	t.Run("every verb", func(t *testing.T) {
		w, err := dyn.Watch(ctx, metav1.ListOptions{LabelSelector: "e2e=psp"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		warnings.take(t, "")

		created, err := dyn.Create(ctx, pspObject("verbs", minimalPSPSpec()), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := warnings.take(t, ""); !slices.Contains(got, pspDeprecation) || !slices.Contains(got, pspServed) {
			t.Errorf("create: 299 warnings %q lack %q or %q", got, pspDeprecation, pspServed)
		}
		if v, _, _ := unstructured.NestedBool(created.Object, "spec", "allowPrivilegeEscalation"); !v {
			t.Errorf("allowPrivilegeEscalation not defaulted to true: %v", created.Object["spec"])
		}
		if _, err := dyn.Create(ctx, pspObject("invalid", map[string]any{"runAsUser": map[string]any{"rule": "Nope"}}), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("invalid create: %v, want Invalid", err)
		}
		got, err := dyn.Get(ctx, "verbs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetNamespace() != "" {
			t.Errorf("namespace %q on a cluster-scoped object", got.GetNamespace())
		}
		if _, err := dyn.Namespace("default").Get(ctx, "verbs", metav1.GetOptions{}); err == nil {
			t.Errorf("namespaced get succeeded for a cluster-scoped resource")
		}
		got.Object["spec"].(map[string]any)["hostIPC"] = true
		if _, err := dyn.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
		patches := []struct {
			pt    types.PatchType
			patch string
			field string
		}{
			{types.JSONPatchType, `[{"op":"add","path":"/spec/hostPID","value":true}]`, "hostPID"},
			{types.MergePatchType, `{"spec":{"hostNetwork":true}}`, "hostNetwork"},
			{types.StrategicMergePatchType, `{"spec":{"privileged":true}}`, "privileged"},
			{types.ApplyPatchType, `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"verbs"},"spec":{"readOnlyRootFilesystem":true}}`, "readOnlyRootFilesystem"},
		}
		for _, p := range patches {
			opts := metav1.PatchOptions{}
			if p.pt == types.ApplyPatchType {
				opts.FieldManager = "e2e-apply"
			}
			out, err := dyn.Patch(ctx, "verbs", p.pt, []byte(p.patch), opts)
			if err != nil {
				t.Errorf("%s patch: %v", p.pt, err)
				continue
			}
			if v, _, _ := unstructured.NestedBool(out.Object, "spec", p.field); !v {
				t.Errorf("%s patch did not set spec.%s: %v", p.pt, p.field, out.Object["spec"])
			}
		}
		if out, err := dyn.Get(ctx, "verbs", metav1.GetOptions{}); err == nil {
			managers := []string{}
			for _, m := range out.GetManagedFields() {
				managers = append(managers, m.Manager)
			}
			if !slices.Contains(managers, "e2e-apply") {
				t.Errorf("managedFields lack the apply manager: %v", managers)
			}
		}
		// Server-side apply conflicts with another manager's field.
		if _, err := dyn.Patch(ctx, "verbs", types.ApplyPatchType, []byte(`{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"verbs"},"spec":{"hostPID":false}}`), metav1.PatchOptions{FieldManager: "other"}); !apierrors.IsConflict(err) {
			t.Errorf("conflicting apply: %v, want Conflict", err)
		}
		for _, n := range []string{"verbs-2", "verbs-3"} {
			if _, err := dyn.Create(ctx, pspObject(n, minimalPSPSpec()), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		warnings.take(t, "")
		list, err := dyn.List(ctx, metav1.ListOptions{LabelSelector: "e2e=psp"})
		if err != nil || len(list.Items) != 3 {
			t.Fatalf("list: %v, %d items", err, len(list.Items))
		}
		if got := warnings.take(t, ""); !slices.Equal(slices.Sorted(slices.Values(got)), []string{pspDeprecation, pspServed}) {
			t.Errorf("list: 299 warnings %q, want exactly %q and %q", got, pspDeprecation, pspServed)
		}
		if err := dyn.Delete(ctx, "verbs", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := dyn.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "e2e=psp"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		if list, err := dyn.List(ctx, metav1.ListOptions{LabelSelector: "e2e=psp"}); err != nil || len(list.Items) != 0 {
			t.Fatalf("list after deletecollection: %v, %v", err, list)
		}
		// The watch saw every change: 3 adds, 1+4 modifications, 3 deletions.
		count := map[watch.EventType]int{}
		timeout := time.After(30 * time.Second)
		for count[watch.Deleted] < 3 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed early: %v", count)
				}
				count[ev.Type]++
			case <-timeout:
				t.Fatalf("watch events so far: %v", count)
			}
		}
		if count[watch.Added] != 3 || count[watch.Modified] != 5 {
			t.Errorf("watch events: %v, want 3 ADDED, 5 MODIFIED, 3 DELETED", count)
		}
	})

	t.Run("stored as protobuf under the etcd prefix", func(t *testing.T) {
		if _, err := dyn.Create(ctx, pspObject("stored", minimalPSPSpec()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer dyn.Delete(ctx, "stored", metav1.DeleteOptions{})
		ec, err := etcd.Client()
		if err != nil {
			t.Fatal(err)
		}
		defer ec.Close()
		resp, err := ec.Get(ctx, "/"+name+"/podsecuritypolicy/stored")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd key: %v %v", err, resp)
		}
		v := resp.Kvs[0].Value
		if !strings.HasPrefix(string(v), "k8s\x00") || !strings.Contains(string(v), "policy/v1beta1") || !strings.Contains(string(v), "PodSecurityPolicy") {
			t.Errorf("stored value is not a policy/v1beta1 protobuf envelope: %q", v)
		}
		// Clients may ask for protobuf too.
		body, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies/stored").
			SetHeader("Accept", "application/vnd.kubernetes.protobuf").DoRaw(ctx)
		if err != nil || !strings.HasPrefix(string(body), "k8s\x00") {
			t.Errorf("protobuf GET: %v %q", err, body)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		var group metav1.APIGroup
		getJSON(t, kube, "/apis/policy", &group)
		versions := []string{}
		for _, v := range group.Versions {
			versions = append(versions, v.GroupVersion)
		}
		if !slices.Equal(versions, []string{"policy/v1", "policy/v1beta1"}) || group.PreferredVersion.GroupVersion != "policy/v1" {
			t.Errorf("/apis/policy: versions %v, preferred %s", versions, group.PreferredVersion.GroupVersion)
		}
		var list, want metav1.APIResourceList
		getJSON(t, kube, "/apis/policy/v1beta1", &list)
		if err := json.Unmarshal(readTestdata(t, "psp-v1.24-discovery-policy-v1beta1.json"), &want); err != nil {
			t.Fatal(err)
		}
		var got, wantPSP *metav1.APIResource
		for i := range list.APIResources {
			if list.APIResources[i].Name == "podsecuritypolicies" {
				got = &list.APIResources[i]
			}
		}
		for i := range want.APIResources {
			if want.APIResources[i].Name == "podsecuritypolicies" {
				wantPSP = &want.APIResources[i]
			}
		}
		if len(list.APIResources) != 1 || got == nil {
			t.Fatalf("/apis/policy/v1beta1: %+v", list.APIResources)
		}
		wantPSP.SingularName = "podsecuritypolicy" // v1.24 left it empty; it is derived since v1.27
		if !jsonEqual(got, wantPSP) {
			t.Errorf("podsecuritypolicies discovery:\n got %s\nwant %s", mustJSON(got), mustJSON(wantPSP))
		}
		var pdb metav1.APIResourceList
		getJSON(t, kube, "/apis/policy/v1", &pdb)
		if len(pdb.APIResources) == 0 || pdb.APIResources[0].Name != "poddisruptionbudgets" {
			t.Errorf("/apis/policy/v1 is not upstream's: %+v", pdb.APIResources)
		}

		body, err := kube.Discovery().RESTClient().Get().AbsPath("/apis").
			SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var agg apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &agg); err != nil {
			t.Fatal(err)
		}
		found := map[string][]string{}
		for _, g := range agg.Items {
			if g.Name != "policy" {
				continue
			}
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					found[v.Version] = append(found[v.Version], r.Resource)
				}
			}
		}
		if !slices.Equal(found["v1"], []string{"poddisruptionbudgets"}) || !slices.Equal(found["v1beta1"], []string{"podsecuritypolicies"}) {
			t.Errorf("aggregated discovery for policy: %v", found)
		}

		out := kubectl(t, "api-resources", "--api-group=policy", "--no-headers")
		if !strings.Contains(out, "podsecuritypolicies") || !strings.Contains(out, "psp") || !strings.Contains(out, "poddisruptionbudgets") {
			t.Errorf("kubectl api-resources --api-group=policy:\n%s", out)
		}
	})

	t.Run("OpenAPI v2 and v3", func(t *testing.T) {
		var defs map[string]any
		if err := json.Unmarshal(readTestdata(t, "psp-v1.24-openapi-v2-definitions.json"), &defs); err != nil {
			t.Fatal(err)
		}
		var v2 struct {
			Definitions map[string]any `json:"definitions"`
			Paths       map[string]any `json:"paths"`
		}
		getJSON(t, kube, "/openapi/v2", &v2)
		for def := range defs {
			if _, ok := v2.Definitions[def]; !ok {
				t.Errorf("/openapi/v2 lacks definition %s", def)
			}
		}
		if _, ok := v2.Paths["/apis/policy/v1beta1/podsecuritypolicies/{name}"]; !ok {
			t.Errorf("/openapi/v2 lacks the podsecuritypolicies paths")
		}
		if _, ok := v2.Paths["/apis/policy/v1/poddisruptionbudgets"]; !ok {
			t.Errorf("/openapi/v2 lost upstream's policy/v1 paths")
		}
		var v3 struct {
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		getJSON(t, kube, "/openapi/v3/apis/policy/v1beta1", &v3)
		if _, ok := v3.Components.Schemas["io.k8s.api.policy.v1beta1.PodSecurityPolicySpec"]; !ok {
			t.Errorf("/openapi/v3/apis/policy/v1beta1 lacks PodSecurityPolicySpec")
		}
		out := kubectl(t, "explain", "psp.spec")
		for _, want := range []string{"GROUP:      policy", "KIND:       PodSecurityPolicy", "VERSION:    v1beta1", "runAsUser", "allowedHostPaths"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain psp.spec lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("kubectl apply, get and auth can-i", func(t *testing.T) {
		manifests := filepath.Join(pspTestdata, "psp-v1.24-manifests.yaml")
		out := kubectl(t, "apply", "-f", manifests)
		for _, want := range []string{"podsecuritypolicy.policy/privileged created", "podsecuritypolicy.policy/restricted created", "podsecuritypolicy.policy/mutating-ranges created"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl apply lacks %q:\n%s", want, out)
			}
		}
		versions := func() map[string]string {
			l, err := dyn.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]string{}
			for _, i := range l.Items {
				m[i.GetName()] = i.GetResourceVersion()
			}
			return m
		}
		before := versions()
		// kubectl reports "restricted configured": its patch sends the
		// false booleans that the v1beta1 JSON omits (v1.24 did the same).
		// Nothing may change in storage, though.
		kubectl(t, "apply", "-f", manifests)
		if after := versions(); !jsonEqual(before, after) {
			t.Errorf("re-applying the unchanged manifests changed objects: %v -> %v", before, after)
		}
		if out := kubectl(t, "apply", "--server-side", "-f", manifests); strings.Count(out, "serverside-applied") != 5 {
			t.Errorf("kubectl apply --server-side:\n%s", out)
		}

		var table metav1.Table
		body, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &table); err != nil {
			t.Fatal(err)
		}
		var want struct {
			ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
			Rows              [][]any                        `json:"rows"`
		}
		if err := json.Unmarshal(readTestdata(t, "psp-v1.24-table.json"), &want); err != nil {
			t.Fatal(err)
		}
		for i := range table.ColumnDefinitions {
			table.ColumnDefinitions[i].Description = "" // the fixture has none
		}
		if !jsonEqual(table.ColumnDefinitions, want.ColumnDefinitions) {
			t.Errorf("columns:\n got %s\nwant %s", mustJSON(table.ColumnDefinitions), mustJSON(want.ColumnDefinitions))
		}
		rows := [][]any{}
		for _, r := range table.Rows {
			rows = append(rows, r.Cells)
		}
		if !jsonEqual(rows, want.Rows) {
			t.Errorf("rows:\n got %s\nwant %s", mustJSON(rows), mustJSON(want.Rows))
		}
		out = kubectl(t, "get", "psp")
		if !strings.HasPrefix(out, "NAME") || !strings.Contains(strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "), "NAME PRIV CAPS SELINUX RUNASUSER FSGROUP SUPGROUP READONLYROOTFS VOLUMES") {
			t.Errorf("kubectl get psp header:\n%s", out)
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "privileged true * RunAsAny RunAsAny RunAsAny RunAsAny false *") {
			t.Errorf("kubectl get psp rows:\n%s", out)
		}

		// The manifests bind `use` of restricted (only) to every authenticated user.
		for _, c := range []struct{ psp, want string }{{"restricted", "yes"}, {"privileged", "no"}} {
			got := runBinaryAllowFail(t, "kubectl", "--kubeconfig", kubeconfig, "auth", "can-i", "use", "podsecuritypolicy/"+c.psp, "--as=alice")
			if strings.TrimSpace(got) != c.want {
				t.Errorf("can-i use podsecuritypolicy/%s as alice: %q, want %s", c.psp, got, c.want)
			}
		}
		kubectl(t, "delete", "-f", manifests)
	})
}

// TestPodSecurityPolicyAPIOffByDefault: without --runtime-config (and
// without the admission plugin) the API is not served and discovery, the
// APIServices and kubectl api-resources are vanilla upstream's (our server
// chain is composed by our command); an explicit false is the same.
func TestPodSecurityPolicyAPIOffByDefault(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	ctx := context.Background()
	on, _ := startServer(t, "psp-on", pspRuntimeConfig)
	_, off := startServer(t, "psp-off", "--runtime-config=policy/v1beta1/podsecuritypolicies=false")
	for name, c := range map[string]kubernetes.Interface{"shared": adminClient(t), "explicitly off": off} {
		_, err := c.Discovery().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies").DoRaw(ctx)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: GET podsecuritypolicies: %v, want 404", name, err)
		}
		var group metav1.APIGroup
		getJSON(t, c, "/apis/policy", &group)
		if len(group.Versions) != 1 || group.Versions[0].GroupVersion != "policy/v1" {
			t.Errorf("%s: /apis/policy lists %+v", name, group.Versions)
		}
	}
	resources := func(s *framework.APIServer) string {
		kubeconfig := filepath.Join(t.TempDir(), "admin.conf")
		if err := s.WriteKubeconfig(kubeconfig, "e2e-admin", "system:masters"); err != nil {
			t.Fatal(err)
		}
		return runBinary(t, "kubectl", "--kubeconfig", kubeconfig, "api-resources")
	}
	vanilla, err := framework.StartAPIServer(framework.APIServerConfig{Binary: "kube-apiserver-upstream", Dir: filepath.Join(root, "psp-vanilla"), Etcd: etcd, PKI: pki})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := vanilla.Stop(os.Interrupt); err != nil {
			t.Error(err)
		}
	}()
	shared, withPSP, upstream := resources(server), resources(on), resources(vanilla)
	if strings.Contains(shared, "podsecuritypolicies") {
		t.Errorf("shared server lists podsecuritypolicies:\n%s", shared)
	}
	if shared != upstream {
		t.Errorf("api-resources of the shared server differ from vanilla upstream's:\n%s", lineDiff(shared, upstream))
	}
	vanillaClient, err := vanilla.Client("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/apis", "/apis/policy", "/apis/policy/v1"} {
		var ours, theirs any
		getJSON(t, adminClient(t), path, &ours)
		getJSON(t, vanillaClient, path, &theirs)
		if !jsonEqual(ours, theirs) {
			t.Errorf("%s differs from vanilla upstream's:\n ours %s\n upstream %s", path, mustJSON(ours), mustJSON(theirs))
		}
	}
	apiServices := func(c kubernetes.Interface) []string {
		var l struct {
			Items []struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"items"`
		}
		getJSON(t, c, "/apis/apiregistration.k8s.io/v1/apiservices", &l)
		var names []string
		for _, i := range l.Items {
			names = append(names, i.Metadata.Name)
		}
		return names
	}
	if ours, theirs := apiServices(adminClient(t)), apiServices(vanillaClient); !slices.Equal(ours, theirs) {
		t.Errorf("APIServices differ from vanilla upstream's:\n ours %v\n upstream %v", ours, theirs)
	}
	var lines []string
	for _, l := range strings.Split(withPSP, "\n") {
		if !strings.HasPrefix(l, "podsecuritypolicies ") {
			lines = append(lines, l)
		}
	}
	if strings.Join(lines, "\n") != shared {
		t.Errorf("api-resources with PSP, minus its line, differ from the shared server's:\n%s", lineDiff(strings.Join(lines, "\n"), shared))
	}
}

// TestPodSecurityPolicyAPIServiceFollowsEnablement: the aggregator's local
// APIService v1beta1.policy exists while PSP is served and is removed by the
// next start without it, on the same etcd prefix.
func TestPodSecurityPolicyAPIServiceFollowsEnablement(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	dir := t.TempDir()
	ctx := context.Background()
	for i, c := range []struct {
		args []string
		want bool
	}{{[]string{pspRuntimeConfig}, true}, {nil, false}} {
		s, err := framework.StartAPIServer(framework.APIServerConfig{
			Dir: filepath.Join(dir, fmt.Sprintf("psp-apiservice-%d", i)), Etcd: etcd, PKI: pki,
			Args: append([]string{"--etcd-prefix=/psp-apiservice"}, c.args...),
		})
		if err != nil {
			t.Fatal(err)
		}
		kube, err := s.Client("e2e-admin", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.policy").DoRaw(ctx)
			got = err == nil
			return got == c.want, nil
		})
		if err != nil {
			t.Errorf("start %d: APIService v1beta1.policy exists: %v, want %v", i+1, got, c.want)
		}
		if err := s.Stop(os.Interrupt); err != nil {
			t.Error(err)
		}
	}
}

// TestPodSecurityPolicyAPIEncryptionAtRest: --encryption-provider-config
// applies to podsecuritypolicies.policy, as to upstream's resources.
func TestPodSecurityPolicyAPIEncryptionAtRest(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	const name = "psp-encrypted"
	config := filepath.Join(t.TempDir(), "encryption.yaml")
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	if err := os.WriteFile(config, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [podsecuritypolicies.policy]
  providers:
  - aescbc:
      keys:
      - name: e2e
        secret: `+key+`
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startServer(t, name, pspRuntimeConfig, "--encryption-provider-config="+config)
	cfg, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(pspGVR)
	ctx := context.Background()
	if _, err := dyn.Create(ctx, pspObject("secret", minimalPSPSpec()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ec, err := etcd.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	resp, err := ec.Get(ctx, "/"+name+"/podsecuritypolicy/secret")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd key: %v %v", err, resp)
	}
	if v := string(resp.Kvs[0].Value); !strings.HasPrefix(v, "k8s:enc:aescbc:v1:e2e:") {
		t.Errorf("stored value is not encrypted: %q", v)
	}
	if got, err := dyn.Get(ctx, "secret", metav1.GetOptions{}); err != nil || got.GetName() != "secret" {
		t.Errorf("get of the encrypted object: %v", err)
	}
}

// TestPodSecurityPolicyAPIEmbeddedEtcd serves the API on
// --embedded-etcd-data-dir.
func TestPodSecurityPolicyAPIEmbeddedEtcd(t *testing.T) {
	t.Parallel() // its own apiserver: see "Running in parallel" in README.md
	dir := t.TempDir()
	s, err := framework.StartAPIServer(framework.APIServerConfig{
		Dir:  filepath.Join(dir, "psp-embedded"),
		PKI:  pki,
		Args: []string{"--embedded-etcd-data-dir=" + filepath.Join(dir, "etcd"), pspRuntimeConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(os.Interrupt); err != nil {
			t.Error(err)
		}
	}()
	cfg, err := s.Config("e2e-admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(pspGVR)
	ctx := context.Background()
	if _, err := dyn.Create(ctx, pspObject("embedded", minimalPSPSpec()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := dyn.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v %v", err, l)
	}
}

func getJSON(t *testing.T, c kubernetes.Interface, path string, into any) {
	t.Helper()
	body, err := c.Discovery().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonEqual compares a and b as JSON documents.
func jsonEqual(a, b any) bool {
	var x, y any
	if err := json.Unmarshal([]byte(mustJSON(a)), &x); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(mustJSON(b)), &y); err != nil {
		return false
	}
	return mustJSON(x) == mustJSON(y)
}
