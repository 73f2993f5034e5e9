package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	urutauv1alpha1 "github.com/urutau-io/fleet/api/v1alpha1"
	"github.com/urutau-io/fleet/internal/credentials"
	"github.com/urutau-io/fleet/internal/inventory"
	"github.com/urutau-io/fleet/internal/localfleet"
	"github.com/urutau-io/fleet/internal/tenancy"
)

const nsCredentials = "faults-credentials"

// attack is one hostile kubeconfig Secret: a kubeconfig of member-a (the same API server) with one
// dangerous setting. Each would work if the hub honoured it (the credentials it carries or reads
// reach member-a as a cluster admin), so anything written through it would show in member-a
// under the field manager urutau-operator@<name>.
type attack struct {
	name   string
	reason credentials.Reason
	edit   func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)
}

var _ = Describe("hostile member credentials", Ordered, func() {
	It("refuses each one with its reason, writes nothing through it, and keeps serving the other members", func(ctx SpecContext) {
		for _, c := range []client.Client{hub, members[memberA], members[memberB]} {
			Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsCredentials,
				Labels: map[string]string{urutauv1alpha1.LabelFleetManaged: "true", tenancy.LabelPodSecurityEnforce: tenancy.PodSecurityRestricted}}}))).To(Succeed())
		}
		for _, m := range []string{memberA, memberB} {
			Expect(ensureSourceSecret(ctx, members[m], nsCredentials, m)).To(Succeed())
		}
		work := GinkgoT().TempDir()
		marker := filepath.Join(work, "exec-ran")
		// kwokctl's kubeconfig names its PKI files: the key and CA a hostile kubeconfig would point at.
		orig, err := clientcmd.LoadFromFile(lf.Members[0].KubeconfigPath)
		Expect(err).NotTo(HaveOccurred())
		origCtx := orig.Contexts[orig.CurrentContext]
		keyFile, caFile := orig.AuthInfos[origCtx.AuthInfo].ClientKey, orig.Clusters[origCtx.Cluster].CertificateAuthority
		Expect(keyFile).NotTo(BeEmpty(), "kwokctl's kubeconfig no longer names a client-key file")
		Expect(caFile).NotTo(BeEmpty(), "kwokctl's kubeconfig no longer names a certificate-authority file")
		tokenFile := filepath.Join(work, "admin-token")
		// planted is a credential a hostile kubeconfig carries where a careless message would echo
		// it (a password in the server URL, an exec argument): tenants read the pipeline's status
		// and Events, so it must never show there.
		planted := fmt.Sprintf("planted-%d", time.Now().UnixNano())
		Expect(os.WriteFile(tokenFile, []byte(adminToken(ctx, memberA)), 0o600)).To(Succeed())

		attacks := []attack{
			{"evil-exec", credentials.ReasonExec, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh",
					Args: []string{"-c", "touch " + marker + "; exit 1", "--token=" + planted}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			}},
			{"evil-token-file", credentials.ReasonFilePath, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ClientCertificateData, u.ClientKeyData, u.TokenFile = nil, nil, tokenFile
			}},
			{"evil-client-key", credentials.ReasonFilePath, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.ClientKeyData, u.ClientKey = nil, keyFile
			}},
			{"evil-ca-file", credentials.ReasonFilePath, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.CertificateAuthority = nil, caFile
			}},
			{"evil-proxy", credentials.ReasonProxy, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.ProxyURL = "http://127.0.0.1:3128"
			}},
			{"evil-impersonation", credentials.ReasonImpersonation, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
				u.Impersonate = "system:serviceaccount:default:faults-admin"
			}},
			{"evil-insecure", credentials.ReasonInsecureTLS, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
			}},
			{"evil-userinfo", credentials.ReasonNotHTTPS, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.Server = strings.Replace(c.Server, "https://", "https://faults:"+planted+"@", 1)
			}},
			{"evil-http", credentials.ReasonNotHTTPS, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
				c.Server = strings.Replace(c.Server, "https://", "http://", 1)
			}},
		}
		By("registering one member per attack, each a kubeconfig of member-a's API server")
		names := []string{memberA}
		for _, a := range attacks {
			s := inventory.NewKubeconfigSecret(localfleet.HubNamespace, a.name, hostileKubeconfig(a), nil, nil)
			Expect(hub.Create(ctx, s)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hub.Delete(ctx, s))).To(Succeed()) })
			names = append(names, a.name)
		}

		p := pipeline(nsCredentials, "hostile", 8600, names...)
		other := pipeline(nsCredentials, "bystander", 8601, memberB)
		createAll(ctx, []*urutauv1alpha1.CDCPipeline{p, other})
		By("member-a and member-b serve their pipelines")
		waitRunning(ctx, []*urutauv1alpha1.CDCPipeline{p}, 90*time.Second, memberA)
		waitRunning(ctx, []*urutauv1alpha1.CDCPipeline{other}, 90*time.Second, memberB)

		By("each hostile member: refused with its reason in an event, never applied to")
		Eventually(func(g Gomega) {
			var list eventsv1.EventList
			g.Expect(hub.List(ctx, &list, client.InNamespace(localfleet.HubNamespace))).To(Succeed())
			got := getPipeline(ctx, g, p)
			for _, a := range attacks {
				var notes []string
				for _, e := range list.Items {
					if e.Regarding.Name == a.name && e.Reason == inventory.EventCredentialsRefused {
						notes = append(notes, e.Note)
					}
				}
				g.Expect(notes).To(ContainElement(ContainSubstring("("+string(a.reason)+")")), "no refusal event for %s", a.name)
				cs, ok := clusterStatus(got, a.name)
				g.Expect(ok).To(BeTrue(), "no status for %s", a.name)
				g.Expect(cs.Phase).NotTo(BeElementOf(urutauv1alpha1.ClusterApplied, urutauv1alpha1.ClusterReady), "%s", a.name)
				g.Expect(cs.Message).To(ContainSubstring(`"` + a.name + `"`))
				g.Expect(cs.Message).NotTo(ContainSubstring(planted), "%s: a member credential in the pipeline's status", a.name)
			}
			var seen eventsv1.EventList
			g.Expect(hub.List(ctx, &seen, client.InNamespace(nsCredentials))).To(Succeed())
			for _, e := range append(list.Items, seen.Items...) {
				g.Expect(e.Note).NotTo(ContainSubstring(planted), "a member credential in Event %s/%s (%s)", e.Namespace, e.Name, e.Reason)
			}
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		got := &urutauv1alpha1.CDCPipeline{}
		Expect(hub.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		for _, a := range attacks {
			cs, _ := clusterStatus(got, a.name)
			logf("%s: %s: %s", a.name, cs.Phase, cs.Message)
		}

		By("nothing written through a hostile member, no program run; the hub still running")
		Consistently(func(g Gomega) {
			for _, phys := range []string{memberA, memberB} {
				for _, o := range objectsIn(ctx, g, phys, nsCredentials) {
					for _, m := range o.Managers {
						g.Expect(m).NotTo(ContainSubstring("@evil-"), "%s %s/%s in %s written through a hostile member", o.Kind, o.Namespace, o.Name, phys)
					}
				}
			}
			_, err := os.Stat(marker)
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran")
			g.Expect(lf.HubRunning()).To(BeTrue())
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		expectExactWorkload(ctx, []*urutauv1alpha1.CDCPipeline{p}, memberA, memberA)

		By("deleting: the healthy members are cleaned; the hostile ones, never reached, hold nothing to tombstone")
		Expect(hub.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		Expect(hub.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		uid := string(p.UID)
		deleteAll(ctx, []*urutauv1alpha1.CDCPipeline{p, other}, tombstoneGrace+60*time.Second)
		expectGone(ctx, uid, p.Namespace, p.Name, memberA, 30*time.Second)
		Eventually(func(g Gomega) {
			leases := &urutauv1alpha1.ReaderLeaseList{}
			g.Expect(hub.List(ctx, leases, client.InNamespace(localfleet.HubNamespace))).To(Succeed())
			for _, l := range leases.Items {
				g.Expect(l.Spec.Holder.UID).NotTo(BeElementOf(p.UID, other.UID), "lease %s of a deleted pipeline", l.Name)
				for _, e := range l.Spec.Members {
					g.Expect(e.Cluster).NotTo(HavePrefix("evil-"), "lease %s names a member the hub refused", l.Name)
				}
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		expectNoOrphans(ctx, memberA, memberB)
	}, SpecTimeout(6*time.Minute))
})

// hostileKubeconfig is member-a's kubeconfig, self-contained, with a's edit.
func hostileKubeconfig(a attack) []byte {
	GinkgoHelper()
	raw, err := kubeconfigTo(lf.Members[0].KubeconfigPath, "", "")
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(raw)
	Expect(err).NotTo(HaveOccurred())
	ctx := cfg.Contexts[cfg.CurrentContext]
	a.edit(cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo])
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// adminToken is a token of a cluster-admin ServiceAccount of member phys: the credentials a
// hostile tokenFile would hand the hub.
func adminToken(ctx context.Context, phys string) string {
	GinkgoHelper()
	c := members[phys]
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "faults-admin"}}
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, sa))).To(Succeed())
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "faults-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "faults-admin"}},
	}))).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(c.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// objectsIn lists every object of the kinds the hub writes in namespace ns of phys, with their
// field managers, whoever wrote them.
func objectsIn(ctx context.Context, g Gomega, phys, ns string) []hubObject {
	var out []hubObject
	for kind, list := range memberKinds() {
		g.Expect(members[phys].List(ctx, list, client.InNamespace(ns))).To(Succeed())
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			o := it.(client.Object)
			h := hubObject{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}
			for _, mf := range o.GetManagedFields() {
				if !slices.Contains(h.Managers, mf.Manager) {
					h.Managers = append(h.Managers, mf.Manager)
				}
			}
			out = append(out, h)
		}
	}
	return out
}
