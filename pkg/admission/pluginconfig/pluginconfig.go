// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

// Package pluginconfig decodes the configuration an admission plugin gets
// from its entry in --admission-control-config-file. Decoding is strict:
// unknown and duplicate fields, a wrong kind and an empty entry are errors
// that name the plugin, so a typo stops the apiserver instead of silently
// leaving a safety option off.
package pluginconfig

import (
	"bytes"
	"fmt"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Decode reads the plugin's configuration into into, whose kind must be
// registered in scheme. It reports false when the plugin has no entry (a nil
// reader), in which case into is left as it was.
func Decode(plugin string, config io.Reader, scheme *runtime.Scheme, into runtime.Object) (bool, error) {
	if config == nil || reflect.ValueOf(config).IsNil() {
		return false, nil
	}
	data, err := io.ReadAll(config)
	if err != nil {
		return false, fmt.Errorf("%s: reading its configuration: %w", plugin, err)
	}
	kinds, _, err := scheme.ObjectKinds(into)
	if err != nil {
		return false, fmt.Errorf("%s: %w", plugin, err)
	}
	want := kinds[0]
	if len(bytes.TrimSpace(data)) == 0 {
		return false, fmt.Errorf("%s: its configuration is empty; give apiVersion %s and kind %s, or remove the entry",
			plugin, want.GroupVersion(), want.Kind)
	}
	// Decoding without a target makes apiVersion and kind required, where a
	// typed target would let a file without them pass.
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	obj, _, err := decoder.Decode(data, nil, nil)
	if err != nil {
		return false, fmt.Errorf("%s: invalid configuration (want apiVersion %s, kind %s): %w", plugin, want.GroupVersion(), want.Kind, err)
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(into) {
		return false, fmt.Errorf("%s: configuration is a %T, want apiVersion %s, kind %s", plugin, obj, want.GroupVersion(), want.Kind)
	}
	reflect.ValueOf(into).Elem().Set(reflect.ValueOf(obj).Elem())
	return true, nil
}

// Kind is a restored plugin's configuration kind, in a scheme of its own.
// Its factory reads the configuration with Load and its descriptor checks
// it with Check, which is Load: the two cannot disagree.
type Kind[T any, PT interface {
	*T
	runtime.Object
}] struct {
	scheme   *runtime.Scheme
	validate []func(PT) error
}

// NewKind registers T as the kind of its name in gv, read strictly and then
// checked by each of validate.
func NewKind[T any, PT interface {
	*T
	runtime.Object
}](gv schema.GroupVersion, validate ...func(PT) error) *Kind[T, PT] {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, PT(new(T)))
	return &Kind[T, PT]{scheme: scheme, validate: validate}
}

// Load decodes and validates the plugin's configuration. Without an entry
// (a nil reader) it gives T's zero value, which is the plugin as upstream
// last shipped it, and which every field's validation accepts.
func (k *Kind[T, PT]) Load(plugin string, config io.Reader) (PT, error) {
	c := PT(new(T))
	found, err := Decode(plugin, config, k.scheme, c)
	if err != nil {
		return nil, err
	}
	if !found {
		return c, nil
	}
	for _, v := range k.validate {
		if err := v(c); err != nil {
			return nil, fmt.Errorf("%s: %w", plugin, err)
		}
	}
	return c, nil
}

// Check is a descriptor's check (pkg/admission/descriptor): Load of data.
func (k *Kind[T, PT]) Check(plugin string, data []byte) error {
	_, err := k.Load(plugin, bytes.NewReader(data))
	return err
}

// CheckByBuilding returns the check of a plugin whose validation happens as
// it compiles its configuration: it builds the plugin from the
// configuration and drops it.
func CheckByBuilding[T any](newFromConfig func(io.Reader) (T, error)) func(plugin string, data []byte) error {
	return func(_ string, data []byte) error {
		_, err := newFromConfig(bytes.NewReader(data))
		return err
	}
}
