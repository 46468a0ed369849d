// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package pspmigration

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	admissiondefaults "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/turnstile-k8s/turnstile/pkg/lineapi"
)

// Judge decides a pod creation as the replacement does: upstream's
// MutatingAdmissionPolicy and ValidatingAdmissionPolicy admission plugins,
// in-process, holding the generated policies (the same code the apiserver
// runs them with), and Pod Security Admission's checks at each namespace's
// enforce level. Nothing of it reaches the cluster.
type Judge struct {
	client     kubernetes.Interface
	mutating   *mutating.Plugin
	validating *validating.Plugin
	evaluator  psapolicy.Evaluator
	mu         sync.Mutex // guards levels
	levels     map[string]psaapi.Level
	stop       chan struct{}
}

// NewJudge loads the replacement into in-process plugins. schemas serves
// the OpenAPI v3 schemas that MutatingAdmissionPolicies merge with (the
// cluster's, or a test's); authz answers the policies' authorizer (the
// cluster's RBAC, as PodSecurityPolicy's Decider asks it).
func NewJudge(r *Replacement, schemas openapi.Client, authz authorizer.Authorizer) (*Judge, error) {
	// The policies as the API stores them: defaulted.
	var objects []runtime.Object
	j := &Judge{levels: map[string]psaapi.Level{}, stop: make(chan struct{})}
	for _, ns := range r.Namespaces {
		objects = append(objects, ns)
		j.levels[ns.Name] = psaapi.Level(ns.Labels[psaapi.EnforceLevelLabel])
	}
	for i := range r.Validating {
		policy, binding := r.Validating[i].DeepCopy(), r.ValidatingBindings[i].DeepCopy()
		admissiondefaults.SetObjectDefaults_ValidatingAdmissionPolicy(policy)
		admissiondefaults.SetObjectDefaults_ValidatingAdmissionPolicyBinding(binding)
		objects = append(objects, policy, binding)
	}
	for i := range r.Mutating {
		policy, binding := r.Mutating[i].DeepCopy(), r.MutatingBindings[i].DeepCopy()
		admissiondefaults.SetObjectDefaults_MutatingAdmissionPolicy(policy)
		admissiondefaults.SetObjectDefaults_MutatingAdmissionPolicyBinding(binding)
		objects = append(objects, policy, binding)
	}
	client := &withSchemas{Clientset: fake.NewClientset(objects...), schemas: schemas}
	j.client = client
	factory := informers.NewSharedInformerFactory(client, 0)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	dynamicClient := dynamicfake.NewSimpleDynamicClient(clientgoscheme.Scheme)
	var err error
	if j.mutating, err = mutating.NewPlugin(nil); err != nil {
		return nil, err
	}
	if j.validating, err = validating.NewPlugin(nil); err != nil {
		return nil, err
	}
	j.mutating.SetEnabled(true)
	lineapi.SetPolicyAuthorizer(j.mutating, authz)
	lineapi.SetPolicyAuthorizer(j.validating, authz)
	for _, p := range []interface {
		SetExternalKubeClientSet(kubernetes.Interface)
		SetExternalKubeInformerFactory(informers.SharedInformerFactory)
		SetRESTMapper(meta.RESTMapper)
		SetDynamicClient(dynamic.Interface)
		SetDrainedNotification(<-chan struct{})
		ValidateInitialization() error
	}{j.mutating, j.validating} {
		p.SetExternalKubeClientSet(client)
		p.SetExternalKubeInformerFactory(factory)
		p.SetRESTMapper(mapper)
		p.SetDynamicClient(dynamicClient)
		p.SetDrainedNotification(j.stop)
		if err := p.ValidateInitialization(); err != nil {
			close(j.stop)
			return nil, err
		}
	}
	factory.Start(j.stop)
	factory.WaitForCacheSync(j.stop)
	if j.evaluator, err = psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil); err != nil {
		close(j.stop)
		return nil, err
	}
	// The plugins compile the policies once their informers have them.
	ready := func(context.Context) (bool, error) {
		return j.mutating.WaitForReady() && j.validating.WaitForReady(), nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, ready); err != nil {
		close(j.stop)
		return nil, fmt.Errorf("the admission policy plugins did not load the replacement: %w", err)
	}
	return j, nil
}

// Close stops the plugins' informers.
func (j *Judge) Close() { close(j.stop) }

// Verdict is the replacement's decision on a pod creation.
type Verdict struct {
	// Pod is the pod as the MutatingAdmissionPolicies leave it.
	Pod *corev1.Pod
	// Refusal is "" when admitted, else who refused and why.
	Refusal string
}

// Decide creates pod in namespace as requester, through the mutating
// policies, the validating policy and Pod Security Admission.
func (j *Judge) Decide(ctx context.Context, namespace string, requester user.Info, pod *corev1.Pod) (Verdict, error) {
	level, err := j.namespace(ctx, namespace)
	if err != nil {
		return Verdict{}, err
	}
	pod = pod.DeepCopy()
	pod.Namespace = namespace
	attrs := admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, requester)
	o := admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)
	if err := j.admit(ctx, attrs, o); err != nil {
		return Verdict{Pod: pod, Refusal: "MutatingAdmissionPolicy: " + err.Error()}, nil
	}
	mutated, ok := attrs.GetObject().(*corev1.Pod)
	if !ok {
		return Verdict{}, fmt.Errorf("the mutating policies returned a %T", attrs.GetObject())
	}
	if err := j.validating.Validate(ctx, attrs, o); err != nil {
		return Verdict{Pod: mutated, Refusal: err.Error()}, nil
	}
	agg := psapolicy.AggregateCheckResults(j.evaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &mutated.ObjectMeta, &mutated.Spec))
	if !agg.Allowed {
		return Verdict{Pod: mutated, Refusal: fmt.Sprintf("PodSecurity %q: %s", level, agg.ForbiddenDetail())}, nil
	}
	return Verdict{Pod: mutated}, nil
}

// namespace is namespace's Pod Security Admission level. A namespace the
// report did not reach (no workloads, only grants) has no label, and the
// policies may look it up, so it is made.
func (j *Judge) namespace(ctx context.Context, namespace string) (psaapi.Level, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if level, known := j.levels[namespace]; known {
		return level, nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := j.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	j.levels[namespace] = psaapi.LevelPrivileged
	return psaapi.LevelPrivileged, nil
}

// level is namespace's Pod Security Admission level, as the report set it.
func (j *Judge) level(namespace string) psaapi.Level {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.levels[namespace]
}

// DecideEphemeral adds containers to pod's ephemeral containers, as
// kubectl debug does through pods/ephemeralcontainers, as requester: the
// mutating policies see the pod the request sends, and the validating
// policies the pod storage would keep (the stored pod with only its
// ephemeral containers taken from the request), as the apiserver runs them.
func (j *Judge) DecideEphemeral(ctx context.Context, namespace string, requester user.Info, pod *corev1.Pod, containers ...corev1.EphemeralContainer) (string, error) {
	old := pod.DeepCopy()
	old.Namespace = namespace
	updated := old.DeepCopy()
	updated.Spec.EphemeralContainers = append(updated.Spec.EphemeralContainers, containers...)
	kind, resource := corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods")
	attrs := admission.NewAttributesRecord(updated, old, kind, namespace, pod.Name, resource, "ephemeralcontainers", admission.Update, &metav1.UpdateOptions{}, false, requester)
	o := admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)
	if err := j.admit(ctx, attrs, o); err != nil {
		return "MutatingAdmissionPolicy: " + err.Error(), nil
	}
	sent, ok := attrs.GetObject().(*corev1.Pod)
	if !ok {
		return "", fmt.Errorf("the mutating policies returned a %T", attrs.GetObject())
	}
	kept := old.DeepCopy()
	kept.Spec.EphemeralContainers = sent.Spec.EphemeralContainers
	validated := admission.NewAttributesRecord(kept, old, kind, namespace, pod.Name, resource, "ephemeralcontainers", admission.Update, &metav1.UpdateOptions{}, false, requester)
	if err := j.validating.Validate(ctx, validated, o); err != nil {
		return err.Error(), nil
	}
	return "", nil
}

// admit runs the mutating policies as the apiserver's admission chain
// does: once, and again when a policy changed the pod and another asks to
// be reinvoked.
func (j *Judge) admit(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	if err := j.mutating.Admit(ctx, attrs, o); err != nil {
		return err
	}
	if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return j.mutating.Admit(ctx, attrs, o)
	}
	return nil
}

// withSchemas is a fake clientset whose discovery serves OpenAPI v3
// schemas, which the mutating plugin merges apply configurations with.
type withSchemas struct {
	*fake.Clientset
	schemas openapi.Client
}

func (c *withSchemas) Discovery() lineapi.Discovery {
	return &schemaDiscovery{FakeDiscovery: c.Clientset.Discovery().(*fakediscovery.FakeDiscovery), schemas: c.schemas}
}

type schemaDiscovery struct {
	*fakediscovery.FakeDiscovery
	schemas openapi.Client
}

func (d *schemaDiscovery) OpenAPIV3() openapi.Client { return d.schemas }
