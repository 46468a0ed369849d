// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package reload applies a changed --admission-control-config-file to a
// running apiserver without a restart.
//
// Upstream builds the admission chain once. A Chain, installed as the first
// of the admission options' decorators (the innermost, so it sees each
// plugin itself, before upstream's metrics decorator wraps it), sees every
// plugin of that chain in order as it is built: it records the order and
// each plugin's phases (for /admissionz) and puts each plugin whose
// configuration can change at run time behind a slot. A
// Controller polls the file and the files it references; when they change,
// it checks the new configuration strictly (pkg/admission/configfile), builds
// new instances of the plugins whose configuration changed, initialized as
// the first ones were, and swaps them all in at once. A broken
// configuration changes nothing: the last good chain keeps serving.
package reload

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"

	"github.com/turnstile-k8s/turnstile/pkg/admission/configfile"
)

// Reloadable are the plugins whose configuration a reload may change: those
// whose descriptor says so (pkg/admission/descriptor; the restored plugins
// and configfile.Upstream).
var Reloadable = func() sets.Set[string] {
	s := sets.New[string]()
	for _, d := range configfile.Described {
		if d.Reloadable {
			s.Insert(d.Name)
		}
	}
	return s
}()

// Plugin is one plugin of the chain as it was built.
type Plugin struct {
	Name                 string
	Mutating, Validating bool
}

// Chain is the admission chain as built, and the instances of its
// reloadable plugins now in force.
type Chain struct {
	mu      sync.Mutex
	plugins []Plugin
	// current holds the reloadable plugins' instances, indexed by slot
	// (index says which); a reload stores a new slice, so that every plugin
	// it changes changes at once, and a request reads it with one atomic
	// load and no lookup by name.
	current atomic.Pointer[[]admission.Interface]
	index   map[string]int
}

// Default is the chain of the apiserver this process runs.
var Default = &Chain{}

// Decorator records each plugin and puts the reloadable ones behind a slot.
// It must be the first decorator: a slot holds the plugin itself, and the
// other decorators wrap the slot, so a new instance needs no decorating.
func (c *Chain) Decorator() admission.Decorator {
	return admission.DecoratorFunc(c.decorate)
}

func (c *Chain) decorate(handler admission.Interface, name string) admission.Interface {
	_, mutates := handler.(admission.MutationInterface)
	_, validates := handler.(admission.ValidationInterface)
	c.mu.Lock()
	defer c.mu.Unlock()
	// A name seen already means that a new chain is being built.
	for _, p := range c.plugins {
		if p.Name == name {
			c.plugins, c.index = nil, nil
			c.current.Store(nil)
			break
		}
	}
	c.plugins = append(c.plugins, Plugin{Name: name, Mutating: mutates, Validating: validates})
	if !Reloadable.Has(name) {
		return handler
	}
	var next []admission.Interface
	if cur := c.current.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	if c.index == nil {
		c.index = map[string]int{}
	}
	c.index[name] = len(next)
	next = append(next, handler)
	c.current.Store(&next)
	s := slot{chain: c, index: len(next) - 1, initial: handler}
	switch {
	case mutates && validates:
		return &mutatingValidatingSlot{mutatingSlot{s}, validatingSlot{s}}
	case mutates:
		return &mutatingSlot{s}
	case validates:
		return &validatingSlot{s}
	default:
		return handler
	}
}

// Plugins is the chain in order.
func (c *Chain) Plugins() []Plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Plugin(nil), c.plugins...)
}

// swap puts instances in force in place of the current ones of the same name.
func (c *Chain) swap(instances map[string]admission.Interface) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.current.Load()
	if cur == nil {
		return
	}
	next := slices.Clone(*cur)
	for name, instance := range instances {
		if i, ok := c.index[name]; ok {
			next[i] = instance
		}
	}
	c.current.Store(&next)
}

// slot is a reloadable plugin's place in the chain. A call reads the
// instance in force when it starts and finishes on it, so a request inside
// a plugin during a reload completes on the old configuration.
type slot struct {
	chain   *Chain
	index   int
	initial admission.Interface
}

func (s *slot) instance() admission.Interface {
	if cur := s.chain.current.Load(); cur != nil && s.index < len(*cur) {
		return (*cur)[s.index]
	}
	return s.initial
}

func (s *slot) Handles(op admission.Operation) bool { return s.instance().Handles(op) }

type mutatingSlot struct{ slot }

func (s *mutatingSlot) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return s.instance().(admission.MutationInterface).Admit(ctx, a, o)
}

type validatingSlot struct{ slot }

func (s *validatingSlot) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	return s.instance().(admission.ValidationInterface).Validate(ctx, a, o)
}

type mutatingValidatingSlot struct {
	mutatingSlot
	validatingSlot
}

func (s *mutatingValidatingSlot) Handles(op admission.Operation) bool {
	return s.mutatingSlot.Handles(op)
}
