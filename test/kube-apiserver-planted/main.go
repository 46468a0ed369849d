// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kube-apiserver-planted is Turnstile's kube-apiserver with a
// regression planted in it on purpose: an admission plugin, on in every
// chain, that allocates what --planted-allocation says on every pod create.
// The cost guard's test (TestCostGuard in cmd/bench/internal/compare) runs
// it to show that the guard fails on a change that allocates 5% more per
// pod create. It is built by `make test-cost` only and never shipped.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/cli"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/turnstile-k8s/turnstile/cmd/kube-apiserver/app"
	"github.com/turnstile-k8s/turnstile/pkg/admission/descriptor"
	"github.com/turnstile-k8s/turnstile/pkg/admission/restored"
)

const pluginName = "PlantedAllocation"

// allocation is what the plugin allocates per pod create: Objects byte
// slices of Bytes/Objects bytes each.
type allocation struct{ Bytes, Objects int }

func (a *allocation) String() string { return fmt.Sprintf("%d/%d", a.Bytes, a.Objects) }
func (a *allocation) Type() string   { return "BYTES/OBJECTS" }
func (a *allocation) Set(v string) error {
	b, o, ok := strings.Cut(v, "/")
	var err1, err2 error
	a.Bytes, err1 = strconv.Atoi(b)
	a.Objects, err2 = strconv.Atoi(o)
	if !ok || err1 != nil || err2 != nil || a.Bytes < 0 || a.Objects < 1 {
		return fmt.Errorf("%q: want BYTES/OBJECTS, BYTES at least 0 and OBJECTS at least 1", v)
	}
	return nil
}

// sink keeps each allocation reachable past the compiler's escape
// analysis, so that it is made on the heap, as a regression's would be.
var sink []byte

type plugin struct {
	*admission.Handler
	allocate *allocation
}

func (p *plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != api.Resource("pods") || a.GetSubresource() != "" {
		return nil
	}
	size := p.allocate.Bytes / p.allocate.Objects
	for range p.allocate.Objects {
		sink = make([]byte, size)
	}
	return nil
}

func main() {
	allocate := &allocation{Objects: 1}
	restored.Plugins = append(restored.Plugins, descriptor.Plugin{
		Name: pluginName,
		Register: func(plugins *admission.Plugins) {
			plugins.Register(pluginName, func(_ io.Reader) (admission.Interface, error) {
				return &plugin{Handler: admission.NewHandler(admission.Create), allocate: allocate}, nil
			})
		},
		After: "PodSecurity",
	})
	command, err := app.NewAPIServerCommand()
	if err != nil {
		fmt.Fprintf(os.Stderr, "planted: %v\n", err)
		os.Exit(1)
	}
	flags := command.Flags()
	flags.AddFlag(&pflag.Flag{Name: "planted-allocation", Value: allocate, DefValue: allocate.String(),
		Usage: "what " + pluginName + " allocates on every pod create: BYTES in OBJECTS slices"})
	// On in every chain: a list flag set before the command line is
	// parsed keeps this value and adds the command line's to it.
	if err := flags.Set("enable-admission-plugins", pluginName); err != nil {
		fmt.Fprintf(os.Stderr, "planted: %v\n", err)
		os.Exit(1)
	}
	os.Exit(cli.Run(command))
}
