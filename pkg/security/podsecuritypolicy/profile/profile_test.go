package profile

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestNameAndField(t *testing.T) {
	cases := []struct {
		name      string
		typ       string
		localhost *string
		wantErr   bool
	}{
		{name: "runtime/default", typ: "RuntimeDefault"},
		{name: "unconfined", typ: "Unconfined"},
		{name: "localhost/profiles/audit.json", typ: "Localhost", localhost: ptr.To("profiles/audit.json")},
		{name: "localhost/", wantErr: true},
		{name: "docker/default", wantErr: true}, // seccomp maps it before asking
		{name: "", wantErr: true},
	}
	for _, tc := range cases {
		typ, localhost, err := Field(tc.name)
		if (err != nil) != tc.wantErr {
			t.Errorf("Field(%q) error = %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if typ != tc.typ || ptr.Deref(localhost, "") != ptr.Deref(tc.localhost, "") {
			t.Errorf("Field(%q) = %q, %v; want %q, %v", tc.name, typ, ptr.Deref(localhost, ""), tc.typ, ptr.Deref(tc.localhost, ""))
		}
		if back := Name(typ, localhost); back != tc.name {
			t.Errorf("Name(Field(%q)) = %q", tc.name, back)
		}
	}
	if got := Name("Localhost", nil); got != "" {
		t.Errorf("Name(Localhost, nil) = %q, want empty", got)
	}
}
