// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// inventory is a lookup webhook backend that knows the volumes in zones and
// counts the reviews it answers.
type inventory struct {
	zones  map[string]string // volume ID -> zone
	status int               // non-zero: answer with this status instead
	raw    string            // non-empty: answer with this body instead
	calls  atomic.Int32
}

func (i *inventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i.calls.Add(1)
	var review v1alpha1.PersistentVolumeLabelReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Kind != "PersistentVolumeLabelReview" ||
		review.APIVersion != v1alpha1.SchemeGroupVersion.String() {
		http.Error(w, fmt.Sprintf("bad review %+v: %v", review, err), http.StatusBadRequest)
		return
	}
	switch {
	case i.status != 0:
		http.Error(w, "down", i.status)
		return
	case i.raw != "":
		fmt.Fprint(w, i.raw)
		return
	}
	if zone, ok := i.zones[review.Spec.VolumeID]; ok {
		review.Status = v1alpha1.PersistentVolumeLabelReviewStatus{Found: true, Zones: []string{zone}, Labels: map[string]string{"example.com/name": review.Spec.Name}}
	}
	_ = json.NewEncoder(w).Encode(review)
}

// startInventory serves inv over TLS and returns a kubeconfig for it.
func startInventory(t *testing.T, inv *inventory) string {
	t.Helper()
	s := httptest.NewTLSServer(inv)
	t.Cleanup(s.Close)
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["inventory"] = &clientcmdapi.Cluster{
		Server:                   s.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}),
	}
	kubeconfig.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts["inventory"] = &clientcmdapi.Context{Cluster: "inventory", AuthInfo: "apiserver"}
	kubeconfig.CurrentContext = "inventory"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWebhook(t *testing.T) {
	cases := []struct {
		name     string
		options  string // webhook fields and top-level options
		backend  inventory
		volumes  []string // looked up in turn
		want     map[string]string
		wantErr  string
		wantHits int32
	}{
		{name: "found, region derived, answers cached", options: "gceRegionFromZone",
			backend: inventory{zones: map[string]string{"d1": "us-central1-a"}}, volumes: []string{"d1", "d1", "d1"},
			want: map[string]string{gaZone: "us-central1-a", gaRegion: "us-central1", "example.com/name": "pv"}, wantHits: 1},
		{name: "not found is cached too, Ignore", backend: inventory{}, volumes: []string{"d1", "d1"}, wantHits: 1},
		{name: "not found, Deny", options: "onNoMatch: Deny", backend: inventory{}, volumes: []string{"d1"},
			wantErr: "no rule, derivation or webhook gives it labels", wantHits: 1},
		{name: "cache off", options: "cacheTTL: 0s", backend: inventory{zones: map[string]string{"d1": "z"}}, volumes: []string{"d1", "d1"},
			want: map[string]string{gaZone: "z", "example.com/name": "pv"}, wantHits: 2},
		{name: "down, Fail", backend: inventory{status: http.StatusInternalServerError}, volumes: []string{"d1", "d1"},
			wantErr: "lookup webhook: an error on the server", wantHits: 2},
		{name: "down, Ignore", options: "failurePolicy: Ignore\nonNoMatch: Deny", backend: inventory{status: http.StatusServiceUnavailable},
			volumes: []string{"d1"}, wantHits: 1},
		{name: "found without topology", backend: inventory{raw: `{"apiVersion":"persistentvolumelabel.admission.turnstile.dev/v1alpha1","kind":"PersistentVolumeLabelReview","status":{"found":true}}`},
			volumes: []string{"d1"}, wantErr: "the answer says found but gives neither zones nor region", wantHits: 1},
		{name: "topology in labels", backend: inventory{raw: `{"apiVersion":"persistentvolumelabel.admission.turnstile.dev/v1alpha1","kind":"PersistentVolumeLabelReview","status":{"found":true,"region":"r","labels":{"topology.kubernetes.io/zone":"z"}}}`},
			volumes: []string{"d1"}, wantErr: "the answer sets topology.kubernetes.io/zone in labels", wantHits: 1},
		{name: "invalid label value", backend: inventory{raw: `{"apiVersion":"persistentvolumelabel.admission.turnstile.dev/v1alpha1","kind":"PersistentVolumeLabelReview","status":{"found":true,"region":"not a value"}}`},
			volumes: []string{"d1"}, wantErr: `the lookup webhook gave topology.kubernetes.io/region="not a value"`, wantHits: 1},
		{name: "not a review", backend: inventory{raw: `{"hello":"world"}`}, volumes: []string{"d1"}, wantErr: "lookup webhook: reading the answer", wantHits: 1},
	}
	for i := range cases {
		tc := &cases[i]
		t.Run(tc.name, func(t *testing.T) {
			kubeconfig := startInventory(t, &tc.backend)
			config := "webhook:\n  kubeConfigFile: " + kubeconfig + "\n"
			for _, o := range strings.Split(tc.options, "\n") {
				switch {
				case o == "gceRegionFromZone":
					config += "derive: {gceRegionFromZone: true}\n"
				case strings.HasPrefix(o, "onNoMatch"):
					config += o + "\n"
				case o != "":
					config += "  " + o + "\n"
				}
			}
			l := loadConfig(t, config)
			var got map[string]string
			var err error
			for _, id := range tc.volumes {
				v, _ := volumeOf(gcePV("pv", id))
				got, err = l.labels(context.Background(), v)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("labels = %v, want %v", got, tc.want)
			}
			if hits := tc.backend.calls.Load(); hits != tc.wantHits {
				t.Errorf("backend answered %d reviews, want %d", hits, tc.wantHits)
			}
		})
	}
}

// Rules and derivations answer before the webhook is asked.
func TestWebhookIsLast(t *testing.T) {
	backend := &inventory{zones: map[string]string{"rule-1": "from-webhook"}}
	l := loadConfig(t, "rules:\n- match: {volumeType: gcePersistentDisk, idRegex: '^rule-'}\n  zones: [from-rule]\nwebhook:\n  kubeConfigFile: "+startInventory(t, backend)+"\n")
	v, _ := volumeOf(gcePV("pv", "rule-1"))
	got, err := l.labels(context.Background(), v)
	if err != nil || got[gaZone] != "from-rule" || backend.calls.Load() != 0 {
		t.Errorf("labels = %v, %v after %d webhook calls; want the rule's zone and no call", got, err, backend.calls.Load())
	}
}
