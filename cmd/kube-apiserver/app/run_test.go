package app

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The aggregator creates the APIService v1beta1.policy only while upstream's
// linked priority table still lists policy/v1beta1.
func TestAPIVersionPrioritiesListPolicyV1beta1(t *testing.T) {
	if len(apiVersionPriorities) == 0 {
		t.Fatal("upstream's apiVersionPriorities is empty: the go:linkname no longer finds it")
	}
	if _, ok := apiVersionPriorities[schema.GroupVersion{Group: "policy", Version: "v1beta1"}]; !ok {
		t.Error("upstream's apiVersionPriorities lacks policy/v1beta1")
	}
}
