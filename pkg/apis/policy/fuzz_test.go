// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package policy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/validation"
)

// FuzzPodSecurityPolicyDecode feeds a policy/v1beta1 body, JSON or
// protobuf, as any client who may create a policy can send one, through
// what the apiserver does with it: decode, default, convert to the internal
// version, validate. Nothing may panic, and a policy that validates must
// come back the same after encoding and decoding it again, or what is
// stored is not what was checked.
func FuzzPodSecurityPolicyDecode(f *testing.F) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	decoder := codecs.UniversalDecoder(policy.SchemeGroupVersion)
	encoder := codecs.LegacyCodec(v1beta1.SchemeGroupVersion)
	pb := protobuf.NewSerializer(scheme, scheme)

	examples, err := os.ReadFile("../../../examples/podsecuritypolicy/policies.yaml")
	if err != nil {
		f.Fatal(err)
	}
	docs := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(examples), 4096)
	for {
		var raw runtime.RawExtension
		if err := docs.Decode(&raw); err != nil {
			break
		}
		if !strings.Contains(string(raw.Raw), `"PodSecurityPolicy"`) {
			continue
		}
		f.Add(raw.Raw)
		obj, _, err := decoder.Decode(raw.Raw, nil, nil)
		if err != nil {
			f.Fatal(err)
		}
		external, err := scheme.ConvertToVersion(obj, v1beta1.SchemeGroupVersion)
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := pb.Encode(external, &buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte(`{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"x"},"spec":{"hostPorts":[{"min":-1,"max":70000}],"runAsUser":{"rule":"MustRunAs","ranges":[{"min":5,"max":1}]}}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		obj, _, err := decoder.Decode(data, nil, nil)
		if err != nil {
			return
		}
		psp, ok := obj.(*policy.PodSecurityPolicy)
		if !ok {
			return
		}
		if errs := validation.ValidatePodSecurityPolicy(psp); len(errs) > 0 {
			return
		}
		for _, media := range []string{"json", "protobuf"} {
			var buf bytes.Buffer
			if media == "json" {
				if err := encoder.Encode(psp, &buf); err != nil {
					t.Fatalf("encoding a valid policy as JSON: %v", err)
				}
			} else {
				external, err := scheme.ConvertToVersion(psp.DeepCopy(), v1beta1.SchemeGroupVersion)
				if err != nil {
					t.Fatalf("converting a valid policy to v1beta1: %v", err)
				}
				if err := pb.Encode(external, &buf); err != nil {
					t.Fatalf("encoding a valid policy as protobuf: %v", err)
				}
			}
			again, _, err := decoder.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("decoding a valid policy's %s again: %v", media, err)
			}
			if !apiequality.Semantic.DeepEqual(psp, again) {
				t.Fatalf("a valid policy changed through %s:\n%#v\n%#v", media, psp, again)
			}
		}
	})
}
