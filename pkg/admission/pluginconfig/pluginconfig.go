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
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
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

// Check returns the strict check of a restored plugin's configuration (a
// descriptor's Check): the decoding the plugin's factory does with Decode,
// then each of validate.
func Check[T any, PT interface {
	*T
	runtime.Object
}](addToScheme func(*runtime.Scheme) error, validate ...func(PT) error) func(plugin string, data []byte) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(addToScheme(scheme))
	return func(plugin string, data []byte) error {
		c := PT(new(T))
		if _, err := Decode(plugin, bytes.NewReader(data), scheme, c); err != nil {
			return err
		}
		for _, v := range validate {
			if err := v(c); err != nil {
				return err
			}
		}
		return nil
	}
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
