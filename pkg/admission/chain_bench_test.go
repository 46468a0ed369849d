package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/turnstile-k8s/turnstile/test/fixtures"
)

// wireInformers gives plugins the informer factory and client the
// apiserver's generic initializer would.
type wireInformers struct {
	factory informers.SharedInformerFactory
	client  kubernetes.Interface
}

func (w wireInformers) Initialize(p admission.Interface) {
	if x, ok := p.(initializer.WantsExternalKubeInformerFactory); ok {
		x.SetExternalKubeInformerFactory(w.factory)
	}
	if x, ok := p.(initializer.WantsExternalKubeClientSet); ok {
		x.SetExternalKubeClientSet(w.client)
	}
}

// ourChain builds the admission chain of every plugin we register, in our
// order, through upstream's registry code, with no configuration.
func ourChain(b *testing.B, pods ...*corev1.Pod) (admission.ValidationInterface, *fake.Clientset) {
	plugins := admission.NewPlugins()
	for _, r := range registrations {
		r(plugins)
	}
	var names []string
	for _, p := range placements {
		names = append(names, p.Name)
	}
	noConfig, err := admission.ReadAdmissionConfiguration(names, "", runtime.NewScheme())
	if err != nil {
		b.Fatal(err)
	}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, p := range pods {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			b.Fatal(err)
		}
	}
	chain, err := plugins.NewFromPlugins(names, noConfig, wireInformers{factory, client}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return chain.(admission.ValidationInterface), client
}

func BenchmarkChain(b *testing.B) {
	cached := fixtures.Pod("web", "shop")
	var pod api.Pod // admission sees the internal type
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(cached, &pod, nil); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		attrs admission.Attributes
	}{
		{"pod-create", admission.NewAttributesRecord(&pod, nil, api.Kind("Pod").WithVersion("v1"), "shop", "web",
			api.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, nil)},
		{"pod-exec", admission.NewAttributesRecord(&api.PodExecOptions{Container: "app"}, nil, api.Kind("PodExecOptions").WithVersion("v1"), "shop", "web",
			api.Resource("pods").WithVersion("v1"), "exec", admission.Connect, nil, false, nil)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			chain, client := ourChain(b, cached)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := chain.Validate(ctx, bc.attrs, nil); err != nil {
					b.Fatal(err)
				}
			}
			if n := len(client.Actions()); n != 0 {
				b.Fatalf("%d API calls on the request path", n)
			}
		})
	}
}
