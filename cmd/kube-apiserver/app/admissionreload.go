// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
	"github.com/turnstile-k8s/turnstile/pkg/admission/reload"
)

// recordAdmissionChain makes the chain that upstream builds from opts
// observable and reloadable (pkg/admission/reload). Call it before upstream
// builds the chain.
func recordAdmissionChain(opts options.CompletedOptions) {
	g := opts.Admission.GenericAdmission
	g.Decorators = append(admission.Decorators{reload.Default.Decorator()}, g.Decorators...)
}

// newAdmissionReloader returns the controller that reloads
// --admission-control-config-file, or nil when none is set. It initializes
// a reloaded plugin with upstream's generic initializer, given what
// upstream gives the first instance: the loopback client, the shared
// informers, the authorizer, the feature gates and the drain signal. The
// plugins that need more than that are not reloadable (reload.Reloadable).
func newAdmissionReloader(opts options.CompletedOptions, generic *genericapiserver.Config, informers clientgoinformers.SharedInformerFactory) (*reload.Controller, error) {
	g := opts.Admission.GenericAdmission
	if g.ConfigFile == "" {
		return nil, nil
	}
	kubeClient, err := kubernetes.NewForConfig(generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	dynamicClient, err := dynamic.NewForConfig(generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(kubeClient.Discovery()))
	effectiveVersion := opts.GenericServerRunOptions.ComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)
	c := &reload.Controller{
		Chain:      reload.Default,
		File:       g.ConfigFile,
		Plugins:    g.Plugins,
		Registered: g.Plugins.Registered(),
		Enabled:    configfile.EnabledPlugins(opts.Admission),
		Initializer: admission.PluginInitializers{
			initializer.NewAPIServerIDInitializer(generic.APIServerID),
			initializer.New(kubeClient, dynamicClient, informers, generic.Authorization.Authorizer, utilfeature.DefaultFeatureGate,
				effectiveVersion, generic.DrainedNotify(), restMapper),
		},
		APIServerID: generic.APIServerID,
	}
	return c, c.Start()
}
