package exec

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec/apis/v1alpha1"
)

// benchmarkPod is an admitted pod shaped like a typical workload: an init
// container, an app and two sidecars with hardened security contexts.
func benchmarkPod() *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name:  name,
			Image: "registry.example.com/" + name + ":1.0",
			SecurityContext: &corev1.SecurityContext{
				Privileged:               ptr.To(false),
				RunAsNonRoot:             ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("migrate")},
			Containers:     []corev1.Container{container("web"), container("proxy"), container("log-shipper")},
		},
	}
}

// The pod is in the lister, as it is for any pod older than a watch event;
// the benchmark fails if the request path makes an API call.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range []struct {
		name   string
		checks Checks
		config v1alpha1.ExecConfiguration
		target string
	}{
		{name: "DenyEscalatingExec", checks: escalating},
		{name: "DenyExecOnPrivileged", checks: privileged},
		{name: "DenyEscalatingExec/perContainer", checks: escalating, config: v1alpha1.ExecConfiguration{PerContainer: true}, target: "proxy"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pod := benchmarkPod()
			plugin, client := newPlugin(bc.checks, bc.config, []*corev1.Pod{pod}, nil)
			a := connect("exec", bc.target)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := plugin.Validate(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
			}
			if n := len(client.Actions()); n != 0 {
				b.Fatalf("%d API calls on the request path", n)
			}
		})
	}
}
