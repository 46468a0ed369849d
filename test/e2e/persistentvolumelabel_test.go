// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// volumeInventory is the HTTPS lookup service PersistentVolumeLabel's
// webhook asks: it knows some volumes' zones, or is down.
type volumeInventory struct {
	zones map[string]string // volume ID -> zone
	down  atomic.Bool
	calls atomic.Int32
}

func (i *volumeInventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i.calls.Add(1)
	if i.down.Load() {
		http.Error(w, "inventory is down", http.StatusInternalServerError)
		return
	}
	var review v1alpha1.PersistentVolumeLabelReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if zone, ok := i.zones[review.Spec.VolumeID]; ok {
		review.Status = v1alpha1.PersistentVolumeLabelReviewStatus{Found: true, Zones: []string{zone},
			Labels: map[string]string{"example.com/inventory": "yes"}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// serveInventory starts inv on TLS and writes the kubeconfig that the
// plugin's webhook section names.
func serveInventory(t *testing.T, inv *volumeInventory, dir string) string {
	t.Helper()
	s := httptest.NewTLSServer(inv)
	t.Cleanup(s.Close)
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["inventory"] = &clientcmdapi.Cluster{Server: s.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
	kubeconfig.AuthInfos["kube-apiserver"] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts["inventory"] = &clientcmdapi.Context{Cluster: "inventory", AuthInfo: "kube-apiserver"}
	kubeconfig.CurrentContext = "inventory"
	path := filepath.Join(dir, "inventory.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startLabellingServer starts an apiserver with PersistentVolumeLabel and
// the given AdmissionConfiguration, on its own etcd prefix.
func startLabellingServer(t *testing.T, name, admissionConfig string) kubernetes.Interface {
	t.Helper()
	_, c := startServer(t, name, "--enable-admission-plugins=PersistentVolumeLabel", "--admission-control-config-file="+admissionConfig)
	return c
}

func persistentVolume(name string, source corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: source,
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		},
	}
}

func gceDisk(pdName string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: pdName}}
}

func nodeAffinity(terms ...[]corev1.NodeSelectorRequirement) *corev1.VolumeNodeAffinity {
	sel := &corev1.NodeSelector{}
	for _, t := range terms {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return &corev1.VolumeNodeAffinity{Required: sel}
}

func inValues(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// affinityString renders node affinity terms with sorted expressions, so
// that expected and stored affinities compare as text.
func affinityString(a *corev1.VolumeNodeAffinity) string {
	if a == nil || a.Required == nil {
		return "none"
	}
	var terms []string
	for _, t := range a.Required.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			exprs = append(exprs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		slices.Sort(exprs)
		terms = append(terms, "{"+strings.Join(exprs, "; ")+"}")
	}
	return strings.Join(terms, " OR ")
}

const (
	topologyZone   = "topology.kubernetes.io/zone"
	topologyRegion = "topology.kubernetes.io/region"
)

// TestPersistentVolumeLabel creates PersistentVolumes of every looked-up
// volume type through the real binary with a rules file and a lookup
// webhook, and checks their labels and node affinity; the shared server,
// which does not enable the plugin, leaves the same volumes alone.
func TestPersistentVolumeLabel(t *testing.T) {
	t.Parallel() // long and independent of the others: see "Running in parallel" in README.md
	dir := filepath.Join(root, "pvl-config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("testdata/persistentvolumelabel/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inventory := &volumeInventory{zones: map[string]string{"inventory-disk": "us-east1-d"}}
	kubeconfig := serveInventory(t, inventory, dir)

	// "pvl-fail": rules, derivations, and the webhook with failurePolicy
	// Fail; its configuration by path.
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("pvl.yaml", string(rules)+"webhook:\n  kubeConfigFile: "+kubeconfig+"\n  cacheTTL: 0s\n  failurePolicy: Fail\n")
	failing := startLabellingServer(t, "pvl-fail", write("admission-fail.yaml",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PersistentVolumeLabel\n  path: pvl.yaml\n"))
	// "pvl-ignore": only the webhook, failurePolicy Ignore, onNoMatch Deny,
	// Beta labels; its configuration inline.
	ignoring := startLabellingServer(t, "pvl-ignore", write("admission-ignore.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PersistentVolumeLabel
  configuration:
    apiVersion: persistentvolumelabel.admission.turnstile.dev/v1alpha1
    kind: PersistentVolumeLabelConfiguration
    labelStyle: Beta
    onNoMatch: Deny
    webhook:
      kubeConfigFile: `+kubeconfig+`
      cacheTTL: 0s
      failurePolicy: Ignore
`))
	plain := adminClient(t)

	gkeAffinity := nodeAffinity([]corev1.NodeSelectorRequirement{inValues("topology.gke.io/zone", "us-west1-c")})
	cases := []struct {
		name       string
		pv         *corev1.PersistentVolume
		wantLabels map[string]string
		// wantAffinity is the node affinity as affinityString renders it.
		wantAffinity string
	}{{
		name:         "gce rule with capture groups",
		pv:           persistentVolume("gce-zonal", gceDisk("prod-us-central1-c-db")),
		wantLabels:   map[string]string{topologyZone: "us-central1-c", topologyRegion: "us-central1", "example.com/environment": "prod"},
		wantAffinity: "{example.com/environment In [prod]; topology.kubernetes.io/region In [us-central1]; topology.kubernetes.io/zone In [us-central1-c]}",
	}, {
		name:         "gce regional disk",
		pv:           persistentVolume("gce-regional", gceDisk("regional-logs")),
		wantLabels:   map[string]string{topologyZone: "europe-west1-c__europe-west1-b", topologyRegion: "europe-west1"},
		wantAffinity: "{topology.kubernetes.io/region In [europe-west1]; topology.kubernetes.io/zone In [europe-west1-b europe-west1-c]}",
	}, {
		name: "aws zone derived from the volume ID",
		pv: persistentVolume("aws", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
			VolumeID: "aws://eu-central-1a/vol-0123"}}),
		wantLabels:   map[string]string{topologyZone: "eu-central-1a", topologyRegion: "eu-central-1"},
		wantAffinity: "{topology.kubernetes.io/region In [eu-central-1]; topology.kubernetes.io/zone In [eu-central-1a]}",
	}, {
		name: "azure disk URI",
		pv: persistentVolume("azure", corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
			DiskName: "d1", DataDiskURI: "/subscriptions/s/resourceGroups/westeurope-1/providers/Microsoft.Compute/disks/d1",
			Kind: ptr.To(corev1.AzureManagedDisk)}}),
		wantLabels:   map[string]string{topologyZone: "westeurope-1", topologyRegion: "westeurope"},
		wantAffinity: "{topology.kubernetes.io/region In [westeurope]; topology.kubernetes.io/zone In [westeurope-1]}",
	}, {
		name: "cinder",
		pv: persistentVolume("cinder", corev1.PersistentVolumeSource{Cinder: &corev1.CinderPersistentVolumeSource{
			VolumeID: "nova-42"}}),
		wantLabels:   map[string]string{topologyZone: "nova", topologyRegion: "RegionOne"},
		wantAffinity: "{topology.kubernetes.io/region In [RegionOne]; topology.kubernetes.io/zone In [nova]}",
	}, {
		name: "vsphere",
		pv: persistentVolume("vsphere", corev1.PersistentVolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{
			VolumePath: "[ds-zone-b] kubevols/v1.vmdk"}}),
		wantLabels:   map[string]string{topologyZone: "zone-b", topologyRegion: "dc-1"},
		wantAffinity: "{topology.kubernetes.io/region In [dc-1]; topology.kubernetes.io/zone In [zone-b]}",
	}, {
		name: "csi rule, region from the zone",
		pv: persistentVolume("csi-gke", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "pd.csi.storage.gke.io", VolumeHandle: "projects/p/zones/asia-east1-a/disks/d"}}),
		wantLabels:   map[string]string{topologyZone: "asia-east1-a", topologyRegion: "asia-east1"},
		wantAffinity: "{topology.kubernetes.io/region In [asia-east1]; topology.kubernetes.io/zone In [asia-east1-a]}",
	}, {
		name: "csi topology key translated and appended to the existing term",
		pv: func() *corev1.PersistentVolume {
			pv := persistentVolume("csi-gke-topology", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "pd.csi.storage.gke.io", VolumeHandle: "disk-without-zone"}})
			pv.Spec.NodeAffinity = gkeAffinity
			return pv
		}(),
		wantLabels:   map[string]string{topologyZone: "us-west1-c", topologyRegion: "us-west1"},
		wantAffinity: "{topology.gke.io/zone In [us-west1-c]; topology.kubernetes.io/region In [us-west1]; topology.kubernetes.io/zone In [us-west1-c]}",
	}, {
		name:         "unknown to the rules, known to the inventory",
		pv:           persistentVolume("inventory", gceDisk("inventory-disk")),
		wantLabels:   map[string]string{topologyZone: "us-east1-d", topologyRegion: "us-east1", "example.com/inventory": "yes"},
		wantAffinity: "{example.com/inventory In [yes]; topology.kubernetes.io/region In [us-east1]; topology.kubernetes.io/zone In [us-east1-d]}",
	}, {
		name:         "unknown everywhere: onNoMatch Ignore",
		pv:           persistentVolume("unknown", gceDisk("nobody-knows")),
		wantAffinity: "none",
	}, {
		name:         "hostPath has no ID",
		pv:           persistentVolume("hostpath", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}),
		wantAffinity: "none",
	}, {
		name: "dynamically provisioned labels are trusted",
		pv: func() *corev1.PersistentVolume {
			pv := persistentVolume("dynamic", gceDisk("nobody-knows-2"))
			pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "pd.csi.storage.gke.io"}
			pv.Labels = map[string]string{topologyZone: "us-west1-b", topologyRegion: "us-west1"}
			return pv
		}(),
		wantLabels:   map[string]string{topologyZone: "us-west1-b", topologyRegion: "us-west1"},
		wantAffinity: "{topology.kubernetes.io/region In [us-west1]; topology.kubernetes.io/zone In [us-west1-b]}",
	}, {
		name: "user's affinity on a label key is left alone, labels overwritten",
		pv: func() *corev1.PersistentVolume {
			pv := persistentVolume("conflict", gceDisk("dev-us-central1-f-cache"))
			pv.Labels = map[string]string{topologyZone: "wrong"}
			pv.Spec.NodeAffinity = nodeAffinity([]corev1.NodeSelectorRequirement{inValues(topologyZone, "us-central1-f")})
			return pv
		}(),
		wantLabels:   map[string]string{topologyZone: "us-central1-f", topologyRegion: "us-central1", "example.com/environment": "dev"},
		wantAffinity: "{topology.kubernetes.io/zone In [us-central1-f]}",
	}}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := failing.CoreV1().PersistentVolumes().Create(ctx, tc.pv.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = failing.CoreV1().PersistentVolumes().Delete(ctx, got.Name, metav1.DeleteOptions{}) })
			wantLabels := tc.wantLabels
			if wantLabels == nil {
				wantLabels = tc.pv.Labels
			}
			if !maps.Equal(got.Labels, wantLabels) {
				t.Errorf("labels = %v, want %v", got.Labels, wantLabels)
			}
			if a := affinityString(got.Spec.NodeAffinity); a != tc.wantAffinity {
				t.Errorf("node affinity = %s\nwant           %s", a, tc.wantAffinity)
			}

			// Without the plugin the same volume is stored as given.
			plainPV, err := plain.CoreV1().PersistentVolumes().Create(ctx, tc.pv.DeepCopy(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = plain.CoreV1().PersistentVolumes().Delete(ctx, plainPV.Name, metav1.DeleteOptions{}) })
			if !maps.Equal(plainPV.Labels, tc.pv.Labels) || affinityString(plainPV.Spec.NodeAffinity) != affinityString(tc.pv.Spec.NodeAffinity) {
				t.Errorf("the shared server (plugin off) changed the volume: labels %v, affinity %s", plainPV.Labels, affinityString(plainPV.Spec.NodeAffinity))
			}
		})
	}

	t.Run("updates are not relabelled", func(t *testing.T) {
		pv, err := failing.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("update", gceDisk("prod-us-central1-a-x")), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = failing.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}) })
		pv.Labels[topologyZone] = "edited"
		pv, err = failing.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pv.Labels[topologyZone] != "edited" {
			t.Errorf("zone label after update = %q, want the user's edit", pv.Labels[topologyZone])
		}
	})

	t.Run("webhook down, failurePolicy Fail", func(t *testing.T) {
		inventory.down.Store(true)
		defer inventory.down.Store(false)
		before := inventory.calls.Load()
		_, err := failing.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("down-fail", gceDisk("inventory-disk")), metav1.CreateOptions{})
		want := `persistentvolumes "down-fail" is forbidden: error querying GCE PD volume inventory-disk: lookup webhook:`
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want Forbidden %q", err, want)
		}
		if inventory.calls.Load() == before {
			t.Error("the inventory was not asked")
		}
		// A rule still answers without the webhook.
		pv, err := failing.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("down-rule", gceDisk("prod-us-central1-b-x")), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a volume a rule labels was refused while the webhook is down: %v", err)
		}
		_ = failing.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	})

	t.Run("onNoMatch Deny, Beta labels, webhook down with failurePolicy Ignore", func(t *testing.T) {
		pv, err := ignoring.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("beta", gceDisk("inventory-disk")), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = ignoring.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if pv.Labels["failure-domain.beta.kubernetes.io/zone"] != "us-east1-d" || pv.Labels[topologyZone] != "" {
			t.Errorf("labels = %v, want the Beta zone label only", pv.Labels)
		}

		_, err = ignoring.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("denied", gceDisk("nobody-knows")), metav1.CreateOptions{})
		want := `persistentvolumes "denied" is forbidden: error querying GCE PD volume nobody-knows: no rule, derivation or webhook gives it labels (onNoMatch: Deny)`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("error = %v, want %q", err, want)
		}

		inventory.down.Store(true)
		defer inventory.down.Store(false)
		pv, err = ignoring.CoreV1().PersistentVolumes().Create(ctx, persistentVolume("ignored", gceDisk("inventory-disk")), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("failurePolicy Ignore refused the volume: %v", err)
		}
		_ = ignoring.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		if len(pv.Labels) != 0 || pv.Spec.NodeAffinity != nil {
			t.Errorf("volume admitted while the webhook is down has labels %v, affinity %s; want none", pv.Labels, affinityString(pv.Spec.NodeAffinity))
		}
	})
}

// An invalid rule stops the apiserver at start-up, naming the file, the
// plugin, the rule and the field.
func TestPersistentVolumeLabelInvalidConfig(t *testing.T) {
	config, err := filepath.Abs("testdata/persistentvolumelabel/invalid-regex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	expectRefusal(t, configCheckArgs(t, "--enable-admission-plugins=PersistentVolumeLabel", "--admission-control-config-file="+config), "admission-control-config-file "+config+`: plugin PersistentVolumeLabel (inline configuration, plugins[0]): `+
		`PersistentVolumeLabel: invalid configuration: rules[0].match.idRegex: Invalid value: "^prod-(us-central1": rule "broken": error parsing regexp: missing closing ): `)
}
