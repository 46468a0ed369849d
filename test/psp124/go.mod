module github.com/turnstile-k8s/turnstile/test/psp124

go 1.26.0

require (
	k8s.io/api v0.24.17
	k8s.io/apimachinery v0.24.17
	k8s.io/apiserver v0.0.0
	k8s.io/client-go v0.24.17
	k8s.io/kubernetes v1.24.17
)

require (
	github.com/PuerkitoBio/purell v1.1.1 // indirect
	github.com/PuerkitoBio/urlesc v0.0.0-20170810143723-de5bf2ad4578 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cespare/xxhash/v2 v2.1.2 // indirect
	github.com/cyphar/filepath-securejoin v0.2.3 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/docker/distribution v2.8.1+incompatible // indirect
	github.com/emicklei/go-restful v2.9.5+incompatible // indirect
	github.com/evanphx/json-patch v4.12.0+incompatible // indirect
	github.com/felixge/httpsnoop v1.0.1 // indirect
	github.com/go-logr/logr v1.2.0 // indirect
	github.com/go-openapi/jsonpointer v0.19.5 // indirect
	github.com/go-openapi/jsonreference v0.19.5 // indirect
	github.com/go-openapi/swag v0.19.14 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.2 // indirect
	github.com/google/gnostic v0.5.7-v3refs // indirect
	github.com/google/go-cmp v0.5.5 // indirect
	github.com/google/gofuzz v1.1.0 // indirect
	github.com/google/uuid v1.3.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway v1.16.0 // indirect
	github.com/imdario/mergo v0.3.5 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.7.6 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.2-0.20181231171920-c182affec369 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/runc v1.1.6 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_golang v1.12.1 // indirect
	github.com/prometheus/client_model v0.2.0 // indirect
	github.com/prometheus/common v0.32.1 // indirect
	github.com/prometheus/procfs v0.7.3 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	go.opentelemetry.io/contrib v0.20.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.20.0 // indirect
	go.opentelemetry.io/otel v0.20.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp v0.20.0 // indirect
	go.opentelemetry.io/otel/metric v0.20.0 // indirect
	go.opentelemetry.io/otel/sdk v0.20.0 // indirect
	go.opentelemetry.io/otel/sdk/export/metric v0.20.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v0.20.0 // indirect
	go.opentelemetry.io/otel/trace v0.20.0 // indirect
	go.opentelemetry.io/proto/otlp v0.7.0 // indirect
	golang.org/x/net v0.8.0 // indirect
	golang.org/x/oauth2 v0.0.0-20211104180415-d3ed0bb246c8 // indirect
	golang.org/x/sys v0.6.0 // indirect
	golang.org/x/term v0.6.0 // indirect
	golang.org/x/text v0.8.0 // indirect
	golang.org/x/time v0.0.0-20220210224613-90d013bbcef8 // indirect
	google.golang.org/appengine v1.6.7 // indirect
	google.golang.org/genproto v0.0.0-20220107163113-42d7afdf6368 // indirect
	google.golang.org/grpc v1.40.0 // indirect
	google.golang.org/protobuf v1.27.1 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/component-base v0.24.17 // indirect
	k8s.io/component-helpers v0.0.0 // indirect
	k8s.io/klog/v2 v2.60.1 // indirect
	k8s.io/kube-openapi v0.0.0-20220328201542-3ee0da9b0b42 // indirect
	k8s.io/utils v0.0.0-20220210201930-3a6ce19ff2f9 // indirect
	sigs.k8s.io/apiserver-network-proxy/konnectivity-client v0.0.37 // indirect
	sigs.k8s.io/json v0.0.0-20211208200746-9f7c6b3444d2 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.2.3 // indirect
	sigs.k8s.io/yaml v1.2.0 // indirect
)

replace k8s.io/api => k8s.io/api v0.24.17

replace k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.24.17

replace k8s.io/apimachinery => k8s.io/apimachinery v0.24.17

replace k8s.io/apiserver => k8s.io/apiserver v0.24.17

replace k8s.io/cli-runtime => k8s.io/cli-runtime v0.24.17

replace k8s.io/client-go => k8s.io/client-go v0.24.17

replace k8s.io/cloud-provider => k8s.io/cloud-provider v0.24.17

replace k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.24.17

replace k8s.io/code-generator => k8s.io/code-generator v0.24.17

replace k8s.io/component-base => k8s.io/component-base v0.24.17

replace k8s.io/component-helpers => k8s.io/component-helpers v0.24.17

replace k8s.io/controller-manager => k8s.io/controller-manager v0.24.17

replace k8s.io/cri-api => k8s.io/cri-api v0.24.17

replace k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.24.17

replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.24.17

replace k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.24.17

replace k8s.io/kube-proxy => k8s.io/kube-proxy v0.24.17

replace k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.24.17

replace k8s.io/kubectl => k8s.io/kubectl v0.24.17

replace k8s.io/kubelet => k8s.io/kubelet v0.24.17

replace k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.24.17

replace k8s.io/metrics => k8s.io/metrics v0.24.17

replace k8s.io/mount-utils => k8s.io/mount-utils v0.24.17

replace k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.24.17

replace k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.24.17

replace k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.24.17

replace k8s.io/sample-controller => k8s.io/sample-controller v0.24.17
