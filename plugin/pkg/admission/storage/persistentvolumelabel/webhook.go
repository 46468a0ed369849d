// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package persistentvolumelabel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/turnstile-k8s/turnstile/plugin/pkg/admission/storage/persistentvolumelabel/apis/v1alpha1"
)

// codecs read and write the webhook's PersistentVolumeLabelReview.
var codecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(v1alpha1.SchemeGroupVersion, &v1alpha1.PersistentVolumeLabelReview{})
	return serializer.NewCodecFactory(scheme)
}()

// errWebhook marks the failures that failurePolicy governs.
var errWebhook = errors.New("lookup webhook")

// webhookSource asks an inventory service about volumes, in the manner of
// ImagePolicyWebhook: a kubeconfig names the service, answers are cached.
type webhookSource struct {
	client        *rest.RESTClient
	cache         *cache.LRUExpireCache
	ttl           time.Duration
	ignoreFailure bool
}

func newWebhookSource(p *field.Path, c *v1alpha1.Webhook) (*webhookSource, field.ErrorList) {
	var errs field.ErrorList
	timeout, ttl := defaultTimeout, defaultCacheTTL
	if c.Timeout != nil {
		if timeout = c.Timeout.Duration; timeout <= 0 || timeout > maxTimeout {
			errs = append(errs, field.Invalid(p.Child("timeout"), c.Timeout.Duration.String(), fmt.Sprintf("must be more than 0s and at most %s", maxTimeout)))
		}
	}
	if c.CacheTTL != nil {
		if ttl = c.CacheTTL.Duration; ttl < 0 {
			errs = append(errs, field.Invalid(p.Child("cacheTTL"), c.CacheTTL.Duration.String(), "must not be negative; 0 disables the cache"))
		}
	}
	errs = append(errs, oneOf(p.Child("failurePolicy"), c.FailurePolicy, failurePolicies, true)...)
	if c.KubeConfigFile == "" {
		return nil, append(errs, field.Required(p.Child("kubeConfigFile"), "the kubeconfig that names the service"))
	}
	config, err := webhook.LoadKubeconfig(c.KubeConfigFile, nil)
	if err != nil {
		return nil, append(errs, field.Invalid(p.Child("kubeConfigFile"), c.KubeConfigFile, err.Error()))
	}
	config = rest.CopyConfig(config)
	config.Timeout = timeout
	config.ContentType = "application/json"
	config.NegotiatedSerializer = codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, append(errs, field.Invalid(p.Child("kubeConfigFile"), c.KubeConfigFile, err.Error()))
	}
	return &webhookSource{
		client:        client,
		cache:         cache.NewLRUExpireCache(4096),
		ttl:           ttl,
		ignoreFailure: c.FailurePolicy == v1alpha1.IgnoreFailure,
	}, errs
}

func (w *webhookSource) lookup(ctx context.Context, v volume) (topology, bool, error) {
	key := string(v.typ) + "\x00" + v.driver + "\x00" + v.id
	if answer, ok := w.cache.Get(key); ok {
		return answer.(topology), answer.(topology).from != "", nil
	}
	review := &v1alpha1.PersistentVolumeLabelReview{
		Spec: v1alpha1.PersistentVolumeLabelReviewSpec{Name: v.pv.Name, VolumeType: v.typ, VolumeID: v.id, CSIDriver: v.driver},
	}
	review.APIVersion, review.Kind = v1alpha1.SchemeGroupVersion.String(), "PersistentVolumeLabelReview"
	result := w.client.Post().Body(review).Do(ctx)
	if err := result.Error(); err != nil {
		return topology{}, false, fmt.Errorf("%w: %w", errWebhook, err)
	}
	// The answer is read as JSON whatever its content type says, and must
	// name its apiVersion and kind, as ImageReview answers must.
	body, _ := result.Raw()
	obj, gvk, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return topology{}, false, fmt.Errorf("%w: reading the answer: %w", errWebhook, err)
	}
	answer, ok := obj.(*v1alpha1.PersistentVolumeLabelReview)
	if !ok {
		return topology{}, false, fmt.Errorf("%w: the answer is a %s, want a PersistentVolumeLabelReview", errWebhook, gvk)
	}
	s := answer.Status
	if s.Found && len(s.Zones) == 0 && s.Region == "" {
		return topology{}, false, fmt.Errorf("%w: the answer says found but gives neither zones nor region", errWebhook)
	}
	for k := range s.Labels {
		if slices.Contains(topologyKeys, k) {
			return topology{}, false, fmt.Errorf("%w: the answer sets %s in labels; zone and region go in zones and region", errWebhook, k)
		}
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return topology{}, false, fmt.Errorf("%w: the answer's label key %q: %s", errWebhook, k, strings.Join(msgs, "; "))
		}
	}
	t := topology{}
	if s.Found {
		t = topology{zones: s.Zones, region: s.Region, extra: s.Labels, from: "the lookup webhook"}
	}
	if w.ttl > 0 {
		w.cache.Add(key, t, w.ttl)
	}
	return t, s.Found, nil
}
