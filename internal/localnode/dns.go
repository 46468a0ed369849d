// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package localnode

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	dnsaddon "k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/dns"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"
	"sigs.k8s.io/yaml"
)

// DeployDNS installs CoreDNS as `kubeadm init` does (its addon phase: the
// Deployment, Service at the Services' .10, RBAC, ConfigMap), with one
// change: the Corefile forwards nothing, since there is nowhere off this
// machine to forward to. kubeadm keeps a Corefile that is not its default,
// so ours is created first.
func (c *Cluster) DeployDNS(ctx context.Context, client kubernetes.Interface) error {
	cfg := &c.cfg.Kubeadm.ClusterConfiguration
	if err := applyCorefile(ctx, client, cfg.Networking.DNSDomain); err != nil {
		return err
	}
	if err := dnsaddon.EnsureDNSAddon(cfg, client, "", io.Discard, false); err != nil {
		return fmt.Errorf("kubeadm's CoreDNS addon: %w", err)
	}
	return nil
}

// applyCorefile creates or updates kubeadm's CoreDNS ConfigMap for
// dnsDomain with a Corefile that forwards nothing.
func applyCorefile(ctx context.Context, client kubernetes.Interface, dnsDomain string) error {
	rendered, err := kubeadmutil.ParseTemplate(dnsaddon.CoreDNSConfigMap, struct{ DNSDomain, UpstreamNameserver, StubDomain string }{
		DNSDomain: dnsDomain,
	})
	if err != nil {
		return fmt.Errorf("kubeadm's CoreDNS ConfigMap: %w", err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(rendered, &cm); err != nil {
		return fmt.Errorf("kubeadm's CoreDNS ConfigMap: %w", err)
	}
	corefile, err := withoutForward(cm.Data["Corefile"])
	if err != nil {
		return err
	}
	cm.Data["Corefile"] = corefile
	_, err = client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, &cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, &cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("the CoreDNS ConfigMap: %w", err)
	}
	return nil
}

// withoutForward removes the forward block from a Corefile.
func withoutForward(corefile string) (string, error) {
	var out []string
	skipping, found := false, false
	for _, line := range strings.Split(corefile, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case skipping:
			if trimmed == "}" {
				skipping = false
			}
			continue
		case strings.HasPrefix(trimmed, "forward "):
			found = true
			skipping = strings.HasSuffix(trimmed, "{")
			continue
		}
		out = append(out, line)
	}
	if !found {
		return "", fmt.Errorf("kubeadm's Corefile has no forward block to remove:\n%s", corefile)
	}
	return strings.Join(out, "\n"), nil
}

// WaitDNS waits until CoreDNS's Deployment has every replica available.
func (c *Cluster) WaitDNS(ctx context.Context, client kubernetes.Interface) error {
	return c.Nodes[0].poll(ctx, 3*time.Minute, func(ctx context.Context) error {
		d, err := client.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.CoreDNSDeploymentName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !available(d) {
			return fmt.Errorf("CoreDNS has %d of %d replicas available", d.Status.AvailableReplicas, ptrValue(d.Spec.Replicas))
		}
		return nil
	})
}

func available(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == ptrValue(d.Spec.Replicas) && d.Status.UpdatedReplicas == ptrValue(d.Spec.Replicas)
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
