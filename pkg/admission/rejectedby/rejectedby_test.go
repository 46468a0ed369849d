// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package rejectedby

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

type fake struct {
	*admission.Handler
	err error
}

type fakeMutating struct{ fake }

func (f fakeMutating) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return f.err
}

type fakeValidating struct{ fake }

func (f fakeValidating) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return f.err
}

type fakeBoth struct {
	fakeMutating
	fakeValidating
}

func (f fakeBoth) Handles(op admission.Operation) bool { return f.fakeMutating.Handles(op) }

// recorder keeps the annotations a plugin adds, as the apiserver's own
// attributes do for the audit event.
type recorder struct {
	admission.Attributes
	annotations map[string]string
}

func (r *recorder) AddAnnotation(key, value string) error {
	r.annotations[key] = value
	return r.Attributes.AddAnnotation(key, value)
}

func attributes() *recorder {
	return &recorder{
		Attributes:  admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{}, "ns", "name", schema.GroupVersionResource{Resource: "pods"}, "", admission.Create, nil, false, nil),
		annotations: map[string]string{},
	}
}

func TestDecorator(t *testing.T) {
	denied := errors.New("denied")
	handler := admission.NewHandler(admission.Create)
	for _, tc := range []struct {
		name               string
		plugin             admission.Interface
		err                error
		mutates, validates bool
		refuses            bool
	}{
		{"mutating refuses", fakeMutating{fake{handler, denied}}, denied, true, false, true},
		{"mutating admits", fakeMutating{fake{handler, nil}}, nil, true, false, false},
		{"validating refuses", fakeValidating{fake{handler, denied}}, denied, false, true, true},
		{"validating admits", fakeValidating{fake{handler, nil}}, nil, false, true, false},
		{"both, refuses in each phase", fakeBoth{fakeMutating{fake{handler, denied}}, fakeValidating{fake{handler, denied}}}, denied, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decorator.Decorate(tc.plugin, "Example")
			if _, ok := d.(admission.MutationInterface); ok != tc.mutates {
				t.Errorf("decorated plugin mutates: %v, want %v", ok, tc.mutates)
			}
			if _, ok := d.(admission.ValidationInterface); ok != tc.validates {
				t.Errorf("decorated plugin validates: %v, want %v", ok, tc.validates)
			}
			if !d.Handles(admission.Create) || d.Handles(admission.Delete) {
				t.Error("Handles is not the plugin's")
			}
			phases := map[string]func(*recorder) error{}
			if m, ok := d.(admission.MutationInterface); ok {
				phases["mutating"] = func(a *recorder) error { return m.Admit(context.Background(), a, nil) }
			}
			if v, ok := d.(admission.ValidationInterface); ok {
				phases["validating"] = func(a *recorder) error { return v.Validate(context.Background(), a, nil) }
			}
			for phase, call := range phases {
				a := attributes()
				if err := call(a); !errors.Is(err, tc.err) {
					t.Errorf("%s: error %v, want the plugin's %v", phase, err, tc.err)
				}
				switch {
				case !tc.refuses && len(a.annotations) != 0:
					t.Errorf("%s: annotations %v on an admitted request", phase, a.annotations)
				case tc.refuses && (a.annotations[PluginKey] != "Example" || a.annotations[PhaseKey] != phase):
					t.Errorf("%s: annotations %v, want %s=Example and %s=%s", phase, a.annotations, PluginKey, PhaseKey, phase)
				}
			}
		})
	}
	if plain := admission.Interface(handler); Decorator.Decorate(plain, "Neither") != plain {
		t.Error("a plugin that neither mutates nor validates was wrapped")
	}
}

func BenchmarkDecoratedAdmit(b *testing.B) {
	plugin := fakeMutating{fake{admission.NewHandler(admission.Create), nil}}
	for _, bc := range []struct {
		name string
		m    admission.MutationInterface
	}{
		{"plain", plugin},
		{"decorated", Decorator.Decorate(plugin, "Example").(admission.MutationInterface)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a := attributes()
			for b.Loop() {
				_ = bc.m.Admit(context.Background(), a, nil)
			}
		})
	}
}
