// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"crypto/fips140"
	"net/http"
	_ "unsafe" // go:linkname of upstream's APIService priorities

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/klog/v2"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	upstream "k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"

	"github.com/turnstile-k8s/turnstile/pkg/admission/admissionz"
	"github.com/turnstile-k8s/turnstile/pkg/admission/reload"
	"github.com/turnstile-k8s/turnstile/pkg/policyserver"
)

// apiVersionPriorities is upstream's table of APIService priorities
// (cmd/kube-apiserver/app/aggregator.go). It is unexported, and we must not
// copy it, so it is linked by name: a rename upstream fails the build. It
// still holds policy/v1beta1, so the aggregator creates the local APIService
// v1beta1.policy when our server lists /apis/policy/v1beta1.
//
//go:linkname apiVersionPriorities k8s.io/kubernetes/cmd/kube-apiserver/app.apiVersionPriorities
var apiVersionPriorities map[schema.GroupVersion]controlplaneapiserver.APIServicePriority

// run is upstream's Run with our server chain, our authorization rules, and
// the admission configuration file reloaded when it changes. When
// PodSecurityPolicy is not served and no rule is on, the chain is exactly
// upstream's.
func run(ctx context.Context, opts options.CompletedOptions, authz authorizationOptions) error {
	logBuild(ctx)
	logFIPS()

	if err := nameInformers(&opts); err != nil {
		return err
	}
	recordAdmissionChain(opts)
	config, err := upstream.NewConfig(opts)
	if err != nil {
		return err
	}
	authz.apply(config)
	kube := config.KubeAPIs.ControlPlane.Generic
	reloader, err := newAdmissionReloader(opts, kube, config.KubeAPIs.ControlPlane.VersionedInformers)
	if err != nil {
		return err
	}
	servePSP, err := policyserver.Enabled(kube.MergedResourceConfig, policyserver.PluginEnabled(opts.Admission))
	if err != nil {
		return err
	}
	var pspConfig *genericapiserver.Config
	if servePSP {
		// Derived before Complete, which the copy does separately.
		if pspConfig, err = policyserver.NewConfig(kube, opts.Etcd); err != nil {
			return err
		}
	}
	completed, err := config.Complete()
	if err != nil {
		return err
	}
	z := admissionz.Handler(reload.Default, reloader, opts.Admission.GenericAdmission.DefaultOffPlugins)
	server, err := createServerChain(completed, pspConfig, z)
	if err != nil {
		return err
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	if reloader != nil {
		go reloader.Run(ctx)
	}
	return prepared.Run(ctx)
}

// createServerChain is upstream's CreateServerChain, composed from the same
// exported constructors, with the policy/v1beta1 server (when pspConfig is
// not nil) between the aggregator and the kube-apiserver, and /admissionz
// served by the kube-apiserver:
//
//	aggregator -> turnstile-policy-v1beta1 -> kube-apiserver -> apiextensions -> notfound
func createServerChain(c upstream.CompletedConfig, pspConfig *genericapiserver.Config, admissionzHandler http.Handler) (*aggregatorapiserver.APIAggregator, error) {
	notFoundHandler := notfoundhandler.New(c.KubeAPIs.ControlPlane.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	apiExtensionsServer, err := c.ApiExtensions.New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFoundHandler))
	if err != nil {
		return nil, err
	}
	crdAPIEnabled := c.ApiExtensions.GenericConfig.MergedResourceConfig.ResourceEnabled(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))

	kubeAPIServer, err := c.KubeAPIs.New(apiExtensionsServer.GenericAPIServer)
	if err != nil {
		return nil, err
	}
	kubeAPIServer.ControlPlane.GenericAPIServer.Handler.NonGoRestfulMux.Handle(admissionz.Path, admissionzHandler)
	var delegate genericapiserver.DelegationTarget = kubeAPIServer.ControlPlane.GenericAPIServer
	if pspConfig != nil {
		s, err := policyserver.New(pspConfig, c.KubeAPIs.ControlPlane.VersionedInformers, delegate)
		if err != nil {
			return nil, err
		}
		delegate = s
	}
	return controlplaneapiserver.CreateAggregatorServer(c.Aggregator, delegate, apiExtensionsServer.Informers.Apiextensions().V1().CustomResourceDefinitions(), crdAPIEnabled, apiVersionPriorities)
}

// logFIPS says whether the process runs in FIPS 140-3 mode, and with which
// Go Cryptographic Module: on by default in a build with GOFIPS140 (make
// release FIPS=1), and settable either way with GODEBUG=fips140=on|only|off.
// An operator who must run in FIPS mode reads it here; crypto/tls then
// offers and accepts only approved versions, suites and curves.
func logFIPS() {
	if !fips140.Enabled() {
		klog.InfoS("FIPS 140-3 mode is off")
		return
	}
	klog.InfoS("FIPS 140-3 mode is on", "module", fips140.Version(), "enforced", fips140.Enforced())
}
