// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodesproxy holds get on nodes/proxy to what create on it
// allows. The kubelet authorizes a WebSocket exec, attach or port-forward
// (an HTTP GET that upgrades) as get on nodes/proxy, so a principal granted
// get, as many monitoring tools are, can run commands in any pod on every
// node, privileged ones included. Upstream closed the same hole for
// pods/exec, pods/attach and pods/portforward (a WebSocket upgrade needs
// create there) but leaves the kubelet as it is. Wrapping the apiserver's
// authorizer applies the pods' rule to nodes/proxy everywhere the
// apiserver answers: requests to the apiserver itself, and the
// SubjectAccessReviews by which kubelets (authorization mode Webhook, as
// kubeadm sets it) authorize requests made straight to their port.
package nodesproxy

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Flag is the kube-apiserver flag that turns the rule on.
const Flag = "nodes-proxy-get-requires-create"

// Reason is why a get on nodes/proxy is denied.
const Reason = "get on nodes/proxy opens the kubelet's exec, attach and port-forward over a WebSocket, so this apiserver (--" + Flag + ") allows it only to whoever may also create nodes/proxy; monitoring reads nodes/metrics, nodes/stats, nodes/pods and nodes/log instead"

// Wrap returns next, except that an allowed get on nodes/proxy is denied
// unless next also allows create on it.
func Wrap(next authorizer.Authorizer) authorizer.Authorizer { return &rule{next: next} }

type rule struct{ next authorizer.Authorizer }

func (r *rule) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	decision, reason, err := r.next.Authorize(ctx, a)
	if decision != authorizer.DecisionAllow || !getsNodesProxy(a) {
		return decision, reason, err
	}
	if r.mayCreate(ctx, a) {
		return decision, reason, err
	}
	return authorizer.DecisionDeny, Reason, nil
}

// mayCreate says whether next allows create on nodes/proxy, without
// conditions, to whoever makes the request a.
func (r *rule) mayCreate(ctx context.Context, a authorizer.Attributes) bool {
	create, _, _ := r.next.Authorize(ctx, asCreate{a})
	return create == authorizer.DecisionAllow
}

func getsNodesProxy(a authorizer.Attributes) bool {
	return a.IsResourceRequest() && a.GetVerb() == "get" && a.GetAPIGroup() == "" && a.GetResource() == "nodes" && a.GetSubresource() == "proxy"
}

// asCreate is the same request with the verb create.
type asCreate struct{ authorizer.Attributes }

func (asCreate) GetVerb() string { return "create" }
