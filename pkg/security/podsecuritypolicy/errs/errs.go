// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package errs collects the field errors of a policy check. A pod is tried
// against many policies and usually refused by most of them, so a check can
// also run in quick mode, where it stops at the first error and builds none:
// building a field.Error (its path and message) costs more than the check.
package errs

import "k8s.io/apimachinery/pkg/util/validation/field"

// Collector gathers errors. The zero value collects all of them.
type Collector struct {
	list   field.ErrorList
	quick  bool
	failed bool
}

// Quick returns a collector that only notes whether an error occurred.
func Quick() Collector { return Collector{quick: true} }

// Add records the error that build returns; in quick mode build is not
// called.
func (c *Collector) Add(build func() *field.Error) {
	c.failed = true
	if !c.quick {
		c.list = append(c.list, build())
	}
}

// Stop reports whether a quick check may stop: it has seen an error.
func (c *Collector) Stop() bool { return c.quick && c.failed }

// Failed reports whether any error was added.
func (c *Collector) Failed() bool { return c.failed }

// All runs check with a collector that gathers every error, and returns
// them.
func All(check func(*Collector)) field.ErrorList {
	var c Collector
	check(&c)
	return c.list
}
