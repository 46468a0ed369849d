// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policyserver

import (
	"fmt"
	"strings"

	"github.com/emicklei/go-restful/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/warning"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	upstreamopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	policyv1beta1 "github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	"github.com/turnstile-k8s/turnstile/pkg/generated/openapi"
	"github.com/turnstile-k8s/turnstile/pkg/registry/policy/podsecuritypolicy"
)

// Name is the server's name in the delegation chain and in its logs.
const Name = "turnstile-policy-v1beta1"

// ServedWarning is what every policy/v1beta1 request is told besides the
// apiserver's own deprecation warning ("deprecated in v1.21+"): that
// upstream removed the API in v1.25 and this build serves it, and how to
// leave it. v1.24 said the API was "unavailable in v1.25+", which a build
// that serves it past v1.25 must not say (pkg/apis/policy/v1beta1's
// lifecycle.go).
const ServedWarning = "policy/v1beta1 PodSecurityPolicy was removed from upstream Kubernetes in v1.25; this Turnstile build serves it (kubectl psp report and convert help to leave it)"

// etcdPrefix is the key prefix under --etcd-prefix, v1.24's.
const etcdPrefix = "podsecuritypolicy"

// NewConfig derives this server's configuration from the kube-apiserver's
// generic configuration kube (which it does not change) and the completed
// etcd options, the way upstream derives the apiextensions server's: a
// shallow copy with no post-start hooks of its own, its own storage
// (protobuf, policy/v1beta1, under <--etcd-prefix>/podsecuritypolicy, with
// the kube-apiserver's encryption-at-rest transformers) and its own OpenAPI
// definitions.
func NewConfig(kube *genericapiserver.Config, etcdOptions *genericoptions.EtcdOptions) (*genericapiserver.Config, error) {
	if kube == nil || etcdOptions == nil {
		return nil, fmt.Errorf("the %s server needs the kube-apiserver configuration and etcd options", Name)
	}
	c := *kube
	c.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}

	etcd := *etcdOptions
	etcd.SkipHealthEndpoints = true // the kube-apiserver has them already
	gr := Resource.GroupResource()
	encoding := serverstorage.NewDefaultResourceEncodingConfig(Scheme)
	encoding.SetResourceEncoding(gr, policyv1beta1.SchemeGroupVersion, policy.SchemeGroupVersion)
	factory := serverstorage.NewDefaultStorageFactory(etcd.StorageConfig, runtime.ContentTypeProtobuf, Codecs, encoding,
		c.MergedResourceConfig, map[schema.GroupResource]string{gr: etcdPrefix})
	c.RESTOptionsGetter = etcd.CreateRESTOptionsGetter(factory, c.ResourceTransformers)

	namer := openapinamer.NewDefinitionNamer(Scheme, legacyscheme.Scheme)
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "Kubernetes"
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "Kubernetes"
	return &c, nil
}

// openAPIDefinitions are the definitions this server's routes reach: the
// policy/v1beta1 types, the meta types every API group's routes use, and
// what those depend on. Ours (generated here) also carry the meta and core
// types, generated only so that references use model names; upstream's win
// for those. Only what the routes reach is kept: the OpenAPI configuration
// holds on to the map, and all of upstream's definitions cost the
// apiserver about 15 MiB of heap for the life of the process (make
// bench-scale's heap profiles).
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	all := openapi.GetOpenAPIDefinitions(ref)
	for name, def := range upstreamopenapi.GetOpenAPIDefinitions(ref) {
		all[name] = def
	}
	defs := map[string]common.OpenAPIDefinition{}
	var queue []string
	for name, def := range all {
		if strings.HasPrefix(name, "io.k8s.api.policy.v1beta1.") || strings.HasPrefix(name, "io.k8s.apimachinery.") {
			defs[name] = def
			queue = append(queue, name)
		}
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, dep := range defs[name].Dependencies {
			if _, ok := defs[dep]; ok {
				continue
			}
			if def, ok := all[dep]; ok {
				defs[dep] = def
				queue = append(queue, dep)
			}
		}
	}
	return defs
}

// New builds the server from its completed configuration, in front of
// delegate (upstream's kube-apiserver), and installs
// /apis/policy/v1beta1/podsecuritypolicies.
func New(c *genericapiserver.Config, informers clientgoinformers.SharedInformerFactory, delegate genericapiserver.DelegationTarget) (*genericapiserver.GenericAPIServer, error) {
	s, err := c.Complete(informers).New(Name, delegate)
	if err != nil {
		return nil, err
	}
	storage, err := podsecuritypolicy.NewREST(Scheme, c.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("podsecuritypolicies storage: %w", err)
	}
	info := genericapiserver.NewDefaultAPIGroupInfo(policy.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	info.VersionedResourcesStorageMap[policyv1beta1.SchemeGroupVersion.Version] = map[string]rest.Storage{Resource.Resource: storage}
	if err := s.InstallAPIGroup(&info); err != nil {
		return nil, err
	}
	// InstallAPIGroup also added a web service at /apis/policy listing only
	// v1beta1. Its root path would claim every /apis/policy/... request in
	// this server, so /apis/policy/v1 (upstream's PodDisruptionBudget) would
	// get 404 here instead of reaching the kube-apiserver behind us. The
	// aggregator serves /apis/policy itself, from the APIService objects, so
	// the web service is never needed.
	container := s.Handler.GoRestfulContainer
	for _, ws := range container.RegisteredWebServices() {
		switch ws.RootPath() {
		case "/apis/" + policy.GroupName:
			if err := container.Remove(ws); err != nil {
				return nil, err
			}
		case "/apis/" + policyv1beta1.SchemeGroupVersion.String():
			// Every route of the version, read or write: the request's
			// warning recorder is the aggregator's, in its context.
			ws.Filter(func(req *restful.Request, resp *restful.Response, chain *restful.FilterChain) {
				warning.AddWarning(req.Request.Context(), "", ServedWarning)
				chain.ProcessFilter(req, resp)
			})
		}
	}
	klog.V(2).InfoS("Serving policy/v1beta1 podsecuritypolicies", "server", Name)
	return s, nil
}
