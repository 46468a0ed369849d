// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/kube-openapi/pkg/validation/spec"
	upstreamopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	"sigs.k8s.io/yaml"

	"github.com/turnstile-k8s/turnstile/pkg/apis/policy"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/install"
	"github.com/turnstile-k8s/turnstile/pkg/apis/policy/v1beta1"
	generatedopenapi "github.com/turnstile-k8s/turnstile/pkg/generated/openapi"
)

// The testdata files are fixtures captured from a Kubernetes v1.24.17
// kube-apiserver (see /work/shared/reference/fixtures/README.md where they
// were recorded): what it wrote to etcd, what it served, and its OpenAPI v2
// definitions of the PSP kinds.

func codecs(t *testing.T) serializer.CodecFactory {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme)
}

func serializerFor(t *testing.T, cf serializer.CodecFactory, mediaType string) runtime.Serializer {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(cf.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	return info.Serializer
}

type etcdValue struct {
	name  string
	bytes []byte
}

// etcdValues reads psp-v1.24-etcd.json: every key v1.24 wrote under
// /registry/podsecuritypolicy/ with its raw value.
func etcdValues(t *testing.T) []etcdValue {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "psp-v1.24-etcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var kvs []struct {
		Key         string `json:"key"`
		ValueBase64 string `json:"valueBase64"`
	}
	if err := json.Unmarshal(raw, &kvs); err != nil {
		t.Fatal(err)
	}
	if len(kvs) == 0 {
		t.Fatal("no keys in psp-v1.24-etcd.json")
	}
	var out []etcdValue
	for _, kv := range kvs {
		b, err := base64.StdEncoding.DecodeString(kv.ValueBase64)
		if err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		name, ok := strings.CutPrefix(kv.Key, "/registry/podsecuritypolicy/")
		if !ok {
			t.Fatalf("unexpected key %s", kv.Key)
		}
		out = append(out, etcdValue{name: name, bytes: b})
	}
	return out
}

// servedObjects decodes psp-v1.24-served.yaml (kubectl get psp -o yaml) item
// by item with our JSON codec.
func servedObjects(t *testing.T, cf serializer.CodecFactory) map[string]*v1beta1.PodSecurityPolicy {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "psp-v1.24-served.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	dec := cf.DecoderToVersion(serializerFor(t, cf, runtime.ContentTypeJSON), v1beta1.SchemeGroupVersion)
	out := map[string]*v1beta1.PodSecurityPolicy{}
	for i, item := range list.Items {
		obj, _, err := dec.Decode(item, nil, nil)
		if err != nil {
			t.Fatalf("served item %d: %v", i, err)
		}
		psp, ok := obj.(*v1beta1.PodSecurityPolicy)
		if !ok {
			t.Fatalf("served item %d decoded to %T", i, obj)
		}
		out[psp.Name] = psp
	}
	return out
}

// TestV124EtcdDecodesAsServed decodes every value v1.24 stored with our
// protobuf codec and compares it field for field with what v1.24 served for
// the same object, decoded with our JSON codec.
func TestV124EtcdDecodesAsServed(t *testing.T) {
	cf := codecs(t)
	served := servedObjects(t, cf)
	dec := cf.DecoderToVersion(serializerFor(t, cf, runtime.ContentTypeProtobuf), v1beta1.SchemeGroupVersion)
	values := etcdValues(t)
	if len(values) != len(served) {
		t.Errorf("%d objects in etcd, %d served", len(values), len(served))
	}
	for _, v := range values {
		t.Run(v.name, func(t *testing.T) {
			obj, gvk, err := dec.Decode(v.bytes, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if gvk.GroupVersion() != v1beta1.SchemeGroupVersion || gvk.Kind != "PodSecurityPolicy" {
				t.Errorf("decoded as %v", gvk)
			}
			got, ok := obj.(*v1beta1.PodSecurityPolicy)
			if !ok {
				t.Fatalf("decoded to %T", obj)
			}
			want, ok := served[v.name]
			if !ok {
				t.Fatalf("%s was not served", v.name)
			}
			// kubectl does not show managedFields, and the resourceVersion
			// comes from etcd's revision, not from the stored bytes.
			if len(got.ManagedFields) == 0 {
				t.Error("stored object has no managedFields")
			}
			got.ManagedFields = nil
			if got.ResourceVersion != "" {
				t.Errorf("stored resourceVersion %q, want none", got.ResourceVersion)
			}
			want = want.DeepCopy()
			want.ResourceVersion = ""
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("etcd object differs from the served one (-served +etcd):\n%s", diff)
			}
			if got.Spec.AllowPrivilegeEscalation == nil {
				t.Error("allowPrivilegeEscalation not set")
			}
		})
	}
}

// TestV124EtcdReencodesIdentically re-encodes each value v1.24 stored, after
// decoding it to policy/v1beta1 and to the internal version, and requires
// the bytes v1.24 wrote: no field is dropped, renumbered or encoded
// differently, and conversion through the internal version loses nothing.
//
// The one difference is not ours: v1.24's ObjectMeta had field 15
// (clusterName, always written, empty), which apimachinery removed in v0.25,
// so every v1.36 type drops it on re-encoding. v124WithoutClusterName removes
// it from the expected bytes, and fails if it was not empty.
func TestV124EtcdReencodesIdentically(t *testing.T) {
	cf := codecs(t)
	proto := serializerFor(t, cf, runtime.ContentTypeProtobuf)
	enc := cf.EncoderForVersion(proto, v1beta1.SchemeGroupVersion)
	cases := []struct {
		name string
		dec  runtime.Decoder
	}{
		{"raw", proto},
		{"v1beta1 with defaults", cf.DecoderToVersion(proto, v1beta1.SchemeGroupVersion)},
		{"internal", cf.DecoderToVersion(proto, policy.SchemeGroupVersion)},
	}
	for _, v := range etcdValues(t) {
		want := v124WithoutClusterName(t, v.bytes)
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				obj, _, err := tc.dec.Decode(v.bytes, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.name == "internal" {
					if _, ok := obj.(*policy.PodSecurityPolicy); !ok {
						t.Fatalf("decoded to %T, want the internal type", obj)
					}
				}
				var buf bytes.Buffer
				if err := enc.Encode(obj, &buf); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), want) {
					t.Errorf("re-encoded %d bytes differ from v1.24's %d bytes (clusterName removed)\nours:  %q\nv1.24: %q",
						buf.Len(), len(want), buf.Bytes(), want)
				}
			})
		}
	}
}

// Protobuf field numbers of the envelope and the messages we walk.
const (
	unknownRawField        = 2  // runtime.Unknown.raw
	pspMetadataField       = 1  // PodSecurityPolicy.metadata
	pspSpecField           = 2  // PodSecurityPolicy.spec
	objectMetaClusterField = 15 // v1.24 ObjectMeta.clusterName
)

// v124WithoutClusterName returns the v1.24 value with the empty ObjectMeta
// field 15 removed and the enclosing lengths adjusted.
func v124WithoutClusterName(t *testing.T, value []byte) []byte {
	t.Helper()
	magic := []byte("k8s\x00")
	if !bytes.HasPrefix(value, magic) {
		t.Fatalf("no protobuf envelope: %q", value[:min(len(value), 8)])
	}
	removed := 0
	rewrite := func(b []byte, num int, f func([]byte) []byte) []byte {
		var out []byte
		for _, fld := range protoFields(t, b) {
			if fld.num == num && fld.wireType == 2 {
				out = appendLenField(out, num, f(fld.payload))
				continue
			}
			out = append(out, fld.raw...)
		}
		return out
	}
	unknown := rewrite(value[len(magic):], unknownRawField, func(psp []byte) []byte {
		var sawSpec bool
		for _, fld := range protoFields(t, psp) {
			sawSpec = sawSpec || fld.num == pspSpecField
		}
		if !sawSpec {
			t.Fatal("stored object has no spec")
		}
		return rewrite(psp, pspMetadataField, func(meta []byte) []byte {
			var out []byte
			for _, fld := range protoFields(t, meta) {
				if fld.num == objectMetaClusterField {
					if len(fld.payload) != 0 {
						t.Fatalf("v1.24 object has clusterName %q", fld.payload)
					}
					removed++
					continue
				}
				out = append(out, fld.raw...)
			}
			return out
		})
	})
	if removed != 1 {
		t.Fatalf("found clusterName %d times, want once", removed)
	}
	return append(append([]byte{}, magic...), unknown...)
}

type protoField struct {
	num      int
	wireType int
	payload  []byte // the value of a length-delimited field
	raw      []byte // the whole field, tag included
}

// protoFields splits a protobuf message into its top-level fields. The
// messages here only hold varint and length-delimited fields.
func protoFields(t *testing.T, b []byte) []protoField {
	t.Helper()
	var out []protoField
	for len(b) > 0 {
		start := b
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad tag at %q", b)
		}
		b = b[n:]
		fld := protoField{num: int(tag >> 3), wireType: int(tag & 7)}
		switch fld.wireType {
		case 0:
			_, n = binary.Uvarint(b)
			if n <= 0 {
				t.Fatalf("bad varint in field %d", fld.num)
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				t.Fatalf("bad length in field %d", fld.num)
			}
			fld.payload = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			t.Fatalf("field %d: unexpected wire type %d", fld.num, fld.wireType)
		}
		fld.raw = start[:len(start)-len(b)]
		out = append(out, fld)
	}
	return out
}

func appendLenField(b []byte, num int, payload []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// TestOpenAPIDefinitionsMatchV124 compares our generated OpenAPI definitions
// of the PSP kinds with v1.24's /openapi/v2: the same definition names, and
// per definition the same properties with the same type, format, $ref and
// item schema, and the same required fields. Descriptions are ours;
// x-kubernetes-group-version-kind is added by the server when it serves the
// spec, not by the generator.
func TestOpenAPIDefinitionsMatchV124(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "psp-v1.24-openapi-v2-definitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]spec.Schema
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	defs := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + name)
	})
	var ours []string
	for name := range defs {
		if strings.HasPrefix(name, "io.k8s.api.policy.v1beta1.") {
			ours = append(ours, name)
		}
	}
	var theirs []string
	for name := range want {
		theirs = append(theirs, name)
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("definition names differ (-v1.24 +ours):\n%s", diff)
	}
	for _, name := range theirs {
		def, ok := defs[name]
		if !ok {
			continue
		}
		t.Run(strings.TrimPrefix(name, "io.k8s.api.policy.v1beta1."), func(t *testing.T) {
			if diff := cmp.Diff(shape(want[name]), shape(def.Schema)); diff != "" {
				t.Errorf("schema differs (-v1.24 +ours):\n%s", diff)
			}
		})
	}
	// The refs our definitions make must resolve to ours or to definitions
	// upstream's kube-apiserver serves under the same names.
	upstream := upstreamopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + name)
	})
	for _, name := range ours {
		for _, dep := range defs[name].Dependencies {
			_, inOurs := defs[dep]
			if _, inUpstream := upstream[dep]; !inOurs && !inUpstream {
				t.Errorf("%s depends on %s, which is not defined", name, dep)
			}
		}
	}
}

// schemaShape is what the comparison looks at in one schema.
type schemaShape struct {
	Type       []string
	Format     string
	Ref        string
	Items      *schemaShape
	Required   []string
	Properties map[string]schemaShape
}

func shape(s spec.Schema) schemaShape {
	out := schemaShape{
		Type:     s.Type,
		Format:   s.Format,
		Ref:      s.Ref.String(),
		Required: slices.Sorted(slices.Values(s.Required)),
	}
	if s.Items != nil && s.Items.Schema != nil {
		items := shape(*s.Items.Schema)
		out.Items = &items
	}
	if len(s.Properties) > 0 {
		out.Properties = map[string]schemaShape{}
		for k, v := range s.Properties {
			out.Properties[k] = shape(v)
		}
	}
	return out
}
