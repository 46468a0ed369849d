// Package admission adds Turnstile's own admission plugins to upstream's
// kube-apiserver registry: it registers them, splices them into upstream's
// recommended order at the places they historically ran, and keeps them off
// by default, so that upstream's default chain is unchanged. It also names,
// in the audit event of a refused request, the plugin that refused it
// (rejectedby).
package admission

import (
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/turnstile-k8s/turnstile/pkg/admission/rejectedby"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/exec"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/security/podsecuritypolicy"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/securitycontextdeny"
	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel"
)

// Placement puts one of our plugins directly after an upstream plugin in the
// recommended order. Placements that share an anchor run in the order listed.
type Placement struct {
	Name  string
	After string
}

// registrations adds our plugins' factories to a registry, one Register per
// plugin package.
var registrations = []func(*admission.Plugins){
	securitycontextdeny.Register,
	exec.Register,
	persistentvolumelabel.Register,
	podsecuritypolicy.Register,
}

// placements is where each of our plugins runs, and so also the list of the
// names we register. Restored plugins run where upstream last ran them.
var placements = []Placement{
	{Name: securitycontextdeny.PluginName, After: "NamespaceExists"},
	{Name: exec.DenyEscalatingExec, After: "PodTolerationRestriction"},
	{Name: exec.DenyExecOnPrivileged, After: "PodTolerationRestriction"},
	{Name: persistentvolumelabel.PluginName, After: "ExtendedResourceToleration"},
	{Name: podsecuritypolicy.PluginName, After: "PodSecurity"},
}

// lastPlugins must end the chain: upstream runs webhooks, policies, quota and
// AlwaysDeny after every in-tree plugin, so nothing may be spliced among them.
var lastPlugins = []string{
	"MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook",
	"ResourceQuota",
	"AlwaysDeny",
}

// Apply registers our plugins into o, splices them into its recommended
// order and marks them default-off. Call it on upstream's options before the
// flags are built, so that help texts and validation see every name.
func Apply(o *genericoptions.AdmissionOptions) error {
	return apply(o, registrations, placements)
}

func apply(o *genericoptions.AdmissionOptions, register []func(*admission.Plugins), place []Placement) error {
	names, err := registeredNames(register, o.Plugins.Registered())
	if err != nil {
		return err
	}
	placed := make([]string, 0, len(place))
	for _, p := range place {
		placed = append(placed, p.Name)
	}
	slices.Sort(placed)
	if !slices.Equal(names, placed) {
		return fmt.Errorf("turnstile admission: registered plugins %v and placed plugins %v differ", names, placed)
	}
	order, err := splice(o.RecommendedPluginOrder, place)
	if err != nil {
		return err
	}
	for _, r := range register {
		r(o.Plugins)
	}
	o.RecommendedPluginOrder = order
	o.DefaultOffPlugins = o.DefaultOffPlugins.Clone().Insert(placed...)
	// After upstream's metrics decorator, so that it wraps what it measures.
	o.Decorators = append(slices.Clip(o.Decorators), rejectedby.Decorator)
	return nil
}

// registeredNames runs each registration against a scratch registry and
// returns the sorted names they add. It fails on a name registered twice,
// which upstream's registry would otherwise turn into a fatal exit.
func registeredNames(register []func(*admission.Plugins), upstream []string) ([]string, error) {
	seen := map[string]bool{}
	for _, name := range upstream {
		seen[name] = true
	}
	var names []string
	for _, r := range register {
		scratch := admission.NewPlugins()
		r(scratch)
		for _, name := range scratch.Registered() {
			if seen[name] {
				return nil, fmt.Errorf("turnstile admission: plugin %q is registered twice", name)
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// splice returns upstream's recommended order with each placement inserted
// directly after its anchor.
func splice(upstream []string, place []Placement) ([]string, error) {
	after := map[string][]string{}
	for _, p := range place {
		switch {
		case !slices.Contains(upstream, p.After):
			return nil, fmt.Errorf("turnstile admission: plugin %q is placed after %q, which is not in upstream's order", p.Name, p.After)
		case slices.Contains(lastPlugins, p.After):
			return nil, fmt.Errorf("turnstile admission: plugin %q cannot run after %q: %v must end the chain", p.Name, p.After, lastPlugins)
		case slices.Contains(upstream, p.Name):
			return nil, fmt.Errorf("turnstile admission: plugin %q is already in upstream's order", p.Name)
		}
		after[p.After] = append(after[p.After], p.Name)
	}
	order := make([]string, 0, len(upstream)+len(place))
	for _, name := range upstream {
		order = append(order, name)
		order = append(order, after[name]...)
	}
	return order, nil
}
