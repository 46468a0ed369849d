// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"k8s.io/apiserver/pkg/util/configmetrics"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metrics follow upstream's for reloading the authentication and
// authorization configuration (apiserver_authorization_config_controller_*).
const (
	namespace = "apiserver"
	subsystem = "admission_config_controller"
)

var (
	automaticReloadsTotal = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "automatic_reloads_total",
			Help:           "Total number of automatic reloads of the admission configuration split by status and apiserver identity.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"status", "apiserver_id_hash"},
	)
	automaticReloadLastTimestampSeconds = metrics.NewGaugeVec(
		&metrics.GaugeOpts{
			Namespace:      namespace,
			Subsystem:      subsystem,
			Name:           "automatic_reload_last_timestamp_seconds",
			Help:           "Timestamp of the last automatic reload of the admission configuration split by status and apiserver identity.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"status", "apiserver_id_hash"},
	)
	lastConfigInfo = metrics.NewDesc(
		metrics.BuildFQName(namespace, subsystem, "last_config_info"),
		"Information about the admission configuration in force with its hash as label, split by apiserver identity.",
		[]string{"apiserver_id_hash", "hash"},
		nil,
		metrics.ALPHA,
		"",
	)
	configHashProvider = configmetrics.NewAtomicHashProvider()
	registerMetrics    sync.Once
)

// RegisterMetrics registers the reload metrics once.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(automaticReloadsTotal)
		legacyregistry.MustRegister(automaticReloadLastTimestampSeconds)
		legacyregistry.CustomMustRegister(configmetrics.NewConfigInfoCustomCollector(lastConfigInfo, configHashProvider))
	})
}

func recordFailure(apiServerID string) {
	id := idHash(apiServerID)
	automaticReloadsTotal.WithLabelValues("failure", id).Inc()
	automaticReloadLastTimestampSeconds.WithLabelValues("failure", id).SetToCurrentTime()
}

func recordSuccess(apiServerID, hash string) {
	id := idHash(apiServerID)
	automaticReloadsTotal.WithLabelValues("success", id).Inc()
	automaticReloadLastTimestampSeconds.WithLabelValues("success", id).SetToCurrentTime()
	recordConfigInfo(apiServerID, hash)
}

func recordConfigInfo(apiServerID, hash string) {
	configHashProvider.SetHashes(idHash(apiServerID), hash)
}

func idHash(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(id)))
}
