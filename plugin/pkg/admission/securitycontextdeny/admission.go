// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package securitycontextdeny restores the SecurityContextDeny admission
// plugin that upstream removed in v1.30. It rejects pods that set the four
// original securityContext fields (supplementalGroups, seLinuxOptions,
// runAsUser, fsGroup), so that only a cluster's defaults apply. Its default
// behaviour is upstream's last version, field for field and message for
// message; coverEphemeralContainers is an opt-in fix of its known gap.
package securitycontextdeny

import (
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/pluginconfig"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny/apis/v1alpha1"
)

// PluginName is the name users enable.
const PluginName = "SecurityContextDeny"

// config is the plugin's configuration kind.
var config = pluginconfig.NewKind[v1alpha1.SecurityContextDenyConfiguration](v1alpha1.SchemeGroupVersion)

// Descriptor is how Turnstile wires the plugin (pkg/admission/descriptor):
// where upstream last ran it, its configuration's check, reloadable.
var Descriptor = descriptor.Plugin{
	Name:       PluginName,
	Register:   Register,
	After:      "NamespaceExists",
	Check:      config.Check,
	Reloadable: true,
}

// Register adds the plugin to a registry.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(r io.Reader) (admission.Interface, error) {
		c, err := config.Load(PluginName, r)
		if err != nil {
			return nil, err
		}
		klog.InfoS("SecurityContextDeny is deprecated upstream (removed in v1.30); Pod Security Admission replaces it",
			"coverEphemeralContainers", c.CoverEphemeralContainers)
		return New(*c), nil
	})
}

// Plugin is the admission plugin.
type Plugin struct {
	*admission.Handler
	coverEphemeralContainers bool
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin with configuration c.
func New(c v1alpha1.SecurityContextDenyConfiguration) *Plugin {
	return &Plugin{
		Handler:                  admission.NewHandler(admission.Create, admission.Update),
		coverEphemeralContainers: c.CoverEphemeralContainers,
	}
}

// Validate rejects a pod that sets a forbidden securityContext field,
// naming the first one in upstream's order.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != api.Resource("pods") {
		return nil
	}
	ephemeralOnly := false
	switch a.GetSubresource() {
	case "":
	case "ephemeralcontainers":
		// Only ephemeral containers change through this subresource, so
		// only they are checked: a pod created before the plugin was on
		// can still be debugged with a compliant ephemeral container.
		if !p.coverEphemeralContainers {
			return nil
		}
		ephemeralOnly = true
	default:
		return nil
	}
	pod, ok := a.GetObject().(*api.Pod)
	if !ok {
		return apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if err := p.check(pod, existingEphemeral(a.GetOldObject()), ephemeralOnly); err != nil {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), pod.Name, err)
	}
	return nil
}

// existingEphemeral names the ephemeral containers the pod had before an
// update. They cannot change or go once added, and were judged when they
// came (or came before coverEphemeralContainers was on): judging them again
// would refuse every later debug container, and every update of the pod,
// for a container nobody is adding.
func existingEphemeral(old runtime.Object) map[string]bool {
	pod, ok := old.(*api.Pod)
	if !ok {
		return nil
	}
	names := make(map[string]bool, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		names[pod.Spec.EphemeralContainers[i].Name] = true
	}
	return names
}

func (p *Plugin) check(pod *api.Pod, existing map[string]bool, ephemeralOnly bool) error {
	if !ephemeralOnly {
		if sc := pod.Spec.SecurityContext; sc != nil {
			switch {
			case sc.SupplementalGroups != nil:
				return errors.New("pod.Spec.SecurityContext.SupplementalGroups is forbidden")
			case sc.SELinuxOptions != nil:
				return errors.New("pod.Spec.SecurityContext.SELinuxOptions is forbidden")
			case sc.RunAsUser != nil:
				return errors.New("pod.Spec.SecurityContext.RunAsUser is forbidden")
			case sc.FSGroup != nil:
				return errors.New("pod.Spec.SecurityContext.FSGroup is forbidden")
			}
		}
		for i := range pod.Spec.InitContainers {
			if err := checkContainer(pod.Spec.InitContainers[i].SecurityContext); err != nil {
				return err
			}
		}
		for i := range pod.Spec.Containers {
			if err := checkContainer(pod.Spec.Containers[i].SecurityContext); err != nil {
				return err
			}
		}
	}
	if p.coverEphemeralContainers {
		for i := range pod.Spec.EphemeralContainers {
			if existing[pod.Spec.EphemeralContainers[i].Name] {
				continue
			}
			if err := checkContainer(pod.Spec.EphemeralContainers[i].SecurityContext); err != nil {
				return fmt.Errorf("ephemeral container %q: %w", pod.Spec.EphemeralContainers[i].Name, err)
			}
		}
	}
	return nil
}

func checkContainer(sc *api.SecurityContext) error {
	switch {
	case sc == nil:
		return nil
	case sc.SELinuxOptions != nil:
		return errors.New("SecurityContext.SELinuxOptions is forbidden")
	case sc.RunAsUser != nil:
		return errors.New("SecurityContext.RunAsUser is forbidden")
	}
	return nil
}
