// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"github.com/spf13/pflag"

	genericapiserver "k8s.io/apiserver/pkg/server"
	upstream "k8s.io/kubernetes/cmd/kube-apiserver/app"

	"github.com/turnstile-k8s/turnstile/pkg/authorization/nodesproxy"
)

// authorizationOptions are rules of ours on top of the authorizer that
// upstream's --authorization-* flags build. Off by default: with none set,
// authorization is upstream's.
type authorizationOptions struct {
	nodesProxyGetRequiresCreate bool
}

func (o *authorizationOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.nodesProxyGetRequiresCreate, nodesproxy.Flag, false,
		"Deny get on nodes/proxy to any user who may not also create nodes/proxy, in this apiserver and in the SubjectAccessReviews by which kubelets authorize requests to their own port: "+
			"a WebSocket exec, attach or port-forward at the kubelet needs only get. Monitoring keeps nodes/metrics, nodes/stats, nodes/pods and nodes/log.")
}

// apply wraps the authorizer of each server in the chain: the aggregator's
// handler authorizes every request, and the kube-apiserver's answers
// SubjectAccessReviews.
func (o authorizationOptions) apply(config *upstream.Config) {
	if !o.nodesProxyGetRequiresCreate {
		return
	}
	for _, info := range []*genericapiserver.AuthorizationInfo{
		&config.Aggregator.GenericConfig.Authorization,
		&config.KubeAPIs.ControlPlane.Generic.Authorization,
		&config.ApiExtensions.GenericConfig.Authorization,
	} {
		info.Authorizer = nodesproxy.Wrap(info.Authorizer)
	}
}
