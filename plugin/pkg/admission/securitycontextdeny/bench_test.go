package securitycontextdeny

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny/apis/v1alpha1"
)

// benchmarkPod is a compliant pod shaped like a typical workload: an init
// container, an app, two sidecars, hardened security contexts, resources.
// Compliant, so every check runs to the end.
func benchmarkPod() *api.Pod {
	container := func(name string) api.Container {
		return api.Container{
			Name:  name,
			Image: "registry.example.com/" + name + ":1.0",
			SecurityContext: &api.SecurityContext{
				RunAsNonRoot:             ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &api.Capabilities{Drop: []api.Capability{"ALL"}},
				SeccompProfile:           &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
			},
			Resources: api.ResourceRequirements{Requests: api.ResourceList{
				api.ResourceCPU: resource.MustParse("100m"), api.ResourceMemory: resource.MustParse("128Mi"),
			}},
		}
	}
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{
			SecurityContext: &api.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsGroup: ptr.To[int64](1000)},
			InitContainers:  []api.Container{container("migrate")},
			Containers:      []api.Container{container("web"), container("proxy"), container("log-shipper")},
			Tolerations:     []api.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: api.TolerationOpExists}},
		},
	}
}

func BenchmarkValidate(b *testing.B) {
	for name, c := range map[string]v1alpha1.SecurityContextDenyConfiguration{
		"historic":                 {},
		"coverEphemeralContainers": {CoverEphemeralContainers: true},
	} {
		b.Run(name, func(b *testing.B) {
			p := New(c)
			a := attrs(benchmarkPod(), "pods", "", admission.Create)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Validate(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
