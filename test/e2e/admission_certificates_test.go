// Copyright 2026 The Turnstile Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodecertSigner is the signerName of the area's CSRs and trust bundles;
// nothing signs for it, so only the tests' users act on them.
const nodecertSigner = "e2e.turnstile.dev/nodecert"

// nodecertCSRRequest is a PEM PKCS#10 request for CN=cn, O=orgs.
func nodecertCSRRequest(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// createCSR creates a CSR through the server's admin and deletes it at the
// end of the test; err is the creation's answer.
func (s *nodecertServer) createCSR(t *testing.T, name, signer string, orgs ...string) (*certificatesv1.CertificateSigningRequest, error) {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    nodecertCSRRequest(t, "e2e-"+name, orgs...),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	created, err := s.admin.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{})
	if err == nil {
		t.Cleanup(func() {
			_ = s.admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	return created, err
}

func (s *nodecertServer) mustCreateCSR(t *testing.T, name, signer string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	csr, err := s.createCSR(t, name, signer)
	if err != nil {
		t.Fatalf("creating CSR %s: %v", name, err)
	}
	return csr
}

// nodecertCSRUsers grants two users what it takes to approve and sign CSRs
// through the API (update on certificatesigningrequests/approval and
// /status): the clerk has nothing on signers, the officer has approve and
// sign on nodecertSigner alone.
func nodecertCSRUsers(t *testing.T, s *nodecertServer) (clerk, officer string) {
	clerk, officer = "nc-csr-clerk", "nc-csr-officer"
	csrRule := rbacv1.PolicyRule{
		APIGroups: []string{"certificates.k8s.io"},
		Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"},
		Verbs:     []string{"get", "update"},
	}
	update := func(sub string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: sub, Verb: "update"}
	}
	signerAttrs := func(verb string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "signers", Name: nodecertSigner, Verb: verb}
	}
	s.grant(t, "csr-clerk", clerk, update("approval"), csrRule)
	s.grant(t, "csr-officer", officer, signerAttrs("sign"), csrRule, rbacv1.PolicyRule{
		APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
		ResourceNames: []string{nodecertSigner}, Verbs: []string{"approve", "sign"},
	})
	for _, verb := range []string{"approve", "sign"} {
		s.waitAuthorized(t, clerk, signerAttrs(verb), false)
	}
	return clerk, officer
}

// nodecertApproveCSR adds the Approved condition through c.
func nodecertApproveCSR(c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E", Message: "approved by the e2e tests",
	})
	_, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), csr.Name, csr, metav1.UpdateOptions{})
	return err
}

// CertificateApproval: approving a CSR (certificatesigningrequests/approval)
// also needs the approve verb on the CSR's signerName.
func nodecertCertificateApproval(t *testing.T, s *nodecertServer) {
	clerk, officer := nodecertCSRUsers(t, s)
	want := `user not permitted to approve requests with signerName "` + nodecertSigner + `"`
	s.judged(t, "approval by a user without approve on the signer",
		nodecertApproveCSR(s.as(t, clerk), s.mustCreateCSR(t, "nc-approve-clerk", nodecertSigner)), want)
	admittedNodecert(t, "approval by a user with approve on the signer",
		nodecertApproveCSR(s.as(t, officer), s.mustCreateCSR(t, "nc-approve-officer", nodecertSigner)))
	// The permission is per signerName.
	s.judged(t, "approval for another signer",
		nodecertApproveCSR(s.as(t, officer), s.mustCreateCSR(t, "nc-approve-other", "e2e.turnstile.dev/other")),
		`user not permitted to approve requests with signerName "e2e.turnstile.dev/other"`)
}

// CertificateSigning: setting status.certificate (certificatesigningrequests
// /status) also needs the sign verb on the CSR's signerName.
func nodecertCertificateSigning(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	clerk, officer := nodecertCSRUsers(t, s)
	certPEM, _, err := pki.Issue(&x509.Certificate{Subject: pkix.Name{CommonName: "e2e-signed"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(user, name string) error {
		csr := s.mustCreateCSR(t, name, nodecertSigner)
		if err := nodecertApproveCSR(s.admin, csr); err != nil {
			t.Fatalf("admin approving %s: %v", name, err)
		}
		csr, err := s.admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		csr.Status.Certificate = certPEM
		_, err = s.as(t, user).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		return err
	}
	s.judged(t, "issuing by a user without sign on the signer", sign(clerk, "nc-sign-clerk"),
		`user not permitted to sign requests with signerName "`+nodecertSigner+`"`)
	admittedNodecert(t, "issuing by a user with sign on the signer", sign(officer, "nc-sign-officer"))
	issued, err := s.admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "nc-sign-officer", metav1.GetOptions{})
	if err != nil || string(issued.Status.Certificate) != string(certPEM) {
		t.Errorf("CSR issued by the officer: %v, certificate stored: %v", err, err == nil && len(issued.Status.Certificate) > 0)
	}

	// Upstream also asks for sign when /status changes the conditions, for
	// example a signer reporting failure (the documentation names only
	// status.certificate).
	fail := func(user, name string) error {
		csr := s.mustCreateCSR(t, name, nodecertSigner)
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "E2E", Message: "signing failed",
		})
		_, err := s.as(t, user).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
		return err
	}
	s.judged(t, "marking a CSR Failed by a user without sign on the signer", fail(clerk, "nc-fail-clerk"),
		`user not permitted to sign requests with signerName "`+nodecertSigner+`"`)
	admittedNodecert(t, "marking a CSR Failed by a user with sign on the signer", fail(officer, "nc-fail-officer"))
}

// CertificateSubjectRestriction: a CSR for the
// kubernetes.io/kube-apiserver-client signer may not ask for the
// system:masters group, whoever creates it; other groups and other signers
// are not its business.
func nodecertCertificateSubjectRestriction(t *testing.T, s *nodecertServer) {
	const client = certificatesv1.KubeAPIServerClientSignerName
	want := "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
	_, err := s.createCSR(t, "nc-masters", client, "system:masters")
	s.judged(t, "kube-apiserver-client CSR for system:masters", err, want)
	_, err = s.createCSR(t, "nc-masters-among-others", client, "e2e-team", "system:masters")
	s.judged(t, "kube-apiserver-client CSR for system:masters among other groups", err, want)
	_, err = s.createCSR(t, "nc-team", client, "e2e-team")
	admittedNodecert(t, "kube-apiserver-client CSR for another group", err)
	_, err = s.createCSR(t, "nc-masters-own-signer", nodecertSigner, "system:masters")
	admittedNodecert(t, "system:masters CSR for another signer", err)
}

// ClusterTrustBundleAttest (upstream, undocumented; feature gate
// ClusterTrustBundle and certificates.k8s.io/v1beta1): a ClusterTrustBundle
// that names a signer needs the attest verb on that signerName.
func nodecertClusterTrustBundleAttest(t *testing.T, s *nodecertServer) {
	ctx := context.Background()
	writer, attester := "nc-ctb-writer", "nc-ctb-attester"
	bundleRule := rbacv1.PolicyRule{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"clustertrustbundles"}, Verbs: []string{"create", "update"}}
	create := authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "clustertrustbundles", Verb: "create"}
	attest := authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "signers", Name: nodecertSigner, Verb: "attest"}
	s.grant(t, "ctb-writer", writer, create, bundleRule)
	s.grant(t, "ctb-attester", attester, attest, bundleRule, rbacv1.PolicyRule{
		APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{nodecertSigner}, Verbs: []string{"attest"},
	})
	s.waitAuthorized(t, writer, attest, false)

	bundles := s.admin.CertificatesV1beta1().ClusterTrustBundles()
	createBundle := func(user, name, signer string) error {
		_, err := s.as(t, user).CertificatesV1beta1().ClusterTrustBundles().Create(ctx, &certificatesv1beta1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       certificatesv1beta1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: string(pki.CAPEM)},
		}, metav1.CreateOptions{})
		if err == nil {
			t.Cleanup(func() { _ = bundles.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
		return err
	}
	s.judged(t, "bundle for a signer by a user without attest", createBundle(writer, "e2e.turnstile.dev:nodecert:writer", nodecertSigner),
		`user not permitted to attest for signerName "`+nodecertSigner+`"`)
	admittedNodecert(t, "bundle for a signer by a user with attest", createBundle(attester, "e2e.turnstile.dev:nodecert:attester", nodecertSigner))
	admittedNodecert(t, "bundle without a signer", createBundle(writer, "nc-unsigned-bundle", ""))
}
